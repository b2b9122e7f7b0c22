"""Kafka's consumer-group APIs over tidelog's coordinator: the classic protocol (JoinGroup,
SyncGroup, Heartbeat, LeaveGroup), and describing, listing, finding and deleting groups.
Committed offsets are tidelog.kafka.offsets'.

In Kafka one member of each group, the leader, runs the assignor and hands the assignment out
through SyncGroup. Here the coordinator runs the consumer assignors it has (range, roundrobin,
sticky, cooperative-sticky), in the assignment state machine, as it does for the HTTP API: for
them JoinGroup names a leader that is no member, every client acts as a follower and sends an
empty SyncGroup, and SyncGroup answers the assignment the state machine wrote. Any other
assignor (Kafka Streams', a client's own) and any group that is no consumer group (Kafka
Connect's workers) is assigned as in Kafka: the state machine elects a member leader once
everyone has joined, JoinGroup hands it every member's metadata, and its SyncGroup brings the
assignment the others wait for (tidelog.groups.joining).

JoinGroup and SyncGroup wait, as Kafka's do: JoinGroup until every member has joined the
generation (the join barrier), SyncGroup until its assignment is written. A member waiting in
them stays alive, as in Kafka.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from tidelog import runtime
from tidelog.errors import TidelogError
from tidelog.groups.consumer.coordinator import ConsumerCoordinator
from tidelog.groups.consumer.model import ConsumerGroup
from tidelog.groups.coordinator import Coordinator
from tidelog.groups.model import (
    Assignment,
    Group,
    GroupNotFoundError,
    IllegalGenerationError,
    InconsistentProtocolError,
    RebalanceInProgressError,
    State,
    empty_group,
    validate_group_id,
)
from tidelog.groups.stored import AnyGroup, ConsumerProtocolGroupError
from tidelog.kafka.classic_protocol import (
    NOT_CONSUMER,
    assignment_bytes,
    join_request,
    known_protocols,
    leader_members,
    partitions_in,
    same_protocol,
)
from tidelog.kafka.codec import NONE, Answer, Request, code, field, items
from tidelog.kafka.consumer_protocol import (
    PROTOCOL_TYPE,
    read_owned,
    write_subscription,
)
from tidelog.kafka.mixed_groups import ClassicMembers
from tidelog.kafka.node import Node, reachable
from tidelog.kafka.placement import client_zone, group_key, owner, txn_key, visible
from tidelog.kafka.registry import Brokers
from tidelog.kafka.waiting import Waiting, moved_on

_R = TypeVar("_R")

CLASSIC, CONSUMER = "classic", "consumer"  # ListGroups' group types (v5, KIP-848)
NOT_FOUND_SINCE = 6  # DescribeGroups answers GROUP_ID_NOT_FOUND from v6 (KIP-1043), Dead before
LEADER = "tidelog"
"""JoinGroup's leader: no member's id (each starts with a client id or a uuid), so no client
runs an assignor of its own."""
GROUP_KEY, TXN_KEY = 0, 1  # FindCoordinator's key types
JOIN_GRACE_MS = 2_500
"""How long a JoinGroup waits past its rebalance timeout. Kafka completes the join at the
timeout with whoever joined, and answers; here the state machine removes the laggards when it
next asks the barrier (every BARRIER_POLL_S), and a join answered REBALANCE_IN_PROGRESS in the
meantime is one Kafka never answers (franz-go surfaces it to the application). Clients wait
longer than this for the answer: librdkafka 3 s past the rebalance timeout, Java 5 s, franz-go
10 s."""


class GroupHandlers:
    """Every agent coordinates every group, as all of them read and write the same table.
    FindCoordinator sends each group to one of ``brokers`` all the same (a rendezvous hash),
    so that its members' requests gather on one agent."""

    def __init__(
        self,
        brokers: Brokers,
        *,
        coordinator: Callable[[], Coordinator] = runtime.coordinator,
        consumer_groups: Callable[[], ConsumerCoordinator] = runtime.consumer_groups,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._brokers = brokers
        self._coordinator = coordinator
        self._waiting = Waiting(coordinator, monotonic=monotonic, sleep=sleep)
        # A consumer group's classic members (ConsumerProtocolGroupError from the classic
        # coordinator says the group is one).
        self._classic_members = ClassicMembers(
            coordinator=consumer_groups, monotonic=monotonic, sleep=sleep
        )

    # FindCoordinator ---------------------------------------------------------------------

    def find_coordinator(self, request: Request) -> Answer:
        key_type = int(field(request.body, "key_type", GROUP_KEY))
        keys = field(request.body, "coordinator_keys")
        if keys is None:  # before v4: one key
            keys = [field(request.body, "key")]
        live = reachable(self._brokers.live(), request.listener)
        shown = visible(live, client_zone(request.client_id))
        if key_type in (GROUP_KEY, TXN_KEY):
            found = [self._coordinator_of(str(key), key_type, shown) for key in keys]
        else:  # share groups (2, KIP-932) are not served; Kafka without them answers so
            found = [_no_coordinator(str(key), "INVALID_REQUEST") for key in keys]
        first = found[0] if found else {}  # what versions before 4 answer, at the top level
        return {"throttle_time": 0, **first, "coordinators": found}

    def _coordinator_of(self, key: str, key_type: int, shown: Sequence[Node]) -> Answer:
        """Every agent coordinates every group and transactional id; one is named per key,
        the same for every client (tidelog.kafka.placement)."""
        here = owner(shown, group_key(key) if key_type == GROUP_KEY else txn_key(key))
        return {
            "key": key,
            "node_id": here.node_id,
            "host": here.host,
            "port": here.port,
            "error_code": NONE,
            "error_message": None,
        }

    # JoinGroup ---------------------------------------------------------------------------

    def join_group(self, request: Request) -> Answer:
        body = request.body
        member_id = str(body.member_id)
        try:
            join = join_request(request)
            coordinator = self._coordinator()
            if not member_id and join.group_instance_id is None and request.api_version >= 4:
                # KIP-394: a new member first gets its id, and joins with it.
                member_id = coordinator.reserve_member_id(str(body.group_id), join)
                return _join_error(MemberIdRequiredError(member_id), member_id)
            if member_id:
                joined = coordinator.rejoin(str(body.group_id), member_id, join)
            else:
                joined = coordinator.join(str(body.group_id), join)
            member_id = joined.member_id
            generation, protocol, group = self._waiting.until(
                str(body.group_id),
                member_id,
                _joined(member_id),
                join.rebalance_timeout_ms + JOIN_GRACE_MS,
            )
        except ConsumerProtocolGroupError:
            known = known_protocols(body)
            if join.protocol_type != PROTOCOL_TYPE or not known:
                return _join_error(InconsistentProtocolError(NOT_CONSUMER), member_id)
            assignors = [str(p.name) for p in known]
            owned = read_owned(known[0].metadata)
            mixed = replace(join, assignors=assignors, metadata=())
            return self._classic_members.join(request, mixed, owned, member_id)
        except TidelogError as exc:
            return _join_error(exc, member_id)
        return {
            "throttle_time": 0,
            "error_code": NONE,
            "generation_id": generation,
            "protocol_type": group.protocol_type,
            "protocol_name": protocol,
            "leader": group.leader or LEADER,
            "skip_assignment": False,
            "member_id": member_id,
            "members": leader_members(group, protocol) if group.leader == member_id else [],
        }

    # SyncGroup ---------------------------------------------------------------------------

    def sync_group(self, request: Request) -> Answer:
        name, member_id, generation = _member(request.body)
        sent = {str(a.member_id): bytes(a.assignment) for a in items(request.body.assignments)}

        def assigned(group: Group) -> tuple[Assignment, str] | None:
            if generation > group.generation:
                raise _illegal_generation(generation, group)
            if group.assignment is not None and group.assignment.generation == generation:
                # Written, even if the next generation has begun since (a cooperative
                # follow-up starts at once): the member must learn what it gives up first.
                return group.assignment, group.protocol_type
            if generation < group.generation:
                raise moved_on(group)
            return None

        try:
            coordinator = self._coordinator()
            view = coordinator.member_view(validate_group_id(name), member_id)
            # The leader's own SyncGroup answers from the assignment it completed: no read again.
            led = (
                coordinator.complete(name, member_id, generation, sent, partitions_in)
                if view.leader == member_id
                else None
            )
            found = (led, view.protocol_type) if led is not None else None
            assignment, protocol_type = (
                found
                or _found(view, member_id, assigned)
                or self._waiting.until(name, member_id, assigned)
            )
            same_protocol(request.body, protocol_type, assignment.protocol)
        except ConsumerProtocolGroupError:
            return self._classic_members.sync(request)
        except TidelogError as exc:
            return {"throttle_time": 0, "error_code": exc.kafka_error.code, "assignment": b""}
        return {
            "throttle_time": 0,
            "error_code": NONE,
            "protocol_type": protocol_type,
            "protocol_name": assignment.protocol,
            "assignment": assignment_bytes(assignment, member_id),
        }

    # Heartbeat ---------------------------------------------------------------------------

    def heartbeat(self, request: Request) -> Answer:
        name, member_id, generation = _member(request.body)
        try:
            beat = self._coordinator().heartbeat(name, member_id, generation, with_assignment=False)
            error = NONE if beat.generation == generation else code("REBALANCE_IN_PROGRESS")
        except RebalanceInProgressError as exc:
            # Once every member has joined, the assignment is being computed: a member that
            # joined this generation carries on (Kafka's CompletingRebalance).
            completing = exc.state == State.COMPLETING_REBALANCE and exc.generation == generation
            error = NONE if completing else exc.kafka_error.code
        except ConsumerProtocolGroupError:
            error = self._classic_members.heartbeat(request)
        except TidelogError as exc:
            error = exc.kafka_error.code
        return {"throttle_time": 0, "error_code": error}

    # LeaveGroup --------------------------------------------------------------------------

    def leave_group(self, request: Request) -> Answer:
        body = request.body
        name = str(body.group_id)
        if request.api_version < 3:  # one member, by id, whose error is the request's
            error = self._leave(name, str(body.member_id), None)
            member = {"member_id": str(body.member_id), "group_instance_id": None}
            return {
                "throttle_time": 0,
                "error_code": error,
                "members": [{**member, "error_code": error}],
            }
        left = [
            {
                "member_id": str(m.member_id),
                "group_instance_id": m.group_instance_id,
                "error_code": self._leave(name, str(m.member_id), m.group_instance_id),
            }
            for m in items(body.members)  # a null array (kio reads one) leaves no one
        ]
        return {"throttle_time": 0, "error_code": NONE, "members": left}

    def _leave(self, name: str, member_id: str, instance_id: str | None) -> int:
        coordinator = self._coordinator()
        try:
            if not member_id and instance_id is not None:  # a static member, by its instance
                found = coordinator.load(validate_group_id(name)).static_member(instance_id)
                if found is None:
                    return code("UNKNOWN_MEMBER_ID")
                member_id = found.member_id
            coordinator.leave(name, member_id)
        except ConsumerProtocolGroupError:
            return self._classic_members.leave(name, member_id, instance_id)
        except TidelogError as exc:
            return exc.kafka_error.code
        return NONE

    # DescribeGroups and ListGroups -------------------------------------------------------

    def describe_groups(self, request: Request) -> Answer:
        return {
            "throttle_time": 0,
            "groups": [
                self._describe(str(name), request.api_version)
                for name in items(request.body.groups)
            ],
        }

    def _describe(self, name: str, version: int) -> Answer:
        try:
            try:
                group = self._coordinator().describe(name)
            except ConsumerProtocolGroupError:  # Kafka: no classic group of that name
                group = replace(empty_group(name), state=State.DEAD)
                missing = f"Group {name} is not a classic group."
            else:
                missing = f"Group {name} not found."
            if not group.exists and version >= NOT_FOUND_SINCE:
                raise GroupNotFoundError(missing)
        except TidelogError as exc:
            state = State.DEAD.value if isinstance(exc, GroupNotFoundError) else ""
            return described_error(name, exc.kafka_error.code, exc.message, state)
        assignment = group.current_assignment() if group.state == State.STABLE else None
        patterns = any(m.topic_pattern is not None for m in group.members.values())
        names = sorted(self._coordinator().topic_sizes()) if patterns else []
        return {
            "error_code": NONE,
            "group_id": name,
            "group_state": group.state.value,
            "protocol_type": group.protocol_type if group.exists else "",
            "protocol_data": group.protocol or "",
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "member_metadata": (
                        m.metadata_of(group.protocol)
                        if m.metadata
                        else write_subscription(m.topics or [t for t in names if m.subscribes(t)])
                    ),
                    "member_assignment": assignment_bytes(assignment, m.member_id),
                }
                for m in sorted(group.members.values(), key=lambda m: m.member_id)
            ],
            "authorized_operations": -(2**31),
        }

    def list_groups(self, request: Request) -> Answer:
        states = {s.lower() for s in items(field(request.body, "states_filter"))}
        types = {t.lower() for t in items(field(request.body, "types_filter"))}
        listed = [
            {
                "group_id": group.name,
                "protocol_type": _protocol_type(group) if group.exists else "",
                "group_state": group.state.value,
                "group_type": _type(group),
            }
            for group in self._coordinator().groups()
            if (not states or group.state.value.lower() in states)
            and (not types or _type(group) in types)
        ]
        return {"throttle_time": 0, "error_code": NONE, "groups": listed}

    # DeleteGroups ------------------------------------------------------------------------

    def delete_groups(self, request: Request) -> Answer:
        """Each group deleted with its offsets, or its own error: NON_EMPTY_GROUP while it has
        members, GROUP_ID_NOT_FOUND when it never was."""
        results = []
        for name in items(request.body.groups_names):
            try:
                self._coordinator().delete(str(name))
                error = NONE
            except TidelogError as exc:
                error = exc.kafka_error.code
            results.append({"group_id": str(name), "error_code": error})
        return {"throttle_time": 0, "results": results}


