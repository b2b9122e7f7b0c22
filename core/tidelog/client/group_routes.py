"""A group member's calls to the group routes: join, heartbeat, leave. The answers come back
as ``tidelog.client.membership`` reads them; what the consumer does with them is its own."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx2

from tidelog.client.consumer_config import ConsumerConfig
from tidelog.client.http import Http
from tidelog.client.membership import Rebalancing, Stable, TopicPartitionKey
from tidelog.errors import RetriableError, TidelogError

log = logging.getLogger(__name__)


class GroupRoutes:
    def __init__(self, http: Http, config: ConsumerConfig) -> None:
        self._http = http
        self._config = config
        self._members = f"/v1/groups/{quote(config.group_id, safe='')}/members"

    def join(self, topics: Sequence[str], pattern: str | None) -> Any:
        """Join with these topics, or one pattern over topic names: the member id and the
        generation joined."""
        body: dict[str, Any] = {
            "assignors": self._config.assignors(),
            "session_timeout_ms": self._config.session_timeout_ms,
            "rebalance_timeout_ms": self._config.max_poll_interval_ms,
        }
        if pattern is not None:
            body["topic_pattern"] = pattern
        else:
            body["topics"] = list(topics)
        if self._config.group_instance_id:
            body["group_instance_id"] = self._config.group_instance_id
        return self._http.post(self._members, body)

    def heartbeat(self, member: str, generation: int) -> Rebalancing | Stable | TidelogError | None:
        """What the group says of this member now; an error that puts it out of the group; or
        None when the group could not be asked (the next heartbeat asks again)."""
        try:
            body = self._http.post(
                f"{self._members}/{quote(member)}/heartbeat", {"generation_id": generation}
            )
        except (RetriableError, httpx2.TransportError) as exc:
            log.warning("heartbeat to group %s: %s", self._config.group_id, exc)
            return None
        except TidelogError as exc:
            if exc.kafka_error.name != "REBALANCE_IN_PROGRESS":
                return exc
            details = exc.details
            return Rebalancing(
                int(details["generation_id"]),
                _keys(details["assignment"]),
                int(details.get("assignment_generation_id", -1)),
            )
        return Stable(int(body["generation_id"]), _keys(body["assignment"]))

    def leave(self, member: str) -> None:
        """Leave, if the group can be told (else the member's session runs out)."""
        try:
            self._http.request("DELETE", f"{self._members}/{quote(member)}")
        except (TidelogError, httpx2.TransportError) as exc:
            log.warning("leaving group %s: %s", self._config.group_id, exc)


def _keys(assignment: Sequence[Mapping[str, Any]]) -> frozenset[TopicPartitionKey]:
    return frozenset((a["topic"], p) for a in assignment for p in a["partitions"])
