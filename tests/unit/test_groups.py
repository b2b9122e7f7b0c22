"""The group coordinator: Kafka's states, generations, fencing, static and cooperative
membership, over the in-memory stores with the rebalances played in order."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from tests.support.groups import coordinator

from tidelog.assignors import TopicPartition
from tidelog.errors import InvalidRequestError
from tidelog.groups import items
from tidelog.groups.model import (
    GONE_GRACE_MS,
    FencedInstanceError,
    GroupNotFoundError,
    IllegalGenerationError,
    InconsistentProtocolError,
    Joined,
    JoinRequest,
    NonEmptyGroupError,
    RebalanceInProgressError,
    State,
    UnknownAssignorError,
    UnknownMemberError,
)
from tidelog.groups.offsets import OffsetCommit
from tidelog.groups.rebalancer import execution_name
from tidelog.groups.sessions import SWEEP_MS
from tidelog.log import keys
from tidelog.storage import ConditionFailedError, Put


def tp(topic, partition):
    return TopicPartition(topic, partition)


def join(coord, group="g", **request):
    defaults = {"topics": ("t0", "t1"), "session_timeout_ms": 1000, "rebalance_timeout_ms": 1000}
    return coord.join(group, JoinRequest(**{**defaults, **request}))


@pytest.mark.parametrize(
    ("assignor", "c0", "c1"),
    [
        # seed 000, RangeAssignor's and RoundRobinAssignor's javadoc examples
        ("range", ["t0p0", "t0p1", "t1p0", "t1p1"], ["t0p2", "t1p2"]),
        ("roundrobin", ["t0p0", "t0p2", "t1p1"], ["t0p1", "t1p0", "t1p2"]),
    ],
)
def test_the_seeds_examples(assignor, c0, c1):
    coord, rebalancer, topics, _, _ = coordinator(member_ids=["C0", "C1"])
    topics.create("t0", 3, {})
    topics.create("t1", 3, {})
    first = join(coord, assignors=[assignor])
    second = join(coord, assignors=[assignor])
    assert (first.member_id, second.member_id) == ("C0", "C1")
    assert second.generation == 1  # both joined while generation 1 gathered its members
    assert rebalancer.started == [("g", 1, 3000)]
    assert rebalancer.run()[-1]["stale"] is False
    got = {}
    for member in ("C0", "C1"):
        beat = coord.heartbeat("g", member, 1)
        assert (beat.state, beat.generation) == (State.STABLE, 1)
        got[member] = [f"{t}p{p}" for t, p in beat.assignment]
    assert got == {"C0": c0, "C1": c1}


def test_a_join_rebalances_and_heartbeats_say_so_until_stable():
    coord, rebalancer, topics, _, _ = coordinator()
    topics.create("t0", 2, {})
    joined = join(coord)
    assert (joined.generation, joined.state) == (1, State.PREPARING_REBALANCE)
    assert rebalancer.started == [("g", 1, 3000)]  # the initial rebalance delay
    with pytest.raises(RebalanceInProgressError) as caught:
        coord.heartbeat("g", joined.member_id, 1)
    assert caught.value.kafka_error.code == 27
    rebalancer.run()
    beat = coord.heartbeat("g", joined.member_id, 0)  # an older generation catches up
    assert (beat.generation, beat.assignment) == (1, (tp("t0", 0), tp("t0", 1)))
    late = join(coord)
    assert rebalancer.started == [("g", 2, 0)]
    assert late.generation == 2
    assert coord.describe("g").state == State.PREPARING_REBALANCE


def test_stale_rebalances_write_nothing():
    coord, rebalancer, topics, clock, _ = coordinator()
    topics.create("t0", 2, {})
    first = join(coord).member_id
    rebalancer.run()
    second = join(coord, session_timeout_ms=10_000).member_id  # generation 2: the first must
    clock.now += 2000  # join it too, and never does: removed, and generation 3 supersedes 2
    answers = rebalancer.run()
    assert [a["stale"] for a in answers] == [True, False]
    group = coord.describe("g")
    assert (group.generation, list(group.members)) == (3, [second])
    with pytest.raises(UnknownMemberError):
        coord.heartbeat("g", first, 1)


def test_a_wave_of_joins_is_one_rebalance():
    """Kafka's join phase: members who join or leave while a generation gathers its members
    change that generation, and its one execution assigns whoever is there. A member awaiting
    its join is kept alive, as Kafka keeps it, whatever its session; its session counts again
    once it is assigned."""
    coord, rebalancer, topics, clock, _ = coordinator()
    topics.create("t0", 6, {})
    members = [join(coord, topics=("t0",)).member_id for _ in range(5)]
    coord.leave("g", members.pop())
    quiet = join(coord, topics=("t0",), session_timeout_ms=100).member_id
    clock.now += 500  # quiet's session runs out while it awaits its join
    members.append(join(coord, topics=("t0",)).member_id)
    assert rebalancer.started == [("g", 1, 3000)]
    assert rebalancer.run()[-1]["stale"] is False
    assignment = coord.load("g").assignment
    assert set(assignment.members) == {*members, quiet}
    owned = [tp for partitions in assignment.members.values() for tp in partitions]
    assert sorted(owned) == [tp("t0", p) for p in range(6)]
    clock.now += 200  # quiet's session, counted again from the assignment, runs out
    with pytest.raises(RebalanceInProgressError):  # quiet never syncs: found gone now
        coord.heartbeat("g", members[0], 1)
    assert quiet not in coord.load("g").members
    # The next wave shares the generation quiet's departure began: one execution for all.
    late = [join(coord, topics=("t0",)) for _ in range(3)]
    assert rebalancer.started == [("g", 2, 0)]
    assert {joined.generation for joined in late} == {2}


def test_unknown_fenced_and_future_members_are_refused():
    coord, rebalancer, topics, _, _ = coordinator()
    topics.create("t0", 1, {})
    member = join(coord).member_id
    rebalancer.run()
    with pytest.raises(UnknownMemberError) as caught:
        coord.heartbeat("g", "nobody", 1)
    assert caught.value.kafka_error.code == 25
    with pytest.raises(IllegalGenerationError) as caught:
        coord.heartbeat("g", member, 7)
    assert caught.value.kafka_error.code == 22
    coord.leave("g", member)
    with pytest.raises(UnknownMemberError):
        coord.heartbeat("g", member, 1)
    assert coord.describe("g").state == State.EMPTY


def test_a_static_member_returns_to_its_partitions_without_a_rebalance():
    coord, rebalancer, topics, _, _ = coordinator()
    topics.create("t0", 4, {})
    a = join(coord, group_instance_id="host-a").member_id
    join(coord, group_instance_id="host-b")
    rebalancer.run()
    before = coord.heartbeat("g", a, 1).assignment
    again = join(coord, group_instance_id="host-a")
    assert again.member_id != a
    assert (again.generation, again.state) == (1, State.STABLE)
    assert rebalancer.started == []
    assert coord.heartbeat("g", again.member_id, 1).assignment == before
    with pytest.raises(FencedInstanceError) as caught:
        coord.heartbeat("g", a, 1)
    assert caught.value.kafka_error.code == 82
    # A changed subscription is a real change: it rebalances.
    changed = join(coord, group_instance_id="host-a", topics=("t0",))
    assert changed.generation == 2


def test_expired_sessions_are_found_by_the_next_operation():
    coord, rebalancer, topics, clock, _ = coordinator()
    topics.create("t0", 2, {})
    alive = join(coord, session_timeout_ms=1000).member_id
    dead = join(coord, session_timeout_ms=1000).member_id
    rebalancer.run()
    assert len(coord.heartbeat("g", alive, 1).assignment) == 1
    clock.now += 600
    coord.heartbeat("g", alive, 1)
    clock.now += 600  # the dead member's session is over, the live one's is not
    with pytest.raises(RebalanceInProgressError) as caught:
        coord.heartbeat("g", alive, 1)
    with pytest.raises(RebalanceInProgressError):
        coord.heartbeat("g", alive, caught.value.generation)  # joins generation 2
    rebalancer.run()
    assert coord.heartbeat("g", alive, 2).assignment == (tp("t0", 0), tp("t0", 1))
    with pytest.raises(UnknownMemberError):
        coord.heartbeat("g", dead, 1)


def test_new_and_growing_topics_rebalance_the_group():
    coord, rebalancer, topics, clock, _ = coordinator()
    topics.create("t0", 1, {})
    member = join(coord, topics=(), topic_pattern=r"t\d", session_timeout_ms=10_000).member_id
    rebalancer.run()
    assert coord.heartbeat("g", member, 1).assignment == (tp("t0", 0),)
    topics.create("t1", 1, {})
    assert coord.heartbeat("g", member, 1).generation == 1  # read two items: not seen yet
    clock.now += SWEEP_MS  # the group's next full heartbeat sees it
    for generation in (1, 2):  # told of the rebalance, then joins it
        with pytest.raises(RebalanceInProgressError):
            coord.heartbeat("g", member, generation)
    rebalancer.run()
    assert coord.heartbeat("g", member, 2).assignment == (tp("t0", 0), tp("t1", 0))
    topics.add_partitions("t1", 2)
    clock.now += SWEEP_MS
    for generation in (2, 3):
        with pytest.raises(RebalanceInProgressError):
            coord.heartbeat("g", member, generation)
    rebalancer.run()
    assert len(coord.heartbeat("g", member, 3).assignment) == 3


def _stable_on(topics_by_count):
    coord, rebalancer, topics, clock, _ = coordinator()
    for topic, count in topics_by_count.items():
        topics.create(topic, count, {})
    member = join(coord, topics=tuple(topics_by_count), session_timeout_ms=60_000).member_id
    rebalancer.run()
    assert coord.heartbeat("g", member, 1).state == State.STABLE
    return coord, rebalancer, topics, clock, member


def test_a_deleted_topic_is_dropped_from_the_assignment_once_it_stayed_gone():
    coord, rebalancer, topics, clock, member = _stable_on({"t0": 2, "t1": 1})
    topics.delete("t1")
    clock.now += SWEEP_MS
    assert coord.heartbeat("g", member, 1).generation == 1  # gone: the grace starts
    assert coord.describe("g").gone_since_ms == clock.now
    clock.now += GONE_GRACE_MS - SWEEP_MS
    assert coord.heartbeat("g", member, 1).generation == 1
    clock.now += SWEEP_MS  # gone for the whole grace: the group rebalances without it
    for generation in (1, 2):
        with pytest.raises(RebalanceInProgressError):
            coord.heartbeat("g", member, generation)
    rebalancer.run()
    assert coord.heartbeat("g", member, 2).assignment == (tp("t0", 0), tp("t0", 1))
    assert coord.describe("g").gone_since_ms == 0


@pytest.mark.parametrize("count", [1, 3])
def test_a_topic_deleted_and_created_again_rebalances_once_in_its_new_shape(count):
    coord, rebalancer, topics, clock, member = _stable_on({"t0": 2})
    topics.delete("t0")
    clock.now += SWEEP_MS
    assert coord.heartbeat("g", member, 1).generation == 1  # members never join without it
    topics.create("t0", count, {})
    clock.now += SWEEP_MS
    for generation in (1, 2):
        with pytest.raises(RebalanceInProgressError):
            coord.heartbeat("g", member, generation)
    rebalancer.run()
    assert coord.heartbeat("g", member, 2).assignment == tuple(tp("t0", p) for p in range(count))
    clock.now += GONE_GRACE_MS  # the grace that began is over with the rebalance
    assert coord.heartbeat("g", member, 2).generation == 2


def test_a_topic_back_in_its_old_shape_ends_the_grace():
    coord, _, topics, clock, member = _stable_on({"t0": 2})
    topics.delete("t0")
    clock.now += SWEEP_MS
    coord.heartbeat("g", member, 1)
    topics.create("t0", 2, {})
    clock.now += SWEEP_MS
    assert coord.heartbeat("g", member, 1).generation == 1
    assert coord.describe("g").gone_since_ms == 0
    clock.now += GONE_GRACE_MS
    assert coord.heartbeat("g", member, 1).generation == 1


def test_cooperative_rebalancing_hands_partitions_over_in_two_generations():
    coord, rebalancer, topics, _, _ = coordinator()
    topics.create("t0", 4, {})
    first = join(coord, topics=("t0",), assignors=["cooperative-sticky"]).member_id
    rebalancer.run()
    assert len(coord.heartbeat("g", first, 1).assignment) == 4
    second = join(coord, topics=("t0",), assignors=["cooperative-sticky"]).member_id
    with pytest.raises(RebalanceInProgressError) as caught:
        coord.heartbeat("g", first, 1)
    assert len(caught.value.keep) == 4  # cooperative: keep consuming what you own
    with pytest.raises(RebalanceInProgressError):
        coord.heartbeat("g", first, 2)  # joins generation 2, still owning all four
    rebalancer.run()  # generation 2 revokes two partitions; generation 3 will hand them over
    with pytest.raises(RebalanceInProgressError) as caught:
        coord.heartbeat("g", first, 2)
    assert (caught.value.generation, len(caught.value.keep)) == (3, 2)  # give two up
    rebalancer.run()
    assert coord.describe("g").state == State.PREPARING_REBALANCE  # the barrier holds 3 back
    for member in (first, second):
        with pytest.raises(RebalanceInProgressError):
            coord.heartbeat("g", member, 3)  # first has given its two up, and joins
    rebalancer.run()
    group = coord.describe("g")
    assert (group.generation, group.state) == (3, State.STABLE)
    owners = {m: coord.heartbeat("g", m, 3).assignment for m in (first, second)}
    assert len(owners[first]) == len(owners[second]) == 2
    assert not set(owners[first]) & set(owners[second])


def test_protocols_and_timeouts_are_checked():
    coord, _, topics, _, _ = coordinator()
    topics.create("t0", 1, {})
    join(coord, assignors=["range", "roundrobin"])
    with pytest.raises(InconsistentProtocolError) as none_in_common:
        join(coord, assignors=["sticky"])
    assert none_in_common.value.http_status == 409  # the group's state refuses it
    with pytest.raises(UnknownAssignorError) as unknown:
        join(coord, assignors=["fastest"])
    assert unknown.value.kafka_error.name == "INCONSISTENT_GROUP_PROTOCOL"
    assert unknown.value.http_status == 400
    assert join(coord, assignors=["roundrobin"]).generation == 1  # generation 1 gathering
    assert coord.describe("g").protocol == "roundrobin"
    with pytest.raises(InvalidRequestError) as caught:
        join(coord, session_timeout_ms=10)
    assert caught.value.kafka_error.name == "INVALID_SESSION_TIMEOUT"
    with pytest.raises(InvalidRequestError):
        join(coord, topics=("t0",), topic_pattern="t.*")
    with pytest.raises(InvalidRequestError):
        join(coord, topics=(), topic_pattern="(")
    with pytest.raises(InvalidRequestError) as caught:
        join(coord, group="")
    assert caught.value.kafka_error.name == "INVALID_GROUP_ID"


def _produce(meta, topics, name, partition, count):
    """Move a partition's high watermark by writing its head (no records needed here)."""
    topic = topics.get(name)
    meta.write(
        Put(
            {
                "pk": keys.log_pk(topic.topic_id, partition),
                "sk": keys.HEAD_SK,
                "next_offset": count,
                "log_start_offset": 0,
            }
        )
    )