def _type(group: AnyGroup) -> str:
    return CONSUMER if isinstance(group, ConsumerGroup) else CLASSIC


def _protocol_type(group: AnyGroup) -> str:
    return PROTOCOL_TYPE if isinstance(group, ConsumerGroup) else group.protocol_type


def _no_coordinator(key: str, error: str) -> Answer:
    return {
        "key": key,
        "node_id": -1,
        "host": "",
        "port": -1,
        "error_code": code(error),
        "error_message": f"no coordinator of this key type for {key!r}",
    }


def _member(body: Any) -> tuple[str, str, int]:
    """Group, member and generation, as SyncGroup and Heartbeat name them."""
    return str(body.group_id), str(body.member_id), int(body.generation_id)


def _join_error(error: TidelogError, member_id: str) -> Answer:
    return {
        "throttle_time": 0,
        "error_code": error.kafka_error.code,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": "",  # Kafka's for an error: the field is not nullable before v7
        "leader": "",
        "member_id": member_id,
        "members": [],
    }


def _found(view: Group, member_id: str, assigned: Callable[[Group], _R | None]) -> _R | None:
    """What the member's view shows of its assignment, if it shows it: a view is read by key,
    each item as it was when read, not the whole group at one moment, so only an assignment
    found is taken from it; anything else is for a read of the whole group to say."""
    if member_id not in view.members:
        return None
    try:
        return assigned(view)
    except TidelogError:
        return None


