"""What the classic group protocol's requests say and its answers hold, where they are more than
fields: a JoinGroup read into a JoinRequest, what JoinGroup hands a leader, the assignment
SyncGroup and DescribeGroups answer, and SyncGroup's protocol check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tidelog.assignors import ASSIGNORS, TopicPartition
from tidelog.errors import InvalidRequestError
from tidelog.groups.model import Assignment, Group, InconsistentProtocolError, JoinRequest
from tidelog.kafka.codec import Answer, Request, field, items
from tidelog.kafka.consumer_protocol import (
    PROTOCOL_TYPE,
    read_assignment,
    read_subscription,
    write_assignment,
)


def leader_members(group: Group, protocol: str | None) -> list[Answer]:
    """What JoinGroup hands the leader: every member with its metadata for the protocol."""
    return [
        {
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "metadata": m.metadata_of(protocol),
        }
        for m in sorted(group.members.values(), key=lambda m: m.member_id)
    ]


def assignment_bytes(assignment: Assignment | None, member_id: str) -> bytes:
    """A member's assignment as DescribeGroups and SyncGroup answer it: as its leader sent
    it, or as the state machine's assignor computed it."""
    if assignment is None:
        return b""
    if assignment.sent:
        return assignment.sent.get(member_id, b"")
    return write_assignment(assignment.of(member_id))


def partitions_in(sent: bytes) -> list[TopicPartition]:
    """The partitions in an assignment a consumer group's leader sent, for describing the
    group and its lag; none where its assignor encoded them in a way of its own (Kafka never
    reads them)."""
    try:
        return read_assignment(sent)
    except InvalidRequestError:
        return []


def same_protocol(body: Any, protocol_type: str, protocol: str | None) -> None:
    """SyncGroup v5+ names the group's protocol type and name; Kafka refuses others."""
    named_type, named = field(body, "protocol_type"), field(body, "protocol_name")
    if (named_type is not None and named_type != protocol_type) or (
        named is not None and named != protocol
    ):
        raise InconsistentProtocolError(
            f"the group's protocol is {protocol_type}/{protocol}, not {named_type}/{named}"
        )


def join_request(request: Request) -> JoinRequest:
    body = request.body
    protocol_type = str(body.protocol_type)
    protocols = items(body.protocols)
    if not protocol_type or not protocols:
        raise InconsistentProtocolError("a member names its protocol type and protocols")
    session_ms = int(body.session_timeout.total_seconds() * 1000)
    rebalance = field(body, "rebalance_timeout")  # v0 has none: the session timeout serves
    rebalance_ms = int(rebalance.total_seconds() * 1000) if rebalance is not None else session_ms
    return JoinRequest(
        topics=subscribed(protocol_type, protocols),
        assignors=[str(p.name) for p in protocols],
        protocol_type=protocol_type,
        metadata=[bytes(p.metadata) for p in protocols],
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms if rebalance_ms > 0 else session_ms,
        group_instance_id=field(body, "group_instance_id"),
        client_id=request.client_id or "",
        client_host=request.client_host,
    )


def subscribed(protocol_type: str, protocols: Sequence[Any]) -> tuple[str, ...]:
    """The topics a consumer's subscription names (its first protocol's: Kafka's consumers
    send one subscription under every assignor's name); none for a group of another kind."""
    if protocol_type != PROTOCOL_TYPE:
        return ()
    return read_subscription(protocols[0].metadata)


NOT_CONSUMER = "a consumer group's classic members name a consumer assignor tidelog runs"


def known_protocols(body: Any) -> list[Any]:
    """A JoinGroup's protocols that name an assignor tidelog runs, in the client's order."""
    return [p for p in items(body.protocols) if str(p.name) in ASSIGNORS]