def test_commits_are_fenced_by_member_and_generation_first_and_take_any_offset():
    coord, rebalancer, topics, _, meta = coordinator()
    topics.create("t0", 2, {})
    _produce(meta, topics, "t0", 0, 100)
    member = join(coord).member_id
    with pytest.raises(RebalanceInProgressError):
        coord.commit("g", member, 1, [OffsetCommit("t0", 0, 5)])
    rebalancer.run()
    (ok,) = coord.commit("g", member, 1, [OffsetCommit("t0", 0, 10, "m")])
    assert (ok.offset, ok.error) == (10, None)
    back, beyond, missing = coord.commit(
        "g",
        member,
        1,
        [OffsetCommit("t0", 0, 9), OffsetCommit("t0", 1, 1), OffsetCommit("t9", 0, 1)],
    )
    assert (back.offset, back.error) == (9, None)  # Kafka's seek back and commit
    (twice,) = coord.commit("g", member, 1, [OffsetCommit("t0", 1, 7), OffsetCommit("t0", 1, 3)])
    assert twice.offset == 3  # named twice: the last one wins, as in Kafka
    assert (beyond.offset, beyond.error) == (1, None)  # the offset is the consumer's business
    assert missing.error.kafka_error.name == "UNKNOWN_TOPIC_OR_PARTITION"
    with pytest.raises(IllegalGenerationError):  # fencing first, whatever the offsets say
        coord.commit("g", member, 0, [OffsetCommit("t0", 0, -5), OffsetCommit("t9", 0, 1)])
    with pytest.raises(UnknownMemberError):
        coord.commit("g", "nobody", 1, [OffsetCommit("t0", 0, 10**12)])
    other = join(coord).member_id  # generation 2 is being prepared
    (during,) = coord.commit("g", member, 1, [OffsetCommit("t0", 0, 20)])
    assert during.offset == 20  # the last completed generation may still commit
    with pytest.raises(RebalanceInProgressError):
        coord.commit("g", other, 2, [OffsetCommit("t0", 0, 30)])
    with pytest.raises(RebalanceInProgressError):
        coord.heartbeat("g", member, 2)  # joins generation 2
    rebalancer.run()
    with pytest.raises(IllegalGenerationError):
        coord.commit("g", member, 1, [OffsetCommit("t0", 0, 30)])
    assert coord.committed("g")[("t0", 0)].offset == 20
    (large,) = coord.commit("g", member, 2, [OffsetCommit("t0", 0, 30, "x" * 5000)])
    assert large.error.kafka_error.name == "OFFSET_METADATA_TOO_LARGE"


