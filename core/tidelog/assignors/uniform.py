"""KIP-848's server-side ``uniform`` assignor (Kafka's UniformAssignor): balance first, then
stickiness. Each member's ``owned_partitions`` is its current target assignment.

- Every member subscribed to the same topics (homogeneous): each gets the total divided by the
  number of members, or one more; a member keeps what it had up to that quota, and what is left
  over fills the members below theirs, in order (Kafka's UniformHomogeneousAssignmentBuilder).
- Members subscribed to different topics (heterogeneous): the sticky assignor's balance and
  stickiness over each member's own topics, the goals of Kafka's heterogeneous builder.

Kafka walks members and partitions in hash order; here everything is sorted, so the result
depends on the group alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from tidelog.assignors.common import Assignment, Subscription, TopicPartition, partitions_of
from tidelog.assignors.sticky import sticky_assign


def uniform_assign(
    partitions_per_topic: Mapping[str, int], members: Mapping[str, Subscription]
) -> Assignment:
    if not members:
        return {}
    topics_of = {
        m: tuple(sorted(t for t in set(s.topics) if t in partitions_per_topic))
        for m, s in members.items()
    }
    if len(set(topics_of.values())) > 1:
        return sticky_assign(partitions_per_topic, members)
    (topics,) = set(topics_of.values())
    every = partitions_of(topics, partitions_per_topic)
    order = sorted(members)
    minimum, extra = divmod(len(every), len(order))
    taken: set[TopicPartition] = set()
    result: Assignment = {}
    unfilled: list[tuple[str, int]] = []
    for index, member in enumerate(order):
        quota = minimum + (1 if extra > 0 else 0)
        has_extra = extra > 0
        kept = []
        for tp in sorted(members[member].owned_partitions):
            if quota == 0:
                break
            valid = tp.topic in topics and tp.partition < partitions_per_topic[tp.topic]
            if valid and tp not in taken:
                kept.append(tp)
                taken.add(tp)
                quota -= 1
        if quota > 0 and has_extra and len(order) - index > extra:
            # Leave the extra partition to a later member, unless the ones left are exactly
            # those that must take one.
            quota -= 1
            has_extra = False
        if has_extra:
            extra -= 1
        if quota > 0:
            unfilled.append((member, quota))
        result[member] = kept
    free = iter(tp for tp in every if tp not in taken)
    for member, quota in unfilled:
        result[member] += [tp for _, tp in zip(range(quota), free, strict=False)]
    return result
