"""KIP-848's consumer group protocol on the agent: ConsumerGroupHeartbeat and
ConsumerGroupDescribe over tidelog.groups.consumer. The coordinator assigns (the assignment
state machine) and reconciles each member at its heartbeats; clients run no assignor.

A heartbeat that moves the group epoch (a member joining, or changing its subscription) waits a
bounded time for the state machine's target of that epoch and is answered reconciled to it, as
Kafka's coordinator answers the first heartbeat with the assignment it computed at once.
Without the wait a new member would get its partitions only at its next heartbeat, an interval
later (3-5 s), where a classic member's JoinGroup waits for its assignment. The wait stays
under half the group's heartbeat interval: librdkafka gives a heartbeat no longer than that
interval before it times the request out.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tidelog import runtime
from tidelog.errors import TidelogError
from tidelog.groups.consumer.coordinator import ConsumerCoordinator
from tidelog.groups.consumer.heartbeat import Heartbeat, Outcome, owned_partitions
from tidelog.groups.consumer.items import by_topic
from tidelog.groups.consumer.model import JOIN_EPOCH, ConsumerGroup, Member, Partitions
from tidelog.groups.consumer.target import DEFAULT_ASSIGNOR
from tidelog.groups.model import GroupNotFoundError, validate_group_id
from tidelog.kafka.codec import NONE, Answer, Request, field, items

CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1  # ConsumerGroupDescribe's member type (v1)
MAX_TARGET_WAIT_MS = 2_500  # a heartbeat's longest wait for its epoch's target (module docs)
TARGET_POLL_S = 0.05  # one read of the target item each time
UNKNOWN_OPERATIONS = -(2**31)


class ConsumerGroupHandlers:
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

    def heartbeat(self, request: Request) -> Answer:
        body = request.body
        member_id = str(body.member_id)
        if not member_id and request.api_version == 0 and int(body.member_epoch) == 0:
            member_id = str(uuid.uuid4())  # v0: the coordinator names new members (v1: they do)
        owned = body.topic_partitions
        rebalance = field(body, "rebalance_timeout")
        names = body.subscribed_topic_names
        beat = Heartbeat(
            member_id=member_id,
            epoch=int(body.member_epoch),
            instance_id=body.instance_id,
            rack_id=body.rack_id,
            rebalance_timeout_ms=-1 if rebalance is None else _ms(rebalance),
            topics=None if names is None else tuple(str(n) for n in names),
            pattern=field(body, "subscribed_topic_regex"),
            assignor=body.server_assignor,
            owned=None
            if owned is None
            else owned_partitions([(str(tp.topic_id), tp.partitions) for tp in owned]),
            client_id=request.client_id or "",
            client_host=request.client_host,
        )
        coordinator = self._coordinator()
        try:
            outcome = coordinator.heartbeat(str(body.group_id), beat)
            if _awaits_target(beat, outcome):
                outcome = self._reconciled(coordinator, beat, outcome)
        except TidelogError as exc:
            return {
                "throttle_time": 0,
                "error_code": exc.kafka_error.code,
                "error_message": exc.message,
                "member_id": None,
                "member_epoch": 0,
                "heartbeat_interval": 0,
                "assignment": None,
            }
        assignment = None
        if outcome.assignment is not None:
            assignment = {"topic_partitions": _topic_partitions(outcome.assignment, {})}
        return {
            "throttle_time": 0,
            "error_code": NONE,
            "error_message": None,
            "member_id": outcome.member_id,
            "member_epoch": outcome.epoch,
            # A member that left (epoch -1) is told of no next heartbeat, as Kafka tells it.
            "heartbeat_interval": coordinator.config_of(outcome.group.name).heartbeat_interval_ms
            if outcome.epoch >= 0
            else 0,
            "assignment": assignment,
        }

    def _reconciled(
        self, coordinator: ConsumerCoordinator, beat: Heartbeat, outcome: Outcome
    ) -> Outcome:
        """The member reconciled to the target of the epoch its heartbeat moved the group to,
        once the state machine has written it; the outcome as it was if that takes longer
        than the wait allows."""
        name, epoch = outcome.group.name, outcome.group.epoch
        wait_ms = min(MAX_TARGET_WAIT_MS, coordinator.config_of(name).heartbeat_interval_ms // 2)
        deadline = self._monotonic() + wait_ms / 1000
        while self._monotonic() < deadline:
            self._sleep(TARGET_POLL_S)
            if coordinator.target_epoch(name) >= epoch:
                again = coordinator.heartbeat(
                    name,
                    Heartbeat(
                        member_id=outcome.member_id,
                        epoch=outcome.epoch,
                        instance_id=beat.instance_id,
                        owned=beat.owned,
                        client_id=beat.client_id,
                        client_host=beat.client_host,
                    ),
                )
                # Its first answer was never sent: an assignment it carried still must be.
                if again.assignment is None:
                    again = replace(again, assignment=outcome.assignment)
                return again
        return outcome

    def describe(self, request: Request) -> Answer:
        coordinator = self._coordinator()
        names = {topic_id: name for name, (topic_id, _) in coordinator.topic_map().items()}
        return {
            "throttle_time": 0,
            "groups": [
                self._describe(coordinator, str(group_id), names)
                for group_id in items(request.body.group_ids)
            ],
        }

    @staticmethod
    def _describe(coordinator: ConsumerCoordinator, name: str, names: dict[str, str]) -> Answer:
        try:
            group = coordinator.describe(validate_group_id(name))
            if group is None:
                raise GroupNotFoundError(f"Group {name} is not a consumer group.")
        except TidelogError as exc:
            return described_error(name, exc.kafka_error.code, exc.message)
        return {
            "error_code": NONE,
            "error_message": None,
            "group_id": name,
            "group_state": group.state.value,
            "group_epoch": group.epoch,
            "assignment_epoch": group.target.epoch,
            "assignor_name": group.target.assignor or group.assignor(DEFAULT_ASSIGNOR),
            "members": [
                _member(group, m, names)
                for m in sorted(group.members.values(), key=lambda m: m.member_id)
            ],
            "authorized_operations": UNKNOWN_OPERATIONS,
        }


def _awaits_target(beat: Heartbeat, outcome: Outcome) -> bool:
    """Did this heartbeat move the group to an epoch whose target is not written yet, leaving
    the member in it waiting for its partitions?"""
    moved = beat.epoch == JOIN_EPOCH or beat.topics is not None or beat.pattern is not None
    group = outcome.group
    return moved and outcome.epoch >= 0 and group.target.epoch < group.epoch


def _member(group: ConsumerGroup, member: Member, names: dict[str, str]) -> Answer:
    return {
        "member_id": member.member_id,
        "instance_id": member.instance_id,
        "rack_id": member.rack_id,
        "member_epoch": member.epoch,
        "client_id": member.client_id,
        "client_host": member.client_host,
        "subscribed_topic_names": list(member.topics),
        "subscribed_topic_regex": member.pattern,
        "assignment": {"topic_partitions": _topic_partitions(member.assigned, names)},
        "target_assignment": {
            "topic_partitions": _topic_partitions(group.target.of(member.member_id), names)
        },
        "member_type": CLASSIC_MEMBER if member.is_classic else CONSUMER_MEMBER,
    }


def _topic_partitions(partitions: Partitions, names: dict[str, str]) -> list[Answer]:
    """By topic id (and name, where the answer has one): a topic deleted since has none."""
    return [
        {"topic_id": uuid.UUID(topic_id), "topic_name": names.get(topic_id, ""), "partitions": ps}
        for topic_id, ps in by_topic(partitions).items()
    ]


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000)


def described_error(name: str, error: int, message: str | None) -> Answer:
    """ConsumerGroupDescribe's entry for a group it cannot describe."""
    return {
        "error_code": error,
        "error_message": message,
        "group_id": name,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
        "authorized_operations": UNKNOWN_OPERATIONS,
    }