def test_a_consumer_below_the_log_start_may_commit_its_position():
    coord, rebalancer, topics, _, meta = coordinator()
    topics.create("t0", 1, {})
    topic = topics.get("t0")
    meta.write(
        Put(
            {
                "pk": keys.log_pk(topic.topic_id, 0),
                "sk": keys.HEAD_SK,
                "next_offset": 100,
                "log_start_offset": 80,  # retention took 0-79
            }
        )
    )
    member = join(coord).member_id
    rebalancer.run()
    coord.commit("g", member, 1, [OffsetCommit("t0", 0, 90)])
    (behind,) = coord.commit("g", member, 1, [OffsetCommit("t0", 0, 42)])
    assert (behind.offset, behind.error) == (42, None)
    assert coord.committed("g")[("t0", 0)].offset == 42


def test_the_join_barrier_holds_the_assignment_until_every_member_rejoined():
    coord, rebalancer, topics, _, _ = coordinator()
    topics.create("t0", 4, {})
    a = join(coord, topics=("t0",)).member_id
    b = join(coord, topics=("t0",)).member_id
    rebalancer.run()
    held = {m: set(coord.heartbeat("g", m, 1).assignment) for m in (a, b)}
    c = join(coord, topics=("t0",)).member_id  # generation 2
    assert rebalancer.run()[-1]["waiting"] is True  # a and b still consume generation 1
    with pytest.raises(RebalanceInProgressError) as caught:
        coord.heartbeat("g", a, 1)
    assert caught.value.keep == []  # eager: give everything up, then join
    with pytest.raises(RebalanceInProgressError):
        coord.heartbeat("g", a, 2)
    assert rebalancer.run()[-1]["waiting"] is True  # b has not given its partitions up
    with pytest.raises(RebalanceInProgressError):
        coord.heartbeat("g", c, 2)
    assert held[b]  # b still owns what generation 1 gave it, until it joins generation 2
    with pytest.raises(RebalanceInProgressError):
        coord.heartbeat("g", b, 2)
    answer = rebalancer.run()[-1]
    assert (answer["waiting"], answer["stale"]) == (False, False)
    owned = [tp for m in (a, b, c) for tp in coord.heartbeat("g", m, 2).assignment]
    assert sorted(owned) == [tp("t0", p) for p in range(4)]


