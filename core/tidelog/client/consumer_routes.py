"""A member's calls in KIP-848's consumer protocol (``group.protocol=consumer``), over
``POST /v1/groups/{group}/heartbeat``, in the shape of ``tidelog.client.group_routes``: so the
consumer runs one loop for both protocols.

Every heartbeat says what the member owns; the coordinator reconciles it to the target and
answers its epoch, and its assignment when that changed. Each answer reads as ``Stable`` at the
member's epoch: ``tidelog.client.membership`` then revokes what is no longer assigned and
assigns what is new, and commits carry that epoch. There is no barrier to join: the member never
sees ``Rebalancing``. Until the target of the epoch it joined at is computed, the member has no
answer at all (not an empty assignment), and heartbeats often, as while a group rebalances.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx2

from tidelog.client.consumer_config import ConsumerConfig
from tidelog.client.http import Http
from tidelog.client.membership import Stable, TopicPartitionKey
from tidelog.errors import RetriableError, TidelogError

log = logging.getLogger(__name__)

LEAVE, STATIC_LEAVE = -1, -2  # the epochs that leave: for good, or for one session (static)
ASSIGNING = "assigning"  # the state machine is computing the target of the member's epoch


class ConsumerProtocolRoutes:
    def __init__(
        self, http: Http, config: ConsumerConfig, owned: Callable[[], frozenset[TopicPartitionKey]]
    ) -> None:
        self._http = http
        self._config = config
        self._owned = owned
        self._path = f"/v1/groups/{quote(config.group_id, safe='')}/heartbeat"
        self._assignment: frozenset[TopicPartitionKey] = frozenset()
        # The epoch of the last answer: heartbeats carry it at once (Kafka's consumer updates
        # it on its heartbeat thread), though poll acts on the answer later.
        self._epoch: int | None = None

    def join(self, topics: Sequence[str], pattern: str | None) -> Any:
        """The first heartbeat (epoch 0): the member id and its epoch, as ``generation_id``."""
        body: dict[str, Any] = {
            "member_epoch": 0,
            "rebalance_timeout_ms": self._config.max_poll_interval_ms,
            "owned": [],
        }
        if pattern is not None:
            body["topic_pattern"] = pattern
        else:
            body["topics"] = list(topics)
        if self._config.group_instance_id:
            body["group_instance_id"] = self._config.group_instance_id
        if self._config.group_remote_assignor:
            body["assignor"] = self._config.group_remote_assignor
        answer = self._http.post(self._path, body)
        self._assignment = _keys(answer["assignment"] or ())
        self._epoch = int(answer["member_epoch"])
        return {"member_id": answer["member_id"], "generation_id": self._epoch}

    def heartbeat(self, member: str, epoch: int) -> Stable | TidelogError | None:
        """The member's epoch and partitions now; an error that puts it out of the group
        (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: it joins again); or None when the group
        could not be asked (the next heartbeat asks again)."""
        owned = sorted(self._owned())
        body: dict[str, Any] = {
            "member_id": member,
            "member_epoch": max(epoch, self._epoch or 0),
            "owned": [{"topic": t, "partitions": [p]} for t, p in owned],
        }
        if self._config.group_instance_id:
            body["group_instance_id"] = self._config.group_instance_id
        try:
            answer = self._http.post(self._path, body)
        except (RetriableError, httpx2.TransportError) as exc:
            log.warning("heartbeat to group %s: %s", self._config.group_id, exc)
            return None
        except TidelogError as exc:
            self._epoch = None  # out of the group: the next join starts anew
            return exc
        if answer["assignment"] is not None:
            self._assignment = _keys(answer["assignment"])
        self._epoch = int(answer["member_epoch"])
        if answer["state"] == ASSIGNING:
            return None  # no assignment yet, not even an empty one: ask again soon
        return Stable(self._epoch, self._assignment)

    def leave(self, member: str, epoch: int = LEAVE) -> None:
        """Leave (a static member for one session only), if the group can be told."""
        body: dict[str, Any] = {"member_id": member, "member_epoch": epoch}
        if self._config.group_instance_id:
            body["group_instance_id"] = self._config.group_instance_id
            body["member_epoch"] = STATIC_LEAVE
        try:
            self._http.post(self._path, body)
        except (TidelogError, httpx2.TransportError) as exc:
            log.warning("leaving group %s: %s", self._config.group_id, exc)


def _keys(assignment: Sequence[Mapping[str, Any]]) -> frozenset[TopicPartitionKey]:
    return frozenset((a["topic"], p) for a in assignment for p in a["partitions"])
