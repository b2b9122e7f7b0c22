"""The range and round-robin assignors (seed 000), with KIP-345's ordering of static members."""

from __future__ import annotations

from collections.abc import Mapping

from tidelog.assignors.common import (
    Assignment,
    Subscription,
    TopicPartition,
    member_order,
    partitions_of,
)


def range_assign(
    partitions_per_topic: Mapping[str, int], members: Mapping[str, Subscription]
) -> Assignment:
    """Per topic: its partitions in order, split into contiguous ranges over its subscribers in
    member order; the first ``partitions % subscribers`` members get one more."""
    assignment: Assignment = {member: [] for member in members}
    ordered = member_order(members)
    topics = {t for s in members.values() for t in s.topics if t in partitions_per_topic}
    for topic in sorted(topics):
        subscribers = [m for m in ordered if topic in members[m].topic_set]
        count = partitions_per_topic[topic]
        per_member, extra = divmod(count, len(subscribers))
        for i, member in enumerate(subscribers):
            start = per_member * i + min(i, extra)
            length = per_member + (1 if i < extra else 0)
            assignment[member] += [TopicPartition(topic, p) for p in range(start, start + length)]
    return assignment


def round_robin_assign(
    partitions_per_topic: Mapping[str, int], members: Mapping[str, Subscription]
) -> Assignment:
    """All subscribed partitions in order, dealt to the members in a circle, skipping a member
    not subscribed to the partition's topic."""
    assignment: Assignment = {member: [] for member in members}
    ordered = member_order(members)
    if not ordered:
        return assignment
    topics = {t for s in members.values() for t in s.topics}
    turn = 0
    for tp in partitions_of(topics, partitions_per_topic):
        while tp.topic not in members[ordered[turn]].topic_set:
            turn = (turn + 1) % len(ordered)
        assignment[ordered[turn]].append(tp)
        turn = (turn + 1) % len(ordered)
    return assignment