def test_a_member_may_subscribe_to_nothing_and_is_given_nothing():
    # A Kafka consumer whose pattern matches no topic yet joins with an empty subscription.
    coord, rebalancer, topics, _, _ = coordinator()
    topics.create("t0", 2, {})
    idle = join(coord, topics=()).member_id
    busy = join(coord, topics=("t0",)).member_id
    rebalancer.run()
    assert coord.heartbeat("g", idle, 1).assignment == ()
    assert coord.heartbeat("g", busy, 1).assignment == (tp("t0", 0), tp("t0", 1))


def test_a_known_member_rejoining_joins_the_rebalance_or_changes_nothing():
    """Kafka's JoinGroup with a member id: it joins a rebalance under way; in a Stable group
    it starts a new generation only if its subscription changed."""
    coord, rebalancer, topics, _, _ = coordinator()
    topics.create("t0", 2, {})
    topics.create("t1", 2, {})
    subscription = JoinRequest(topics=("t0",), session_timeout_ms=1000, rebalance_timeout_ms=1000)
    a = coord.join("g", subscription).member_id
    rebalancer.run()
    b = coord.join("g", subscription).member_id  # generation 2
    assert rebalancer.run()[-1]["waiting"] is True  # a has not joined it
    rejoined = coord.rejoin("g", a, subscription)
    assert (rejoined.generation, rejoined.state) == (2, State.PREPARING_REBALANCE)
    assert rebalancer.run()[-1]["waiting"] is False  # the barrier counted the rejoin
    assert coord.rejoin("g", b, subscription) == Joined(b, 2, State.STABLE)
    assert rebalancer.started == []  # the same subscription: nothing to do
    changed = coord.rejoin("g", b, replace(subscription, topics=("t0", "t1")))
    assert (changed.generation, changed.state) == (3, State.PREPARING_REBALANCE)
    assert coord.rejoin("g", a, subscription).generation == 3
    rebalancer.run()
    assert coord.heartbeat("g", b, 3).assignment == (tp("t0", 1), tp("t1", 0), tp("t1", 1))
    with pytest.raises(UnknownMemberError):
        coord.rejoin("g", "nobody", subscription)
    with pytest.raises(FencedInstanceError):
        coord.rejoin("g", a, replace(subscription, group_instance_id="host-9"))


