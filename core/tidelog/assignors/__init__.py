"""Consumer-group partition assignment, as Kafka's assignors compute it.

    assign(strategy, partitions_per_topic, members) -> {member_id: [TopicPartition, ...]}

``strategy`` is one of Kafka's assignor names: ``range``, ``roundrobin``, ``sticky``,
``cooperative-sticky``. ``members`` maps each member id to its :class:`Subscription`. Every member
appears in the result (possibly with no partitions); each list is sorted; the result does not
depend on the order of ``members``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tidelog.assignors.common import Assignment, Subscription, TopicPartition, sorted_assignment
from tidelog.assignors.eager import range_assign, round_robin_assign
from tidelog.assignors.sticky import cooperative_sticky_assign, sticky_assign
from tidelog.errors import InvalidRequestError

Assignor = Callable[[Mapping[str, int], Mapping[str, Subscription]], Assignment]

ASSIGNORS: dict[str, Assignor] = {
    "range": range_assign,
    "roundrobin": round_robin_assign,
    "sticky": sticky_assign,
    "cooperative-sticky": cooperative_sticky_assign,
}
COOPERATIVE = frozenset({"cooperative-sticky"})


def assign(
    strategy: str,
    partitions_per_topic: Mapping[str, int],
    members: Mapping[str, Subscription],
) -> dict[str, list[TopicPartition]]:
    if strategy not in ASSIGNORS:
        raise InvalidRequestError(
            f"unknown assignor {strategy!r}; tidelog has {', '.join(ASSIGNORS)}",
            kafka_error="INCONSISTENT_GROUP_PROTOCOL",
        )
    for topic, count in partitions_per_topic.items():
        if count < 0:
            raise InvalidRequestError(f"topic {topic!r} has {count} partitions")
    return sorted_assignment(ASSIGNORS[strategy](partitions_per_topic, members))


__all__ = ["ASSIGNORS", "COOPERATIVE", "Subscription", "TopicPartition", "assign"]
