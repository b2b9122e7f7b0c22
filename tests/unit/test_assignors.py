"""The assignors against the seed's examples and Kafka's own assignor tests (inputs and expected
outputs transcribed from RangeAssignorTest, RoundRobinAssignorTest, AbstractStickyAssignorTest
and CooperativeStickyAssignorTest)."""

from __future__ import annotations

import pytest

from tidelog.assignors import Subscription, TopicPartition, assign
from tidelog.assignors.common import java_hash_order, java_string_hash
from tidelog.errors import InvalidRequestError


def tps(*pairs):
    return sorted(TopicPartition(t, p) for t, p in pairs)


def sub(*topics, owned=(), generation=-1, instance=None):
    return Subscription(list(topics), [TopicPartition(*tp) for tp in owned], generation, instance)


SIX = {"t0": 3, "t1": 3}


# -- seed 000 -----------------------------------------------------------------------------


def test_seed_range_example():
    members = {"C0": sub("t0", "t1"), "C1": sub("t0", "t1")}
    assert assign("range", SIX, members) == {
        "C0": tps(("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)),
        "C1": tps(("t0", 2), ("t1", 2)),
    }


def test_seed_round_robin_examples():
    members = {"C0": sub("t0", "t1"), "C1": sub("t0", "t1")}
    assert assign("roundrobin", SIX, members) == {
        "C0": tps(("t0", 0), ("t0", 2), ("t1", 1)),
        "C1": tps(("t0", 1), ("t1", 0), ("t1", 2)),
    }
    unequal = {"C0": sub("t0"), "C1": sub("t0", "t1"), "C2": sub("t0", "t1", "t2")}
    assert assign("roundrobin", {"t0": 1, "t1": 2, "t2": 3}, unequal) == {
        "C0": tps(("t0", 0)),
        "C1": tps(("t1", 0)),
        "C2": tps(("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)),
    }


# -- RangeAssignorTest / RoundRobinAssignorTest --------------------------------------------


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_trivial_cases(strategy):
    assert assign(strategy, {}, {"c": sub()}) == {"c": []}
    assert assign(strategy, {"topic": 0}, {"c": sub("topic")}) == {"c": []}
    assert assign(strategy, {}, {"c": sub("nonexistent")}) == {"c": []}
    assert assign(strategy, {"topic": 3, "other": 3}, {"c": sub("topic")}) == {
        "c": tps(("topic", 0), ("topic", 1), ("topic", 2))
    }
    assert assign(strategy, {"topic1": 1, "topic2": 2}, {"c": sub("topic1", "topic2")}) == {
        "c": tps(("topic1", 0), ("topic2", 0), ("topic2", 1))
    }
    assert assign(strategy, {"topic": 2}, {"c1": sub("topic"), "c2": sub("topic")}) == {
        "c1": tps(("topic", 0)),
        "c2": tps(("topic", 1)),
    }
    assert assign(strategy, {}, {}) == {}


def test_range_mixed_topics():
    members = {
        "consumer1": sub("topic1"),
        "consumer2": sub("topic1", "topic2"),
        "consumer3": sub("topic1"),
    }
    assert assign("range", {"topic1": 3, "topic2": 2}, members) == {
        "consumer1": tps(("topic1", 0)),
        "consumer2": tps(("topic1", 1), ("topic2", 0), ("topic2", 1)),
        "consumer3": tps(("topic1", 2)),
    }


def test_round_robin_mixed_topics():
    members = {
        "consumer1": sub("topic1"),
        "consumer2": sub("topic1", "topic2"),
        "consumer3": sub("topic1"),
    }
    assert assign("roundrobin", {"topic1": 3, "topic2": 2}, members) == {
        "consumer1": tps(("topic1", 0)),
        "consumer2": tps(("topic1", 1), ("topic2", 0), ("topic2", 1)),
        "consumer3": tps(("topic1", 2)),
    }


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_static_members_rank_by_instance_id_not_member_id(strategy):
    # testTwoStaticConsumersTwoTopicsSixPartitions: consumer-b is instance1, so it ranks first
    static = {
        "consumer-b": sub("t0", "t1", instance="instance1"),
        "consumer-a": sub("t0", "t1", instance="instance2"),
    }
    dynamic = {"consumer-b": sub("t0", "t1"), "consumer-a": sub("t0", "t1")}
    by_instance = assign(strategy, SIX, static)
    by_id = assign(strategy, SIX, dynamic)
    assert by_instance["consumer-b"] == by_id["consumer-a"]
    assert by_instance["consumer-a"] == by_id["consumer-b"]


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_static_members_come_before_dynamic_ones(strategy):
    # testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions
    members = {"consumer-b": sub("t0", "t1", instance="instance1"), "consumer-a": sub("t0", "t1")}
    expected_first = assign(strategy, SIX, {"A": sub("t0", "t1"), "B": sub("t0", "t1")})["A"]
    assert assign(strategy, SIX, members)["consumer-b"] == expected_first


def test_static_assignment_survives_a_restart_with_new_member_ids():
    # testStaticMemberRangeAssignmentPersistent: same instance ids, new member ids
    before = {f"m{i}": sub("t0", "t1", instance=f"instance{i}") for i in range(3)}
    after = {f"new-{9 - i}": sub("t0", "t1", instance=f"instance{i}") for i in range(3)}
    for strategy in ("range", "roundrobin"):
        first = assign(strategy, SIX, before)
        second = assign(strategy, SIX, after)
        assert [first[f"m{i}"] for i in range(3)] == [second[f"new-{9 - i}"] for i in range(3)]


# -- AbstractStickyAssignorTest ------------------------------------------------------------

STICKY = ["sticky", "cooperative-sticky"]


@pytest.mark.parametrize("strategy", STICKY)
def test_sticky_fresh_assignments(strategy):
    members = {
        "consumer1": sub("topic1"),
        "consumer2": sub("topic1", "topic2"),
        "consumer3": sub("topic1"),
    }
    assert assign(strategy, {"topic1": 3, "topic2": 2}, members) == {
        "consumer1": tps(("topic1", 0), ("topic1", 2)),
        "consumer2": tps(("topic2", 0), ("topic2", 1)),
        "consumer3": tps(("topic1", 1)),
    }
    both = {"consumer1": sub("topic1", "topic2"), "consumer2": sub("topic1", "topic2")}
    assert assign(strategy, {"topic1": 3, "topic2": 3}, both) == {
        "consumer1": tps(("topic1", 0), ("topic1", 2), ("topic2", 1)),
        "consumer2": tps(("topic1", 1), ("topic2", 0), ("topic2", 2)),
    }


def test_sticky_owner_of_min_quota_gets_the_extra_partition():
    # testConsumerOwningMinQuotaExpectedMaxQuota
    members = {
        "consumer1": sub("topic1", "topic2", owned=[("topic1", 0), ("topic2", 1)], generation=1),
        "consumer2": sub("topic1", "topic2", owned=[("topic1", 1), ("topic2", 2)], generation=1),
    }
    assert assign("sticky", {"topic1": 2, "topic2": 3}, members) == {
        "consumer1": tps(("topic1", 0), ("topic2", 0), ("topic2", 1)),
        "consumer2": tps(("topic1", 1), ("topic2", 2)),
    }


MAX_QUOTA_MEMBERS = {
    "consumer1": sub("topic1", "topic2", owned=[("topic1", 0), ("topic2", 0)], generation=1),
    "consumer2": sub("topic1", "topic2", owned=[("topic1", 1), ("topic2", 1)], generation=1),
    "consumer3": sub("topic1", "topic2", generation=1),
}


def test_sticky_more_max_quota_owners_than_needed():
    # testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers
    assert assign("sticky", {"topic1": 2, "topic2": 2}, MAX_QUOTA_MEMBERS) == {
        "consumer1": tps(("topic1", 0)),
        "consumer2": tps(("topic1", 1), ("topic2", 1)),
        "consumer3": tps(("topic2", 0)),
    }


def test_cooperative_withholds_what_changes_owner():
    # the same group, cooperatively: topic2-0 moves consumer1 -> consumer3, so it waits a round
    assert assign("cooperative-sticky", {"topic1": 2, "topic2": 2}, MAX_QUOTA_MEMBERS) == {
        "consumer1": tps(("topic1", 0)),
        "consumer2": tps(("topic1", 1), ("topic2", 1)),
        "consumer3": [],
    }


def test_sticky_all_members_under_min_quota():
    # testAllConsumersAreUnderMinQuota
    members = {
        "consumer1": sub("topic1", "topic2", owned=[("topic1", 0)], generation=1),
        "consumer2": sub("topic1", "topic2", owned=[("topic1", 1)], generation=1),
        "consumer3": sub("topic1", "topic2", generation=1),
    }
    assert assign("sticky", {"topic1": 2, "topic2": 3}, members) == {
        "consumer1": tps(("topic1", 0), ("topic2", 1)),
        "consumer2": tps(("topic1", 1), ("topic2", 2)),
        "consumer3": tps(("topic2", 0)),
    }


def test_sticky_add_then_remove_members():
    # testAddRemoveTwoConsumersTwoTopics
    topics, ppt = ("topic1", "topic2"), {"topic1": 3, "topic2": 4}
    first = assign("sticky", ppt, {"consumer1": sub(*topics), "consumer2": sub(*topics)})
    assert first == {
        "consumer1": tps(("topic1", 0), ("topic1", 2), ("topic2", 1), ("topic2", 3)),
        "consumer2": tps(("topic1", 1), ("topic2", 0), ("topic2", 2)),
    }
    grown = {
        "consumer1": sub(*topics, owned=first["consumer1"], generation=1),
        "consumer2": sub(*topics, owned=first["consumer2"], generation=1),
        "consumer3": sub(*topics, generation=1),
        "consumer4": sub(*topics, generation=1),
    }
    second = assign("sticky", ppt, grown)
    assert second == {
        "consumer1": tps(("topic1", 0), ("topic1", 2)),
        "consumer2": tps(("topic1", 1), ("topic2", 0)),
        "consumer3": tps(("topic2", 1), ("topic2", 3)),
        "consumer4": tps(("topic2", 2)),
    }
    # cooperatively, the three partitions changing owner (the transfers Kafka's test lists) wait
    assert assign("cooperative-sticky", ppt, grown) == {
        "consumer1": tps(("topic1", 0), ("topic1", 2)),
        "consumer2": tps(("topic1", 1), ("topic2", 0)),
        "consumer3": [],
        "consumer4": [],
    }
    shrunk = {
        "consumer3": sub(*topics, owned=second["consumer3"], generation=1),
        "consumer4": sub(*topics, owned=second["consumer4"], generation=1),
    }
    assert assign("sticky", ppt, shrunk) == {
        "consumer3": tps(("topic2", 1), ("topic2", 3), ("topic1", 0), ("topic2", 0)),
        "consumer4": tps(("topic2", 2), ("topic1", 1), ("topic1", 2)),
    }


def test_cooperative_add_consumer_takes_two_rounds():
    # testAddRemoveConsumerOneTopic, cooperatively
    ppt = {"topic": 3}
    one = assign("cooperative-sticky", ppt, {"consumer1": sub("topic")})
    assert one == {"consumer1": tps(("topic", 0), ("topic", 1), ("topic", 2))}
    joined = {
        "consumer1": sub("topic", owned=one["consumer1"], generation=1),
        "consumer2": sub("topic", generation=1),
    }
    round1 = assign("cooperative-sticky", ppt, joined)
    assert round1 == {"consumer1": tps(("topic", 0), ("topic", 1)), "consumer2": []}
    assert assign("sticky", ppt, joined) == {
        "consumer1": tps(("topic", 0), ("topic", 1)),
        "consumer2": tps(("topic", 2)),
    }
    rejoined = {
        "consumer1": sub("topic", owned=round1["consumer1"], generation=2),
        "consumer2": sub("topic", generation=2),
    }
    assert assign("cooperative-sticky", ppt, rejoined) == {
        "consumer1": tps(("topic", 0), ("topic", 1)),
        "consumer2": tps(("topic", 2)),
    }


def test_older_generations_and_double_claims_do_not_count():
    ppt = {"t": 4}
    members = {
        "a": sub("t", owned=[("t", 0), ("t", 1)], generation=5),
        "b": sub("t", owned=[("t", 2), ("t", 3)], generation=4),  # missed a rebalance
        "c": sub("t", generation=5),
        "d": sub("t", generation=5),
    }
    result = assign("sticky", ppt, members)
    assert result["a"] == tps(("t", 0))  # keeps its quota of one
    contested = {
        "a": sub("t", owned=[("t", 0), ("t", 1)], generation=5),
        "b": sub("t", owned=[("t", 1), ("t", 2)], generation=5),
    }
    result = assign("cooperative-sticky", ppt, contested)
    assert TopicPartition("t", 1) not in result["a"] + result["b"]  # owned by neither: it waits


def test_unknown_strategy():
    with pytest.raises(InvalidRequestError) as failure:
        assign("uniform-ish", {}, {})
    assert failure.value.kafka_error.name == "INCONSISTENT_GROUP_PROTOCOL"


def test_java_hash_order_matches_hashmap_iteration():
    # Checked against Java 17: Integer.toUnsignedString(s.hashCode()), HashMap.keySet()
    assert java_string_hash("consumer1") == 3873962747
    assert java_string_hash("日本語ünï€😀") == 2346936841  # UTF-16 code units, surrogates too
    assert java_hash_order(["consumer1", "consumer2", "consumer3", "consumer4"]) == [
        "consumer4",
        "consumer3",
        "consumer2",
        "consumer1",
    ]