def test_a_member_that_never_rejoins_is_removed_after_the_rebalance_timeout():
    coord, rebalancer, topics, clock, _ = coordinator()
    topics.create("t0", 2, {})
    stuck = join(coord, topics=("t0",), session_timeout_ms=5000, rebalance_timeout_ms=800)
    rebalancer.run()
    fresh = join(coord, topics=("t0",), session_timeout_ms=5000, rebalance_timeout_ms=800)
    clock.now += 700
    with pytest.raises(RebalanceInProgressError):  # stuck keeps its session, never joins
        coord.heartbeat("g", stuck.member_id, 1)
    assert rebalancer.run()[-1]["waiting"] is True
    clock.now += 101  # the rebalance timeout (800 ms) is over
    answers = [(a["generation"], a["stale"], a["waiting"]) for a in rebalancer.run()]
    # stuck is removed, which ends generation 2; fresh had joined 2, so it has joined 3 too:
    # generation 3 is assigned at once, with no second round of joins.
    assert answers == [(2, True, False), (3, False, False)]
    with pytest.raises(UnknownMemberError):
        coord.heartbeat("g", stuck.member_id, 1)
    assert coord.heartbeat("g", fresh.member_id, 3).assignment == (tp("t0", 0), tp("t0", 1))


def test_a_rebalance_timeout_below_the_session_timeout_is_valid():
    coord, rebalancer, topics, _, _ = coordinator()
    topics.create("t0", 1, {})
    member = join(coord, session_timeout_ms=10_000, rebalance_timeout_ms=500).member_id
    rebalancer.run()  # max.poll.interval.ms below session.timeout.ms: Kafka takes it
    assert coord.heartbeat("g", member, 1).assignment == (tp("t0", 0),)


