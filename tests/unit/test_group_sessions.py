"""Heartbeats that read two items, not the whole group (tidelog.groups.sessions): what they cost,
what only the group's full heartbeat every SWEEP_MS finds, and that a session renewed by one
write never undoes a change made to the member meanwhile."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import pytest
from tests.support.counting import CountingStore
from tests.support.groups import coordinator

from tidelog.assignors import TopicPartition
from tidelog.groups import items, sessions
from tidelog.groups.model import (
    FencedInstanceError,
    IllegalGenerationError,
    JoinRequest,
    RebalanceInProgressError,
    State,
    UnknownMemberError,
)
from tidelog.groups.offsets import OffsetCommit
from tidelog.groups.sessions import SWEEP_MS, Sweeps
from tidelog.storage import ConditionFailedError, Delete, Put
from tidelog.storage.memory import MemoryMetadataStore

MEMBERS = 20
SESSION_MS = 10_000


@pytest.fixture
def stack():
    meta = CountingStore(MemoryMetadataStore())
    coord, rebalancer, topics, clock, _ = coordinator(meta=meta)
    topics.create("t", MEMBERS, {})
    request = JoinRequest(
        topics=("t",), session_timeout_ms=SESSION_MS, rebalance_timeout_ms=SESSION_MS
    )
    members = [coord.join("g", request).member_id for _ in range(MEMBERS)]
    rebalancer.run()
    for member in members:  # the first is the group's full heartbeat; the rest read two items
        assert len(coord.heartbeat("g", member, 1).assignment) == 1
    return coord, rebalancer, meta, clock, members


def test_a_settled_groups_heartbeats_read_their_own_items(stack):
    coord, _, meta, clock, members = stack
    meta.calls.clear()
    meta.items_read = 0
    for _ in range(3):
        clock.now += SWEEP_MS // 4
        for member in members:
            beat = coord.heartbeat("g", member, 1, with_assignment=False)
            assert (beat.state, beat.generation, beat.assignment) == (State.STABLE, 1, ())
    assert meta.calls == {"get_many": 3 * MEMBERS}  # a BatchGetItem each, and no query
    group = coord.load("g")
    assert all(m.heartbeat_ms == clock.now for m in group.members.values())  # all renewed


def test_the_answer_with_the_assignment_reads_it_too(stack):
    coord, _, meta, clock, members = stack
    clock.now += 1
    meta.calls.clear()
    beats = [coord.heartbeat("g", member, 1) for member in members]
    assert meta.calls == {"get_many": MEMBERS}
    given = sorted(tp for beat in beats for tp in beat.assignment)
    assert given == [TopicPartition("t", p) for p in range(MEMBERS)]


def test_a_session_that_ran_out_is_found_within_a_sweep(stack):
    coord, rebalancer, _, clock, members = stack
    alive, dead = members[1:], members[0]
    ends = clock.now + SESSION_MS  # the dead member beats no more
    step, told = 250, []
    while not told and clock.now < ends + 4 * SWEEP_MS:
        clock.now += step
        for member in alive:
            try:
                coord.heartbeat("g", member, 1, with_assignment=False)
            except RebalanceInProgressError as caught:
                told.append((clock.now, caught.generation))
                break
    assert told, "the session that ran out was never found"
    assert ends < told[0][0] <= ends + SWEEP_MS + step
    assert told[0][1] == 2
    group = coord.load("g")
    assert sorted(group.members) == sorted(alive)
    assert (group.state, group.generation) == (State.PREPARING_REBALANCE, 2)
    assert rebalancer.started == [("g", 2, 0)]
    with pytest.raises(UnknownMemberError):
        coord.heartbeat("g", dead, 1)


def test_no_sweep_is_due_within_the_period(stack):
    coord, _, meta, clock, members = stack
    alive, dead = members[1:], members[0]
    clock.now += SESSION_MS + 2 - SWEEP_MS
    for member in alive:  # the first is the sweep: the dead member's session still runs
        coord.heartbeat("g", member, 1)
    clock.now += SWEEP_MS - 1  # now it has run out, and the next sweep is 1 ms away
    meta.calls.clear()
    coord.heartbeat("g", alive[0], 1)
    assert "query" not in meta.calls
    assert dead in coord.load("g").members
    clock.now += 1
    with pytest.raises(RebalanceInProgressError):
        coord.heartbeat("g", alive[0], 1)
    assert dead not in coord.load("g").members


def test_during_a_rebalance_heartbeats_are_told_so_from_two_items(stack):
    coord, _, meta, clock, members = stack
    coord.join("g", JoinRequest(topics=("t",), session_timeout_ms=SESSION_MS))
    clock.now += 1
    meta.calls.clear()
    for member in members:
        with pytest.raises(RebalanceInProgressError) as caught:
            coord.heartbeat("g", member, 1, with_assignment=False)
        assert (caught.value.generation, caught.value.state) == (2, "PreparingRebalance")
    assert meta.calls == {"get_many": MEMBERS}
    group = coord.load("g")
    assert all(group.members[m].heartbeat_ms == clock.now for m in members)


def test_a_member_naming_the_new_generation_joins_it_by_a_full_heartbeat(stack):
    coord, _, _, clock, members = stack
    coord.join("g", JoinRequest(topics=("t",), session_timeout_ms=SESSION_MS))
    clock.now += 1  # no sweep is due: the two items say the member must join by a full one
    with pytest.raises(RebalanceInProgressError):
        coord.heartbeat("g", members[0], 2)
    assert coord.load("g").members[members[0]].joined_generation == 2


def test_a_renewal_never_undoes_a_member_carried_to_the_next_generation(stack):
    coord, _, meta, clock, members = stack
    read = coord.load("g").members[members[0]]
    carried = items.member_item("g", replace(read, joined_generation=2))
    meta.write(Put(carried))  # a rebalance rewrote the item: the same heartbeat, a new generation
    with pytest.raises(ConditionFailedError):
        meta.write(items.renewal("g", read, clock.now + 1))
    assert coord.load("g").members[members[0]].joined_generation == 2


def test_a_batch_read_that_is_no_snapshot_falls_back_to_the_full_heartbeat(stack):
    _, _, meta, clock, members = stack
    head = meta.get(items.group_pk("g"), items.META_SK)
    assert head is not None
    # What a BatchGetItem can see: the meta item of a generation newer than the assignment read.
    meta.write(Put({**head, "generation": 2}))
    clock.now += 1
    assert sessions.beat(meta, "g", members[0], 2, clock.now, with_assignment=True) is None
    beat = sessions.beat(meta, "g", members[0], 2, clock.now, with_assignment=False)
    assert beat is not None
    assert (beat.generation, beat.assignment) == (2, ())


def test_a_consumer_protocol_group_is_left_to_the_full_heartbeat(stack):
    _, _, meta, clock, members = stack
    head = meta.get(items.group_pk("g"), items.META_SK)
    assert head is not None
    meta.write(Put({**head, "type": "consumer"}))
    assert sessions.beat(meta, "g", members[0], 1, clock.now, with_assignment=False) is None


def test_sweeps_are_due_a_period_after_the_last_ended_one_at_a_time():
    sweeps = Sweeps()
    assert sweeps.due("a", 0)
    assert not sweeps.due("a", 5 * SWEEP_MS)  # the first is still under way
    assert sweeps.due("b", 1)  # per group
    sweeps.done("a", 2 * SWEEP_MS)
    assert not sweeps.due("a", 3 * SWEEP_MS - 1)
    assert sweeps.due("a", 3 * SWEEP_MS)
    sweeps.done("a", 3 * SWEEP_MS)
    assert sweeps.due("a", 3 * SWEEP_MS - 5)  # a clock that went back: swept, not skipped
    for n in range(sessions._KEPT):
        sweeps.due(f"g{n}", 0)
    assert sweeps.due("b", 2)  # forgotten, under way or not: swept again


def test_a_member_the_group_does_not_have_is_told_so_from_its_items(stack):
    coord, _, meta, clock, _ = stack
    clock.now += 1
    meta.calls.clear()
    with pytest.raises(UnknownMemberError):
        coord.heartbeat("g", "nobody", 1, with_assignment=False)
    assert meta.calls == {"get_many": 1}


def test_a_fenced_static_member_is_told_so_from_its_items(stack):
    coord, _, meta, _, _ = stack
    static = JoinRequest(topics=("t",), session_timeout_ms=SESSION_MS, group_instance_id="host-a")
    old = coord.join("g", static).member_id
    coord.join("g", static)  # the same instance again: the old id is fenced
    meta.calls.clear()
    with pytest.raises(FencedInstanceError):
        coord.heartbeat("g", old, 2, with_assignment=False)
    assert meta.calls == {"get_many": 1}


def test_reserving_a_member_id_reads_the_meta_item_not_the_group(stack):
    coord, _, meta, _, _ = stack
    meta.calls.clear()
    request = JoinRequest(topics=("t",), session_timeout_ms=SESSION_MS)
    reserved = coord.reserve_member_id("g", request)
    assert "query" not in meta.calls
    assert reserved in coord.load("g").pending
    assert coord.join("g", request, member_id=reserved).member_id == reserved


def test_a_members_committed_offsets_are_read_by_key(stack):
    coord, _, meta, _, members = stack
    commits = [OffsetCommit("t", p, 10 + p) for p in range(MEMBERS)]
    coord.commit("g", members[0], 1, commits)
    meta.calls.clear()
    mine = [("t", 3), ("t", 7), ("t", MEMBERS + 5)]  # the last never committed
    got = coord.committed("g", mine)
    assert meta.calls == {"get_many": 1}
    assert got == {k: v for k, v in coord.committed("g").items() if k in mine}
    assert {k: c.offset for k, c in got.items()} == {("t", 3): 13, ("t", 7): 17}


def test_a_members_commit_is_fenced_on_its_own_items(stack):
    coord, _, meta, clock, members = stack
    clock.now += 1
    meta.calls.clear()
    coord.commit("g", members[0], 1, [OffsetCommit("t", 0, 5)])
    assert "query" not in meta.calls
    with pytest.raises(UnknownMemberError):
        coord.commit("g", "nobody", 1, [OffsetCommit("t", 0, 6)])
    with pytest.raises(IllegalGenerationError):
        coord.commit("g", members[0], 7, [OffsetCommit("t", 0, 6)])
    assert coord.committed("g")[("t", 0)].offset == 5


def test_a_commit_is_conditional_on_what_it_was_fenced_on(stack):
    _, _, meta, _, members = stack
    read = sessions.member_view(meta, "g", members[0], with_assignment=True)
    assert read is not None
    meta_check = items.guard("g", read)[0]
    member_check, assignment_check = items.member_checks("g", read, read.members[members[0]])
    meta.transact([meta_check, member_check, assignment_check])  # as read: they hold
    assert read.assignment is not None
    meta.write(Put(items.assignment_item("g", replace(read.assignment, generation=2))))
    meta.write(Delete(items.group_pk("g"), items.MEMBER_PREFIX + members[0]))
    head = meta.get(items.group_pk("g"), items.META_SK)
    meta.write(Put({**head, "version": read.version + 1}))
    for check in (meta_check, member_check, assignment_check):  # each alone refuses
        with pytest.raises(ConditionFailedError):
            meta.transact([check])


def test_sessions_count_again_from_the_assignment(stack):
    """Kafka reschedules every member's session when its group turns Stable: a member that
    waited its whole session for the assignment is not then found gone."""
    coord, rebalancer, _, clock, members = stack
    clock.now += SWEEP_MS
    coord.join("g", JoinRequest(topics=("t",), session_timeout_ms=SESSION_MS))
    for member in members:
        with pytest.raises(RebalanceInProgressError):
            coord.heartbeat("g", member, 2)  # each joins generation 2
    clock.now += SESSION_MS - 1  # the barrier is slow to open
    rebalancer.run()
    assigned_at = clock.now
    clock.now += SESSION_MS  # longer than anyone's session since their last heartbeat
    beat = coord.heartbeat("g", members[0], 2)  # a sweep: nobody's session has run out
    assert (beat.state, beat.generation) == (State.STABLE, 2)
    assert len(coord.load("g").members) == MEMBERS + 1
    clock.now = assigned_at + SESSION_MS + SWEEP_MS + 1
    with pytest.raises(RebalanceInProgressError):  # now those who did not beat are gone
        coord.heartbeat("g", members[0], 2)
    assert set(coord.load("g").members) == {members[0]}


def test_a_members_offset_commit_renews_its_session(stack):
    coord, _, _, clock, members = stack
    for _ in range(3):
        clock.now += SESSION_MS // 2
        coord.commit("g", members[0], 1, [OffsetCommit("t", 0, clock.now)])
        with contextlib.suppress(RebalanceInProgressError):  # the others' sessions run out
            coord.heartbeat("g", members[1], 1)
    group = coord.load("g")
    assert set(group.members) == {members[0], members[1]}
    assert group.members[members[0]].heartbeat_ms == clock.now


def rejoining(coord, members, request):
    return [coord.rejoin("g", member, request) for member in members]


def test_a_wave_of_rejoins_reads_each_members_own_items(stack):
    coord, rebalancer, meta, clock, members = stack
    request = JoinRequest(
        topics=("t",), session_timeout_ms=SESSION_MS, rebalance_timeout_ms=SESSION_MS
    )
    newcomer = coord.join("g", request).member_id  # generation 2 gathers its members
    clock.now += 1
    meta.calls.clear()
    joined = rejoining(coord, members, request)
    assert meta.calls == {"get_many": MEMBERS}  # a BatchGetItem each, and no query
    assert {(j.generation, j.state) for j in joined} == {(2, State.PREPARING_REBALANCE)}
    group = coord.load("g")
    assert all(
        m.joined_generation == 2 and m.heartbeat_ms == clock.now
        for m in group.members.values()
        if m.member_id != newcomer
    )
    assert [s for s in rebalancer.started if s[1] == 2] == [("g", 2, 0)]  # one rebalance
    rebalancer.run()
    given = [tp for m in [*members, newcomer] for tp in coord.heartbeat("g", m, 2).assignment]
    assert sorted(given) == [TopicPartition("t", p) for p in range(MEMBERS)]


def test_a_rejoin_with_a_new_subscription_is_the_full_one(stack):
    coord, _, meta, clock, members = stack
    coord.join("g", JoinRequest(topics=("t",), session_timeout_ms=SESSION_MS))
    clock.now += 1
    meta.calls.clear()
    wider = JoinRequest(topics=("t", "u"), session_timeout_ms=SESSION_MS)
    assert coord.rejoin("g", members[0], wider).generation == 2
    assert "query" in meta.calls
    assert coord.load("g").members[members[0]].topics == ("t", "u")


def test_a_rejoin_is_the_full_one_when_it_cannot_decide_from_the_items(stack):
    coord, _, meta, clock, members = stack
    request = JoinRequest(
        topics=("t",), session_timeout_ms=SESSION_MS, rebalance_timeout_ms=SESSION_MS
    )

    def quick(member, now):
        return sessions.rejoin(
            meta,
            "g",
            member,
            None,
            described=lambda known, at: replace(known, joined_generation=at, heartbeat_ms=now),
            now_ms=now,
        )

    assert quick(members[0], clock.now + 1) is None  # Stable: nothing to join
    coord.join("g", request)
    assert quick("nobody", clock.now + 1) is None
    assert (
        sessions.rejoin(
            meta, "g", members[0], "host-a", described=lambda known, at: known, now_ms=clock.now
        )
        is None
    )  # another instance id
    assert quick(members[0], clock.now + SESSION_MS + SWEEP_MS) is None  # its session ran out
    late = clock.now + 10 * 60_000
    meta.write(items.renewal("g", coord.load("g").members[members[2]], late))  # a live session
    assert quick(members[2], late) is None  # but the rebalance stalled
    head = meta.get(items.group_pk("g"), items.META_SK)
    assert head is not None

    def racing(known, at):  # the group changes between the read and the write
        meta.write(Put({**head, "version": int(head["version"]) + 1}))
        return replace(known, joined_generation=at)

    assert (
        sessions.rejoin(meta, "g", members[0], None, described=racing, now_ms=clock.now + 1) is None
    )
    assert coord.load("g").members[members[0]].joined_generation == 1
    assert quick(members[1], clock.now + 1) is not None


def test_a_fenced_or_misnamed_static_member_rejoining_is_refused(stack):
    coord, _, _, _, _ = stack
    static = JoinRequest(topics=("t",), session_timeout_ms=SESSION_MS, group_instance_id="host-a")
    old = coord.join("g", static).member_id
    new = coord.join("g", static).member_id  # the same instance again: the old id is fenced
    with pytest.raises(FencedInstanceError):
        coord.rejoin("g", old, static)
    with pytest.raises(FencedInstanceError):
        coord.rejoin("g", new, replace(static, group_instance_id="host-b"))
    assert coord.rejoin("g", new, static).generation == coord.load("g").generation
