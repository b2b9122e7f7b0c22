"""A new member's join that reads its own items and the group's meta item, not the group
(tidelog.groups.sessions): what a wave of them costs, when the full join decides instead, and
that the group's protocol and candidate assignors come out as Kafka's selectProtocol makes them
whichever way each member joined."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.counting import CountingStore
from tests.support.groups import coordinator

from tidelog.assignors import ASSIGNORS, TopicPartition
from tidelog.groups import items, sessions
from tidelog.groups.joining import requested_member
from tidelog.groups.model import (
    REBALANCE_STALL_MS,
    InconsistentProtocolError,
    JoinRequest,
    Limits,
    State,
    UnknownMemberError,
    common_assignors,
    rebalance_deadline_ms,
    select_protocol,
)
from tidelog.storage import Put
from tidelog.storage.memory import MemoryMetadataStore

SESSION_MS = 10_000
PARTITIONS = 12
LIBRDKAFKA = ("range", "roundrobin")  # librdkafka's default partition.assignment.strategy
LIMITS = Limits(min_session_timeout_ms=100, max_session_timeout_ms=60_000)


def stack():
    meta = CountingStore(MemoryMetadataStore())
    coord, rebalancer, topics, clock, _ = coordinator(limits=LIMITS, meta=meta)
    topics.create("t", PARTITIONS, {})
    return coord, rebalancer, meta, clock


def request(assignors=LIBRDKAFKA, **rest) -> JoinRequest:
    return JoinRequest(
        topics=("t",),
        assignors=assignors,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=SESSION_MS,
        **rest,
    )


def described(member_id: str, wanted: JoinRequest, now: int):
    """What the coordinator hands ``sessions.rejoin``: the member as the request says."""
    return lambda known, at: requested_member(
        member_id, wanted, now, LIMITS, joined_generation=at, known=known
    )


def join(coord, wanted: JoinRequest):
    """As a Kafka client joins (KIP-394): an id first, then the join with it."""
    return coord.rejoin("g", coord.reserve_member_id("g", wanted), wanted)


def test_a_wave_of_new_members_reads_no_member_but_its_own():
    coord, rebalancer, meta, clock = stack()
    first = join(coord, request())  # its join starts generation 1, reading the group
    clock.now += 1
    meta.calls.clear()
    meta.items_read = 0
    joined = [join(coord, request()) for _ in range(PARTITIONS - 1)]
    # Each: the reservation's two reads of the meta item, and the join's BatchGetItem.
    assert meta.calls == {"get": len(joined), "get_many": 2 * len(joined)}
    assert meta.items_read == 0
    assert {(j.generation, j.state) for j in [first, *joined]} == {(1, State.PREPARING_REBALANCE)}
    group = coord.load("g")
    assert group.pending == {}
    assert {m.joined_generation for m in group.members.values()} == {1}
    assert [s[1] for s in rebalancer.started] == [1]  # one rebalance for the wave
    rebalancer.run()
    given = [tp for j in [first, *joined] for tp in coord.heartbeat("g", j.member_id, 1).assignment]
    assert sorted(given) == [TopicPartition("t", p) for p in range(PARTITIONS)]
    assert coord.load("g").assignment.protocol == "range"


@pytest.mark.parametrize(
    ("assignors", "quick"),
    [
        (("roundrobin", "range"), False),  # votes for another candidate: it could win
        (("range",), False),  # leaves out a candidate: the candidates shrink
        (("roundrobin",), False),  # both
        (("range", "roundrobin"), True),  # as the others
        (("sticky", "range", "roundrobin"), True),  # prefers one no other has: votes "range"
        (("range", "sticky", "roundrobin"), True),
    ],
)
def test_a_join_that_may_change_the_protocol_reads_the_group(assignors, quick):
    coord, _, meta, clock = stack()
    for _ in range(3):
        join(coord, request())
    clock.now += 1
    wanted = request(assignors)
    reserved = coord.reserve_member_id("g", wanted)
    meta.calls.clear()
    coord.rejoin("g", reserved, wanted)
    assert ("query" not in meta.calls) == quick
    group = coord.load("g")
    assert reserved in group.members
    assert group.protocol == select_protocol(group.members.values())
    assert group.assignors == common_assignors(group.members.values())


def test_a_join_sharing_no_assignor_is_refused_and_changes_nothing():
    coord, _, _, _ = stack()
    join(coord, request())
    wanted = request(("sticky",))
    reserved = coord.reserve_member_id("g", wanted)
    before = coord.load("g")
    with pytest.raises(InconsistentProtocolError):
        coord.rejoin("g", reserved, wanted)
    assert coord.load("g") == before


def test_the_full_join_decides_what_the_items_cannot():
    coord, _, meta, clock = stack()
    wanted = request()
    join(coord, wanted)  # generation 1 gathers its members

    def quick(wanted=wanted, *, now=None, reserved=None):
        reserved = reserved or coord.reserve_member_id("g", wanted)
        return sessions.rejoin(
            meta,
            "g",
            reserved,
            wanted.group_instance_id,
            described=described(reserved, wanted, clock.now),
            now_ms=clock.now if now is None else now,
        )

    lapsed = coord.reserve_member_id("g", wanted)
    assert quick(now=clock.now + SESSION_MS + 1, reserved=lapsed) is None  # it ran out
    clock.now += SESSION_MS + 1
    with pytest.raises(UnknownMemberError):
        coord.rejoin("g", lapsed, wanted)
    assert quick(request(group_instance_id="host-a")) is None  # may replace its old self
    stall = rebalance_deadline_ms(coord.load("g")) + REBALANCE_STALL_MS
    clock.now = stall - 1000
    assert quick(now=stall + 1) is None  # the rebalance stalled
    head = meta.get(items.group_pk("g"), items.META_SK)
    assert head is not None
    meta.write(Put({**head, "state": State.COMPLETING_REBALANCE.value}))  # the assignor runs
    assert quick() is None
    meta.write(Put(head))
    assert quick() is not None  # the same join while the generation gathers: taken


def test_a_join_that_lost_a_race_is_made_again_by_the_full_join():
    coord, _, meta, clock = stack()
    join(coord, request())
    wanted = request()
    reserved = coord.reserve_member_id("g", wanted)
    head = meta.get(items.group_pk("g"), items.META_SK)
    assert head is not None
    bumped = {**head, "version": int(head["version"]) + 1}

    def racing(known, at):  # the group changes between the read and the write
        meta.write(Put(bumped))
        return described(reserved, wanted, clock.now)(known, at)

    assert sessions.rejoin(meta, "g", reserved, None, described=racing, now_ms=clock.now) is None
    assert reserved not in coord.load("g").members  # nothing of the lost join was written
    assert reserved in coord.load("g").pending
    assert coord.rejoin("g", reserved, wanted).member_id == reserved


def test_the_protocol_is_chosen_at_the_join_barrier():
    """A change that read the group before a join committed writes the protocol without that
    member's vote; the barrier reads every member and chooses again, as Kafka's
    initNextGeneration does."""
    coord, rebalancer, meta, _ = stack()
    for _ in range(3):
        join(coord, request())
    head = meta.get(items.group_pk("g"), items.META_SK)
    assert head is not None
    assert head["protocol"] == "range"
    meta.write(Put({**head, "protocol": "roundrobin"}))  # as such a race can leave it
    rebalancer.run()
    assert coord.load("g").assignment.protocol == "range"


def test_a_group_stored_without_its_candidates_gets_them_from_a_full_join():
    """A group written before the meta item kept its candidates has none: its first join
    reads it whole, and writes them."""
    coord, _, meta, _ = stack()
    join(coord, request())
    head = meta.get(items.group_pk("g"), items.META_SK)
    assert head is not None
    meta.write(Put({k: v for k, v in head.items() if k != "assignors"}))
    wanted = request()
    reserved = coord.reserve_member_id("g", wanted)
    meta.calls.clear()
    coord.rejoin("g", reserved, wanted)
    assert "query" in meta.calls
    assert coord.load("g").assignors == frozenset(LIBRDKAFKA)
    meta.calls.clear()
    join(coord, wanted)
    assert "query" not in meta.calls


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(sorted(ASSIGNORS)), min_size=1, max_size=3, unique=True),
        min_size=1,
        max_size=8,
    ),
    st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_members_join_as_kafka_selects_their_protocol(wanted, leaves):
    """Joins of any assignors, a member leaving now and then: each join refused exactly when
    Kafka refuses it (no assignor in common with every member), and the meta item's protocol
    and candidates always those of the members it has."""
    coord, rebalancer, _, _ = stack()
    members: dict[str, tuple[str, ...]] = {}
    for assignors, leave in zip(wanted, leaves, strict=False):
        candidates = common_assignors_of([*members.values(), tuple(assignors)])
        try:
            joined = join(coord, request(tuple(assignors)))
        except InconsistentProtocolError:
            assert members
            assert not candidates
        else:
            assert candidates
            members[joined.member_id] = tuple(assignors)
        if leave and len(members) > 1:
            coord.leave("g", next(iter(members)))
            del members[next(iter(members))]
        group = coord.load("g")
        assert group.protocol == select_protocol(group.members.values())
        assert group.assignors == common_assignors(group.members.values())
        assert {m: g.assignors for m, g in group.members.items()} == members
    rebalancer.run()
    group = coord.load("g")
    assert group.assignment is not None
    assert group.assignment.protocol == select_protocol(group.members.values())


def common_assignors_of(lists: list[tuple[str, ...]]) -> set[str]:
    found = set(lists[0])
    for each in lists[1:]:
        found &= set(each)
    return found