def test_resets_only_while_the_group_is_empty():
    coord, rebalancer, topics, _, meta = coordinator()
    topics.create("t0", 2, {})
    _produce(meta, topics, "t0", 0, 50)
    member = join(coord).member_id
    rebalancer.run()
    coord.commit("g", member, 1, [OffsetCommit("t0", 0, 40)])
    with pytest.raises(NonEmptyGroupError) as caught:
        coord.reset("g", "earliest")
    assert caught.value.kafka_error.code == 68
    coord.leave("g", member)
    moved = coord.reset("g", "earliest")
    assert [(c.topic, c.partition, c.offset) for c in moved] == [("t0", 0, 0), ("t0", 1, 0)]
    coord.reset("g", "offset", topics=["t0"], offset=30)
    assert coord.committed("g")[("t0", 0)].offset == 30
    assert coord.committed("g")[("t0", 1)].offset == 0  # clamped to the partition's end
    (simple,) = coord.commit("g", "", -1, [OffsetCommit("t0", 0, 45)])
    assert simple.offset == 45  # an empty group takes commits from simple consumers
    # ... and from any client outside group management, named or not: a KIP-848 consumer
    # that never subscribed commits under its own member id, as on Kafka.
    (named,) = coord.commit("g", "never-subscribed", -1, [OffsetCommit("t0", 0, 46)])
    assert named.offset == 46
    (unknown,) = coord.commit("nobody-yet", "never-subscribed", -1, [OffsetCommit("t0", 0, 7)])
    assert unknown.offset == 7
    with pytest.raises(UnknownMemberError):
        coord.commit("g", "someone", 3, [OffsetCommit("t0", 0, 47)])


@pytest.mark.parametrize("partitions", [2, 150])
def test_offsets_given_to_a_new_group_make_it_an_empty_group(partitions):
    """Kafka's coordinator creates a group on the first offsets committed to it (a simple
    consumer's commit, an admin's reset): listed and described as Empty, not Dead. 150
    partitions take the reset over more than one transaction."""
    coord, _, topics, _, _ = coordinator()
    topics.create("t0", partitions, {})
    assert coord.describe("simple").state == State.DEAD
    coord.commit("simple", "", -1, [OffsetCommit("t0", 0, 1)])
    coord.reset("admin", "earliest", topics=["t0"])
    assert sorted((g.name, g.state) for g in coord.groups()) == [
        ("admin", State.EMPTY),
        ("simple", State.EMPTY),
    ]
    for name in ("admin", "simple"):
        group = coord.describe(name)
        assert (group.state, group.generation, group.members) == (State.EMPTY, 0, {})
    assert len(coord.committed("admin")) == partitions
    coord.reset("admin", "latest")  # the created group, reset again
    member = join(coord, group="admin", topics=("t0",)).member_id
    assert coord.describe("admin").members.keys() == {member}


