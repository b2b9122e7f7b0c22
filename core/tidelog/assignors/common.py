"""What every assignor shares: the types, and the orderings Kafka sorts by."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True)
class Subscription:
    """One member's subscription, as its JoinGroup carries it.

    ``owned_partitions`` and ``generation`` are what the member held in the generation it last
    joined (the sticky assignors keep them where they can); ``group_instance_id`` marks a static
    member (KIP-345).
    """

    topics: Sequence[str]
    owned_partitions: Sequence[TopicPartition] = ()
    generation: int = -1
    group_instance_id: str | None = None
    topic_set: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", tuple(self.topics))
        object.__setattr__(
            self, "owned_partitions", tuple(TopicPartition(*tp) for tp in self.owned_partitions)
        )
        object.__setattr__(self, "topic_set", frozenset(self.topics))


Assignment = dict[str, list[TopicPartition]]


def member_order(members: Mapping[str, Subscription]) -> list[str]:
    """Kafka's MemberInfo order: static members by group.instance.id first, then dynamic ones
    by member id."""
    return sorted(
        members,
        key=lambda m: (
            (0, members[m].group_instance_id or "", m)
            if members[m].group_instance_id is not None
            else (1, "", m)
        ),
    )


def partitions_of(
    topics: Iterable[str], partitions_per_topic: Mapping[str, int]
) -> list[TopicPartition]:
    """Every partition of the topics that exist, sorted by topic then partition."""
    return [
        TopicPartition(topic, p)
        for topic in sorted(set(topics))
        if topic in partitions_per_topic
        for p in range(partitions_per_topic[topic])
    ]


def sorted_assignment(assignment: Mapping[str, Iterable[TopicPartition]]) -> Assignment:
    return {member: sorted(partitions) for member, partitions in assignment.items()}


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: ``s[0]*31^(n-1) + ...`` over UTF-16 code units, 32 bits."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_order(keys: Iterable[str]) -> list[str]:
    """The order a ``java.util.HashMap`` of these keys iterates in, where Kafka's assignors walk
    one and their results depend on it: by bucket (``(h ^ h >>> 16) & (capacity - 1)``, the
    capacity the map grows to) and, within a bucket, by name (Java would use insertion order;
    buckets rarely hold two members). A function of the key set alone."""
    names = sorted(keys)
    capacity = 16
    while len(names) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = java_string_hash(name)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(names, key=bucket)
