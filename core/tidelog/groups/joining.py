"""Who joins a group, and who assigns its partitions: a member as its JoinGroup describes it,
checked; the group's protocol type, which every member shares; and the member that runs the
assignor where tidelog does not (Kafka's classic leader). Pure: values in, values out."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from tidelog.assignors import ASSIGNORS, TopicPartition
from tidelog.errors import InvalidRequestError
from tidelog.groups.model import (
    CONSUMER_PROTOCOL_TYPE,
    Assignment,
    Group,
    IllegalGenerationError,
    InconsistentProtocolError,
    JoinRequest,
    Limits,
    Member,
    RebalanceInProgressError,
    State,
    UnknownAssignorError,
    known_member,
)


def requested_member(
    member_id: str,
    request: JoinRequest,
    now_ms: int,
    limits: Limits,
    *,
    joined_generation: int = 0,
    known: Member | None = None,
) -> Member:
    """The member ``request`` describes (checked: InvalidRequestError and kin); a ``known``
    member keeps its instance id, and its client's where the request has none."""
    return new_member(
        member_id,
        topics=request.topics,
        topic_pattern=request.topic_pattern,
        assignors=request.assignors,
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        group_instance_id=request.group_instance_id if known is None else known.group_instance_id,
        now_ms=now_ms,
        limits=limits,
        joined_generation=joined_generation,
        client_id=request.client_id or (known.client_id if known else ""),
        client_host=request.client_host or (known.client_host if known else ""),
        protocol_type=request.protocol_type,
        metadata=request.metadata,
    )


def new_member(
    member_id: str,
    *,
    topics: Sequence[str],
    topic_pattern: str | None,
    assignors: Sequence[str],
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    group_instance_id: str | None,
    now_ms: int,
    limits: Limits,
    joined_generation: int = 0,
    client_id: str = "",
    client_host: str = "",
    protocol_type: str = CONSUMER_PROTOCOL_TYPE,
    metadata: Sequence[bytes] = (),
) -> Member:
    """A member as a request describes it, checked. Over Kafka, a member may name assignors
    tidelog does not run, with their ``metadata``: one of the group's members then runs the
    assignor, as in Kafka (leader_assigns), and its metadata is kept for it."""
    if topics and topic_pattern is not None:
        raise InvalidRequestError("give either topics or topic_pattern, not both")
    if topic_pattern is not None:
        try:
            re.compile(topic_pattern)
        except re.error as exc:
            raise InvalidRequestError(f"topic_pattern is not a regular expression: {exc}") from exc
    if not assignors or not all(assignors):
        raise UnknownAssignorError("name at least one assignor, none of them empty")
    if metadata and len(metadata) != len(assignors):
        raise InvalidRequestError("give one metadata for each assignor")
    unknown = [a for a in assignors if a not in ASSIGNORS]
    if unknown and not metadata:
        raise UnknownAssignorError(
            f"unknown assignors {unknown}; tidelog has {', '.join(ASSIGNORS)}"
        )
    if not limits.min_session_timeout_ms <= session_timeout_ms <= limits.max_session_timeout_ms:
        raise InvalidRequestError(
            f"session_timeout_ms must be within [{limits.min_session_timeout_ms}, "
            f"{limits.max_session_timeout_ms}]",
            kafka_error="INVALID_SESSION_TIMEOUT",
        )
    if rebalance_timeout_ms < 1:
        raise InvalidRequestError("rebalance_timeout_ms must be positive")
    if group_instance_id is not None and not group_instance_id:
        raise InvalidRequestError("group_instance_id, when given, must not be empty")
    return Member(
        member_id=member_id,
        topics=tuple(dict.fromkeys(topics)),
        topic_pattern=topic_pattern,
        assignors=tuple(dict.fromkeys(assignors)),  # the first of a name counts, as in Kafka
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
        heartbeat_ms=now_ms,
        group_instance_id=group_instance_id,
        joined_generation=joined_generation,
        client_id=client_id,
        client_host=client_host,
        metadata=(
            _first_of_each(assignors, metadata)
            if metadata and (unknown or protocol_type != CONSUMER_PROTOCOL_TYPE)
            else ()
        ),
    )


def _first_of_each(assignors: Sequence[str], metadata: Sequence[bytes]) -> tuple[bytes, ...]:
    """The metadata of each assignor's first mention (dict.fromkeys keeps the first)."""
    firsts: dict[str, bytes] = {}
    for assignor, sent in zip(assignors, metadata, strict=True):
        firsts.setdefault(assignor, sent)
    return tuple(firsts.values())


def leader_assigns(group: Group) -> bool:
    """Does one of the group's members run its assignor, as every classic group does in Kafka?
    tidelog's state machine runs the consumer assignors it has (range, roundrobin, sticky,
    cooperative-sticky); any other, Kafka Streams' or a client's own, and any group that is no
    consumer group (Kafka Connect's workers), is run by the leader its members elect through
    JoinGroup, and handed out through SyncGroup."""
    return group.protocol_type != CONSUMER_PROTOCOL_TYPE or (
        group.protocol is not None and group.protocol not in ASSIGNORS
    )


def elect_leader(group: Group) -> str | None:
    """The member that runs the assignor, where one does: the leader so far while it stays a
    member (as Kafka keeps it), else the first member by id."""
    if not leader_assigns(group) or not group.members:
        return None
    return group.leader if group.leader in group.members else min(group.members)


def same_protocol_type(group: Group, protocol_type: str) -> None:
    """Kafka refuses a member whose protocol type is not the group's (while it has members)."""
    if group.members and group.protocol_type != protocol_type:
        raise InconsistentProtocolError(
            f"group {group.name} is a group of protocol type {group.protocol_type!r}, "
            f"not {protocol_type!r}"
        )


def led_assignment(
    group: Group,
    member_id: str,
    generation: int,
    sent: Mapping[str, bytes],
    *,
    partitions_of: Callable[[bytes], Sequence[TopicPartition]],
    now_ms: int,
) -> Group | None:
    """The group once its leader's SyncGroup brought what it ``sent``: each member's
    assignment as its client encoded it (a member it left out gets none), the partitions in
    it read by ``partitions_of`` where the group is a consumer group. ``None``: nothing to
    change (a follower's SyncGroup, or the generation is Stable already). Kafka's errors for
    a member the group lacks, another generation, or a rebalance gathering its members."""
    member = known_member(group, member_id)
    if generation != group.generation:
        raise IllegalGenerationError(
            f"generation {generation} is not the group's {group.generation}"
        )
    if group.state == State.PREPARING_REBALANCE:
        raise RebalanceInProgressError(
            f"group {group.name} is rebalancing to generation {group.generation}",
            generation=group.generation,
            state=group.state.value,
        )
    if group.state != State.COMPLETING_REBALANCE or member.member_id != group.leader:
        return None
    handed = {m: bytes(sent.get(m, b"")) for m in group.members}
    consumer = group.protocol_type == CONSUMER_PROTOCOL_TYPE
    assignment = Assignment(
        generation,
        group.protocol,
        {m: tuple(partitions_of(blob)) for m, blob in handed.items()} if consumer else {},
        {},
        handed,
    )
    return replace(group, state=State.STABLE, assignment=assignment, stable_ms=now_ms)