@pytest.mark.parametrize("partitions", [2, 150])
def test_an_empty_group_is_deleted_with_all_its_offsets(partitions):
    """Kafka's DeleteGroups; 150 committed partitions take more than one transaction."""
    coord, rebalancer, topics, _, meta = coordinator()
    topics.create("t0", partitions, {})
    member = join(coord, topics=("t0",)).member_id
    rebalancer.run()
    commits = [OffsetCommit("t0", p, 1) for p in range(partitions)]
    coord.commit("g", member, 1, commits)
    with pytest.raises(NonEmptyGroupError):
        coord.delete("g")
    assert len(coord.committed("g")) == partitions, "a refused delete changes nothing"
    coord.leave("g", member)
    coord.delete("g")
    assert coord.committed("g") == {}
    assert [g.name for g in coord.groups()] == []
    assert coord.describe("g").state == State.DEAD
    assert list(meta.query(items.group_pk("g"))) == [], "nothing of it left"
    assert list(meta.query(items.offsets_pk("g"))) == []
    with pytest.raises(GroupNotFoundError) as caught:
        coord.delete("g")
    assert caught.value.kafka_error.code == 69
    # A group that only ever took commits (Kafka's simple consumers) is deleted the same way.
    coord.commit("simple", "", -1, [OffsetCommit("t0", 0, 1)])
    coord.delete("simple")
    assert coord.committed("simple") == {}


def test_a_rebalance_that_never_started_is_started_over():
    coord, rebalancer, topics, clock, _ = coordinator()
    topics.create("t0", 1, {})

    def broken(group, generation, delay_ms):
        raise ConnectionError("states endpoint down")

    rebalancer.start = broken
    member = join(coord, session_timeout_ms=60_000, rebalance_timeout_ms=60_000).member_id
    assert coord.describe("g").state == State.PREPARING_REBALANCE
    del rebalancer.start
    for _ in range(4):  # the rebalance timeout and a minute: the barrier might still wait
        clock.now += 30_000
        with pytest.raises(RebalanceInProgressError):
            coord.heartbeat("g", member, 1)
    assert rebalancer.started == []
    clock.now += 1_000
    with pytest.raises(RebalanceInProgressError) as caught:
        coord.heartbeat("g", member, 1)
    assert caught.value.generation == 2
    rebalancer.run()
    assert coord.heartbeat("g", member, 2).assignment == (tp("t0", 0),)


def test_kafkas_states_along_a_rebalance():
    coord, rebalancer, topics, _, _ = coordinator()
    topics.create("t0", 1, {})
    assert coord.describe("nobody").state == State.DEAD  # DescribeGroups of an unknown group
    seen = []
    original = coord._mutate  # observe the state the assignor sets before it writes Stable

    def spy(name, change, **options):
        answer = original(name, change, **options)
        seen.append(coord.load(name).state)
        return answer

    coord._mutate = spy
    join(coord)
    rebalancer.run()
    assert seen == [State.PREPARING_REBALANCE, State.COMPLETING_REBALANCE, State.STABLE]


def test_a_heartbeat_is_judged_when_it_arrives_not_after_a_slow_moment():
    coord, rebalancer, topics, clock, _ = coordinator()
    topics.create("t0", 1, {})
    member = join(coord, session_timeout_ms=1000).member_id
    rebalancer.run()
    coord.heartbeat("g", member, 1)
    clock.now += 900  # inside the session when it arrives ...
    arrival = clock.now

    class Slow:
        """... and every later reading of the clock finds the machine busy."""

        def __call__(self):
            self.calls += 1
            return arrival + (0 if self.calls == 1 else 500 * self.calls)

        calls = 0

    coord._clock_ms = Slow()
    assert coord.heartbeat("g", member, 1).assignment == (tp("t0", 0),)


