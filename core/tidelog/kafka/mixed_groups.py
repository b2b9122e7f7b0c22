"""Classic members of a consumer group: JoinGroup, SyncGroup, Heartbeat and LeaveGroup from a
client of the classic protocol, for a group of KIP-848's (tidelog.groups.consumer.classic).

tidelog.kafka.groups sends a request here when the group it names is a consumer group.

Kafka computes the target assignment inside the JoinGroup. Here the state machine computes
it, so a JoinGroup that moves the group epoch waits, up to the member's rebalance timeout, for
the target of that epoch, then reconciles the member to it. That way the member's first
SyncGroup gets its partitions, rather than nothing and an at-once REBALANCE_IN_PROGRESS.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from tidelog import runtime
from tidelog.assignors import TopicPartition
from tidelog.errors import TidelogError
from tidelog.groups.consumer.classic import ClassicJoin
from tidelog.groups.consumer.coordinator import ConsumerCoordinator
from tidelog.groups.consumer.heartbeat import Outcome
from tidelog.groups.model import JoinRequest
from tidelog.kafka.codec import NONE, Answer, Request, code, field
from tidelog.kafka.consumer_protocol import PROTOCOL_TYPE, write_assignment

POLL_S = 0.2
"""How often a JoinGroup waiting for its target reads the group."""


class ClassicMembers:
    def __init__(
        self,
        *,
        coordinator: Callable[[], ConsumerCoordinator] = runtime.consumer_groups,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._coordinator = coordinator
        self._monotonic = monotonic
        self._sleep = sleep

    def join(
        self,
        request: Request,
        join: JoinRequest,
        owned: tuple[TopicPartition, ...],
        member_id: str,
    ) -> Answer:
        """``join`` as tidelog.kafka.groups read it; ``owned``, the partitions the member's
        subscription says it still owns (by topic name)."""
        name = str(request.body.group_id)
        if not member_id:
            member_id = str(uuid.uuid4())  # a consumer group's members are named by uuid
            if join.group_instance_id is None and request.api_version >= 4:
                return _join_answer(code("MEMBER_ID_REQUIRED"), member_id)
        classic = ClassicJoin(
            member_id=member_id,
            instance_id=join.group_instance_id,
            session_timeout_ms=join.session_timeout_ms,
            rebalance_timeout_ms=join.rebalance_timeout_ms,
            protocols=tuple(join.assignors),
            topics=tuple(join.topics),
            owned=owned,
            client_id=join.client_id,
            client_host=join.client_host,
        )
        try:
            outcome = self._joined(name, classic)
        except TidelogError as exc:
            return _join_answer(exc.kafka_error.code, member_id)
        return {
            **_join_answer(NONE, outcome.member_id),
            "generation_id": outcome.epoch,
            "protocol_type": PROTOCOL_TYPE,
            "protocol_name": join.assignors[0],
        }

    def _joined(self, name: str, request: ClassicJoin) -> Outcome:
        """The member joined, once the target of the epoch it found is there (or its
        rebalance timeout has passed): joined again then, to be reconciled to it. Its session
        is kept alive meanwhile, a third of it apart, as a waiting JoinGroup keeps it."""
        coordinator = self._coordinator()
        outcome = coordinator.classic_join(name, request)
        wanted = outcome.group.epoch
        deadline = self._monotonic() + request.rebalance_timeout_ms / 1000
        touched = self._monotonic()
        while outcome.group.target.epoch < wanted and self._monotonic() < deadline:
            self._sleep(POLL_S)
            group = coordinator.describe(name)
            if group is not None and group.target.epoch >= wanted:
                break
            if self._monotonic() - touched >= request.session_timeout_ms / 3000:
                outcome = coordinator.classic_join(name, request)
                touched = self._monotonic()
        else:
            return outcome
        return coordinator.classic_join(name, request)

    def sync(self, request: Request) -> Answer:
        body = request.body
        try:
            assigned = self._coordinator().classic_sync(
                str(body.group_id),
                str(body.member_id),
                field(body, "group_instance_id"),
                int(body.generation_id),
            )
        except TidelogError as exc:
            return {"throttle_time": 0, "error_code": exc.kafka_error.code, "assignment": b""}
        return {
            "throttle_time": 0,
            "error_code": NONE,
            "protocol_type": PROTOCOL_TYPE,
            "protocol_name": field(body, "protocol_name"),
            "assignment": write_assignment(assigned),
        }

    def heartbeat(self, request: Request) -> int:
        body = request.body
        try:
            rejoin = self._coordinator().classic_heartbeat(
                str(body.group_id),
                str(body.member_id),
                field(body, "group_instance_id"),
                int(body.generation_id),
            )
        except TidelogError as exc:
            return exc.kafka_error.code
        return code("REBALANCE_IN_PROGRESS") if rejoin else NONE

    def leave(self, name: str, member_id: str, instance_id: str | None) -> int:
        try:
            self._coordinator().classic_leave(name, member_id, instance_id)
        except TidelogError as exc:
            return exc.kafka_error.code
        return NONE


def _join_answer(error: int, member_id: str) -> Answer:
    return {
        "throttle_time": 0,
        "error_code": error,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": "",
        "leader": "",  # Kafka's for a consumer group: nobody runs an assignor
        "skip_assignment": False,
        "member_id": member_id,
        "members": [],
    }
