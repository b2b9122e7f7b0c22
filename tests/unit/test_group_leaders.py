"""Groups whose leader assigns, as every classic group does in Kafka (tidelog.groups.joining):
Kafka Streams' assignor, a client's own, and groups that are no consumer groups (Kafka Connect's
workers). The state machine elects a leader at the join barrier and stops there; the leader's
SyncGroup brings each member's assignment as its client encoded it, byte for byte; the group
keeps its protocol type, and a member of another type is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.groups import coordinator

from tidelog.assignors import TopicPartition
from tidelog.groups.joining import elect_leader, leader_assigns, led_assignment, new_member
from tidelog.groups.model import (
    IllegalGenerationError,
    InconsistentProtocolError,
    JoinRequest,
    Limits,
    RebalanceInProgressError,
    State,
    UnknownAssignorError,
    UnknownMemberError,
    empty_group,
)
from tidelog.kafka.classic_protocol import partitions_in
from tidelog.kafka.consumer_protocol import write_assignment

LIMITS = Limits(min_session_timeout_ms=100, max_session_timeout_ms=60_000)
SESSION_MS = 10_000


def stack():
    coord, rebalancer, topics, clock, _ = coordinator(limits=LIMITS)
    topics.create("t", 4, {})
    return coord, rebalancer, clock


def streams(userdata: bytes = b"u", **rest) -> JoinRequest:
    return JoinRequest(
        topics=("t",),
        assignors=("stream",),
        metadata=(b"subscription:" + userdata,),
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=SESSION_MS,
        **rest,
    )


def connect(**rest) -> JoinRequest:
    return JoinRequest(
        assignors=("sessioned", "compatible", "default"),
        metadata=(b"s", b"c", b"d"),
        protocol_type="connect",
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=SESSION_MS,
        **rest,
    )


def join(coord, wanted: JoinRequest, group: str = "g"):
    return coord.rejoin(group, coord.reserve_member_id(group, wanted), wanted)


def test_a_streams_group_elects_a_leader_whose_assignment_every_member_gets():
    coord, rebalancer, _ = stack()
    members = [join(coord, streams(bytes([n]))).member_id for n in range(3)]
    rebalancer.run()
    group = coord.load("g")
    assert group.state == State.COMPLETING_REBALANCE  # the state machine elected, no more
    assert group.assignment is None
    assert group.leader == min(members)
    assert group.protocol == "stream"
    # The leader reads every member's metadata for the protocol.
    assert {m: group.members[m].metadata_of("stream") for m in members} == {
        m: b"subscription:" + bytes([n]) for n, m in enumerate(members)
    }
    sent = {
        m: write_assignment([TopicPartition("t", n)]) + b"userdata" for n, m in enumerate(members)
    }
    follower = next(m for m in members if m != group.leader)
    coord.complete("g", follower, 1, {follower: b"ignored"}, partitions_in)
    assert coord.load("g").state == State.COMPLETING_REBALANCE  # a follower assigns nothing
    coord.complete("g", group.leader, 1, sent, partitions_in)
    done = coord.load("g")
    assert done.state == State.STABLE
    assert dict(done.assignment.sent) == sent
    assert done.assignment.of(members[2]) == (TopicPartition("t", 2),)
    coord.complete("g", group.leader, 1, {}, partitions_in)  # a retried SyncGroup
    assert coord.load("g").assignment.sent == sent


def test_the_leader_stays_leader_while_a_member_and_its_rejoin_rebalances_a_stable_group():
    coord, rebalancer, clock = stack()
    first = join(coord, streams()).member_id
    rebalancer.run()
    coord.complete("g", first, 1, {first: b"a"}, partitions_in)
    second = join(coord, streams()).member_id
    coord.rejoin("g", first, streams())
    rebalancer.run()
    group = coord.load("g")
    assert (group.generation, group.leader) == (2, first)
    coord.complete("g", first, 2, {first: b"a", second: b"b"}, partitions_in)
    assert coord.heartbeat("g", second, 2, with_assignment=False).state == State.STABLE
    # Streams' probing rebalance: the leader joins again with the same metadata.
    assert coord.rejoin("g", first, streams()).state == State.PREPARING_REBALANCE
    coord.rejoin("g", second, streams())
    rebalancer.run()
    assert coord.load("g").generation == 3
    coord.leave("g", first)
    clock.now += 1
    rebalancer.run()
    assert coord.load("g").leader == second


def test_a_connect_group_keeps_its_protocol_type_and_refuses_another():
    coord, rebalancer, _ = stack()
    worker = join(coord, connect()).member_id
    rebalancer.run()
    group = coord.load("g")
    assert (group.protocol_type, group.protocol, group.leader) == ("connect", "sessioned", worker)
    coord.complete("g", worker, 1, {worker: b"\x00\x01connect"}, partitions_in)
    stable = coord.load("g")
    assert stable.assignment.sent == {worker: b"\x00\x01connect"}
    assert stable.assignment.members == {}  # a Connect assignment holds no partitions
    with pytest.raises(InconsistentProtocolError):
        join(coord, streams())
    coord.leave("g", worker)
    consumer = join(coord, streams()).member_id  # an empty group takes any type again
    assert coord.load("g").members[consumer].metadata == (b"subscription:u",)
    assert coord.load("g").protocol_type == "consumer"


def test_a_consumer_group_tidelog_assigns_keeps_no_metadata_and_no_leader():
    coord, rebalancer, _ = stack()
    wanted = JoinRequest(
        topics=("t",),
        assignors=("range", "cooperative-sticky"),
        metadata=(b"x", b"y"),
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=SESSION_MS,
    )
    member = join(coord, wanted).member_id
    rebalancer.run()
    group = coord.load("g")
    assert group.members[member].metadata == ()
    assert (group.state, group.leader, group.assignment.sent) == (State.STABLE, None, {})


def test_the_leaders_sync_is_refused_as_kafka_refuses_it():
    coord, rebalancer, _ = stack()
    leader = join(coord, streams()).member_id
    with pytest.raises(RebalanceInProgressError):  # the barrier has not opened
        coord.complete("g", leader, 1, {}, partitions_in)
    rebalancer.run()
    with pytest.raises(IllegalGenerationError):
        coord.complete("g", leader, 2, {}, partitions_in)
    with pytest.raises(UnknownMemberError):
        coord.complete("g", "nobody", 1, {}, partitions_in)


def member(assignors=("stream",), metadata=(b"m",), member_id="m"):
    return new_member(
        member_id,
        topics=("t",),
        topic_pattern=None,
        assignors=assignors,
        metadata=metadata,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=SESSION_MS,
        group_instance_id=None,
        now_ms=0,
        limits=LIMITS,
    )


def test_only_a_kafka_member_may_name_an_assignor_tidelog_does_not_run():
    with pytest.raises(UnknownAssignorError):  # over HTTP no member can lead
        member(("stream",), ())
    with pytest.raises(UnknownAssignorError):
        member(("stream", ""), (b"a", b"b"))
    # The first of a name counts, with its metadata, as in Kafka.
    kept = member(("own", "range", "own"), (b"1", b"2", b"3"))
    assert (kept.assignors, kept.metadata) == (("own", "range"), (b"1", b"2"))


@given(
    protocol_type=st.sampled_from(["consumer", "connect", "x"]),
    protocol=st.sampled_from(["range", "cooperative-sticky", "stream", "sessioned", None]),
    members=st.sets(st.sampled_from("abcde"), max_size=4),
    leader=st.sampled_from(["a", "b", "z", None]),
)
def test_a_leader_is_elected_exactly_where_a_member_assigns(
    protocol_type, protocol, members, leader
):
    group = replace(
        empty_group("g"),
        protocol_type=protocol_type,
        protocol=protocol,
        members={m: member(member_id=m) for m in members},
        leader=leader,
    )
    assigns = protocol_type != "consumer" or protocol in ("stream", "sessioned")
    assert leader_assigns(group) == assigns
    elected = elect_leader(group)
    if not assigns or not members:
        assert elected is None
    else:
        assert elected == (leader if leader in members else min(members))


def test_what_a_led_assignment_changes_is_pure():
    group = replace(
        empty_group("g"),
        state=State.COMPLETING_REBALANCE,
        generation=4,
        version=1,
        protocol="stream",
        members={m: member(member_id=m) for m in "ab"},
        leader="a",
    )
    done = led_assignment(group, "a", 4, {"a": b"x"}, partitions_of=lambda _: (), now_ms=9)
    assert done.state == State.STABLE
    assert done.stable_ms == 9
    assert done.assignment.sent == {"a": b"x", "b": b""}  # a member left out gets none
    assert led_assignment(group, "b", 4, {}, partitions_of=lambda _: (), now_ms=9) is None