def test_offsets_of_topics_no_member_subscribes_to_are_deleted_alone():
    """Kafka's OffsetDelete (KIP-496): a subscribed topic's offsets stay, the others go, and
    150 of them take more than one transaction."""
    coord, rebalancer, topics, _, _ = coordinator()
    topics.create("t0", 2, {})
    topics.create("t1", 150, {})
    member = join(coord, topics=("t0",)).member_id
    rebalancer.run()
    coord.commit("g", member, 1, [OffsetCommit("t0", 0, 5)])
    coord.commit("g", member, 1, [OffsetCommit("t1", p, 7) for p in range(150)])
    wanted = [("t0", 0), *(("t1", p) for p in range(150))]
    outcome = coord.offsets.delete_offsets("g", wanted)
    assert outcome[("t0", 0)].kafka_error.name == "GROUP_SUBSCRIBED_TO_TOPIC"
    assert all(outcome[("t1", p)] is None for p in range(150))
    assert list(coord.committed("g")) == [("t0", 0)]
    coord.leave("g", member)
    assert coord.offsets.delete_offsets("g", [("t0", 0)]) == {("t0", 0): None}
    assert coord.committed("g") == {}
    with pytest.raises(GroupNotFoundError):
        coord.offsets.delete_offsets("never", [("t0", 0)])


def test_an_offset_delete_that_races_a_join_judges_the_new_subscription():
    coord, _, topics, _, meta = coordinator()
    topics.create("t0", 1, {})
    coord.commit("g", "", -1, [OffsetCommit("t0", 0, 5)])
    transact = meta.transact
    raced: list[str] = []

    def join_first(writes):
        if not raced and any(getattr(w, "pk", "").startswith("offsets#") for w in writes):
            raced.append(join(coord, topics=("t0",)).member_id)
        return transact(writes)

    meta.transact = join_first  # type: ignore[method-assign]
    outcome = coord.offsets.delete_offsets("g", [("t0", 0)])
    assert raced
    assert outcome[("t0", 0)].kafka_error.name == "GROUP_SUBSCRIBED_TO_TOPIC"
    assert list(coord.committed("g")) == [("t0", 0)]


def test_executions_are_named_apart_for_each_incarnation_and_protocol():
    base = execution_name("billing", 1, "a1b2c3d4")
    assert base != execution_name("billing", 1, "e5f6a7b8")  # the group deleted and made anew
    assert base != execution_name("billing", 1, "a1b2c3d4", "consumer")  # an epoch, not a gen
    assert base == execution_name("billing", 1, "a1b2c3d4", "classic")
    long = execution_name("x" * 300 + "/é", 2**31 - 1, "a1b2c3d4", "consumer")
    assert len(long) <= 80
    assert re.fullmatch(r"[A-Za-z0-9_-]+", long)


def test_a_group_made_anew_has_a_new_incarnation():
    coord, _, topics, _, _ = coordinator()
    topics.create("t", 1, {})
    first = coord.join("g", JoinRequest(topics=("t",), session_timeout_ms=6000))
    coord.leave("g", first.member_id)
    was = coord.load("g").incarnation
    coord.delete("g")
    coord.join("g", JoinRequest(topics=("t",), session_timeout_ms=6000))
    assert was
    assert coord.load("g").incarnation not in ("", was)


def test_a_rebalance_counts_its_timeout_from_when_it_is_written_not_when_it_was_asked():
    """A join whose write waited behind others (a busy moment's retries) begins the new
    generation only once written: the members still have the whole rebalance timeout from
    then to rejoin. Counted from the join's arrival, a member that heartbeated Stable just
    before the write was timed out early, and its partitions handed on while it held them."""
    coord, rebalancer, topics, clock, meta = coordinator()
    topics.create("t0", 2, {})
    stuck = join(coord, topics=("t0",), session_timeout_ms=5000, rebalance_timeout_ms=800)
    rebalancer.run()
    transact = meta.transact
    busy = [True]

    def contended(writes):
        if busy.pop() if busy else False:
            clock.now += 700  # the write waits behind others, then finds the group changed
            raise ConditionFailedError("another member's write came first")
        return transact(writes)

    meta.transact = contended
    join(coord, topics=("t0",), session_timeout_ms=5000, rebalance_timeout_ms=800)
    meta.transact = transact
    clock.now += 700  # 1,400 ms after the join arrived, 700 after generation 2 was written
    with pytest.raises(RebalanceInProgressError):
        coord.heartbeat("g", stuck.member_id, 1)
    assert rebalancer.run()[-1]["waiting"] is True  # stuck may still rejoin
    clock.now += 101  # the timeout has run out, from the write
    assert [a["stale"] for a in rebalancer.run()][:1] == [True]
    with pytest.raises(UnknownMemberError):
        coord.heartbeat("g", stuck.member_id, 1)