def _joined(member_id: str) -> Callable[[Group], tuple[int, str | None, Group] | None]:
    """JoinGroup's answer, once the generation the member has joined is past the barrier:
    being assigned, or assigned (even if the next one has begun since), with the group as
    read. A generation superseded before its assignment carries the member on to the next,
    which it waits for."""

    def joined(group: Group) -> tuple[int, str | None, Group] | None:
        generation = group.members[member_id].joined_generation
        if group.assignment is not None and group.assignment.generation == generation:
            return generation, group.assignment.protocol, group
        if group.generation == generation and group.state != State.PREPARING_REBALANCE:
            return generation, group.protocol, group
        return None

    return joined


class MemberIdRequiredError(TidelogError):
    default_kafka_error = "MEMBER_ID_REQUIRED"

    def __init__(self, member_id: str) -> None:
        super().__init__(f"join again as member {member_id}")


def _illegal_generation(generation: int, group: Group) -> TidelogError:
    return IllegalGenerationError(
        f"generation {generation} is ahead of the group's {group.generation}"
    )


def described_error(name: str, error: int, message: str | None, state: str = "") -> Answer:
    """DescribeGroups' entry for a group it cannot describe."""
    return {
        "error_code": error,
        "error_message": message,
        **{"group_id": name, "group_state": state, "protocol_type": "", "protocol_data": ""},
        "members": [],
        "authorized_operations": -(2**31),
    }
