"""Assignor invariants over random groups (Kafka's verifyValidityAndBalance and more)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.assignors import Subscription, TopicPartition, assign, assign_target
from tidelog.errors import InvalidRequestError

TOPICS = ["a", "b", "c", "d"]


@st.composite
def groups(draw, equal_subscriptions=None):
    partitions = {
        t: draw(st.integers(0, 6)) for t in draw(st.sets(st.sampled_from(TOPICS), min_size=1))
    }
    names = draw(
        st.lists(
            st.from_regex(r"[a-z]{1,3}[0-9]?", fullmatch=True), min_size=1, max_size=7, unique=True
        )
    )
    same = draw(st.booleans()) if equal_subscriptions is None else equal_subscriptions
    shared = draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))
    members = {}
    for name in names:
        topics = shared if same else draw(st.lists(st.sampled_from(TOPICS), unique=True))
        instance = draw(st.one_of(st.none(), st.sampled_from(["i1", "i2", "i3", "i4"])))
        members[name] = Subscription(topics, group_instance_id=instance)
    # group.instance.id is unique within a group
    seen = set()
    for name, subscription in list(members.items()):
        if subscription.group_instance_id in seen:
            members[name] = Subscription(subscription.topics)
        seen.add(subscription.group_instance_id)
    return partitions, members


def subscribed(partitions, members):
    return {
        TopicPartition(t, p)
        for s in members.values()
        for t in s.topics
        if t in partitions
        for p in range(partitions[t])
    }


def check_valid(partitions, members, result, *, complete=True):
    assert set(result) == set(members)
    flat = [tp for tps in result.values() for tp in tps]
    assert len(flat) == len(set(flat)), "a partition assigned twice"
    for member, tps in result.items():
        for tp in tps:
            assert tp.topic in members[member].topics, f"{member} got unsubscribed {tp}"
            assert 0 <= tp.partition < partitions[tp.topic]
    if complete:
        assert set(flat) == subscribed(partitions, members)


def check_no_improving_move(members, result):
    """Kafka's balance check: if two members differ by more than one partition, the fuller one
    holds nothing the other could take."""
    for m1, tps1 in result.items():
        for m2, tps2 in result.items():
            if len(tps1) > len(tps2) + 1:
                movable = [tp for tp in tps1 if tp.topic in members[m2].topics]
                assert not movable, f"{movable} could move from {m1} to {m2}"


STRATEGIES = ["range", "roundrobin", "sticky", "cooperative-sticky"]


@settings(max_examples=150)
@given(groups(), st.sampled_from(STRATEGIES), st.randoms())
def test_valid_and_independent_of_member_order(group, strategy, rnd):
    partitions, members = group
    result = assign(strategy, partitions, members)
    check_valid(partitions, members, result)
    shuffled = list(members.items())
    rnd.shuffle(shuffled)
    assert assign(strategy, partitions, dict(shuffled)) == result


@settings(max_examples=150)
@given(groups())
def test_sticky_is_balanced(group):
    partitions, members = group
    check_no_improving_move(members, assign("sticky", partitions, members))


@settings(max_examples=100)
@given(groups(equal_subscriptions=True), st.sampled_from(["roundrobin", "sticky"]))
def test_equal_subscriptions_balance_within_one(group, strategy):
    partitions, members = group
    counts = [len(tps) for tps in assign(strategy, partitions, members).values()]
    assert max(counts) - min(counts) <= 1


def next_generation(members, result, generation, rnd, churn=True):
    """The group after a rebalance: members report what they got; some leave, some join."""
    survivors = {m: s for m, s in members.items() if not churn or rnd.random() > 0.3} or members
    following = {
        m: Subscription(s.topics, result[m], generation, s.group_instance_id)
        for m, s in survivors.items()
    }
    if churn:
        for i in range(rnd.randint(0, 2)):
            topics = list(next(iter(members.values())).topics)
            following[f"new{generation}-{i}"] = Subscription(topics, (), generation)
    return following


@settings(max_examples=100)
@given(groups(), st.randoms())
def test_sticky_keeps_what_balance_allows(group, rnd):
    partitions, members = group
    first = assign("sticky", partitions, members)
    again = assign("sticky", partitions, next_generation(members, first, 1, rnd, churn=False))
    assert again == first, "an unchanged group must keep its assignment"
    following = next_generation(members, first, 1, rnd)
    second = assign("sticky", partitions, following)
    check_valid(partitions, following, second)
    check_no_improving_move(following, second)
    if len({s.topic_set for s in following.values()}) == 1:
        total = len(subscribed(partitions, following))
        min_quota = total // len(following)
        for member, subscription in following.items():
            kept = set(subscription.owned_partitions) & set(second[member])
            assert len(kept) >= min(len(subscription.owned_partitions), min_quota), member


@settings(max_examples=100)
@given(groups(), st.randoms())
def test_cooperative_never_revokes_and_reassigns_in_one_round(group, rnd):
    partitions, members = group
    first = assign("cooperative-sticky", partitions, members)
    check_valid(partitions, members, first)  # nothing owned yet: everything is assigned
    following = next_generation(members, first, 1, rnd)
    second = assign("cooperative-sticky", partitions, following)
    check_valid(partitions, following, second, complete=False)
    for member, tps in second.items():
        for tp in tps:
            for other, subscription in following.items():
                if other != member:
                    assert tp not in subscription.owned_partitions, (
                        f"{tp} given to {member} while {other} still owns it"
                    )
    # the follow-up rebalance, once the revocations are done, assigns everything
    settled = {
        m: Subscription(s.topics, second[m], 2, s.group_instance_id) for m, s in following.items()
    }
    third = assign("cooperative-sticky", partitions, settled)
    check_valid(partitions, settled, third)


def test_a_large_random_churn_stays_valid():
    rnd = random.Random(1234)
    partitions = {f"t{i}": rnd.randint(1, 30) for i in range(20)}
    members = {f"m{i}": Subscription(rnd.sample(sorted(partitions), 5)) for i in range(60)}
    result = assign("cooperative-sticky", partitions, members)
    for generation in range(1, 6):
        members = next_generation(members, result, generation, rnd)
        result = assign("cooperative-sticky", partitions, members)
        check_valid(partitions, members, result, complete=False)


# -- KIP-848's server-side assignors: each member's owned partitions are its current target --


@settings(max_examples=150)
@given(groups(), st.sampled_from(["uniform", "range"]), st.randoms())
def test_server_assignors_are_valid_and_independent_of_member_order(group, assignor, rnd):
    partitions, members = group
    result = assign_target(assignor, partitions, members)
    check_valid(partitions, members, result)
    shuffled = list(members.items())
    rnd.shuffle(shuffled)
    assert assign_target(assignor, partitions, dict(shuffled)) == result


@settings(max_examples=150)
@given(groups(equal_subscriptions=True), st.randoms())
def test_uniform_balances_a_homogeneous_group_within_one_and_keeps_what_it_may(group, rnd):
    partitions, members = group
    first = assign_target("uniform", partitions, members)
    counts = [len(tps) for tps in first.values()]
    assert max(counts) - min(counts) <= 1
    again = assign_target("uniform", partitions, next_generation(members, first, 1, rnd, False))
    assert again == first, "an unchanged group must keep its assignment"
    following = next_generation(members, first, 1, rnd)
    second = assign_target("uniform", partitions, following)
    check_valid(partitions, following, second)
    counts = [len(tps) for tps in second.values()]
    assert max(counts) - min(counts) <= 1
    min_quota = len(subscribed(partitions, following)) // len(following)
    for member, subscription in following.items():
        kept = set(subscription.owned_partitions) & set(second[member])
        assert len(kept) >= min(len(subscription.owned_partitions), min_quota), member


@settings(max_examples=100)
@given(groups(equal_subscriptions=False), st.randoms())
def test_uniform_balances_a_heterogeneous_group_as_far_as_subscriptions_allow(group, rnd):
    partitions, members = group
    first = assign_target("uniform", partitions, members)
    check_no_improving_move(members, first)
    following = next_generation(members, first, 1, rnd)
    second = assign_target("uniform", partitions, following)
    check_valid(partitions, following, second)
    check_no_improving_move(following, second)


def test_an_assignor_the_coordinator_does_not_run_is_unsupported_assignor():
    with pytest.raises(InvalidRequestError) as refused:
        assign_target("cooperative-sticky", {"a": 1}, {"m": Subscription(["a"])})
    assert refused.value.kafka_error.name == "UNSUPPORTED_ASSIGNOR"
