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
from tidelog.assignors.uniform import uniform_assign
from tidelog.errors import InvalidRequestError

Assignor = Callable[[Mapping[str, int], Mapping[str, Subscription]], Assignment]

ASSIGNORS: dict[str, Assignor] = {
    "range": range_assign,
    "roundrobin": round_robin_assign,
    "sticky": sticky_assign,
    "cooperative-sticky": cooperative_sticky_assign,
}
COOPERATIVE = frozenset({"cooperative-sticky"})
# KIP-848's, run by the coordinator for consumer-protocol groups. Kafka's server-side range
# assigns exactly as the client-side one does: members static first, then by id.
SERVER_ASSIGNORS: dict[str, Assignor] = {
    "uniform": uniform_assign,
    "range": range_assign,
}
DEFAULT_SERVER_ASSIGNOR = "uniform"  # Kafka's group.consumer.assignors, first


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


def assign_target(
    assignor: str,
    partitions_per_topic: Mapping[str, int],
    members: Mapping[str, Subscription],
) -> dict[str, list[TopicPartition]]:
    """A consumer-protocol group's target assignment by one of SERVER_ASSIGNORS; each member's
    ``owned_partitions`` is its current target."""
    if assignor not in SERVER_ASSIGNORS:
        raise InvalidRequestError(
            f"unknown assignor {assignor!r}; tidelog has {', '.join(SERVER_ASSIGNORS)}",
            kafka_error="UNSUPPORTED_ASSIGNOR",
        )
    return sorted_assignment(SERVER_ASSIGNORS[assignor](partitions_per_topic, members))


__all__ = [
    "ASSIGNORS",
    "COOPERATIVE",
    "DEFAULT_SERVER_ASSIGNOR",
    "SERVER_ASSIGNORS",
    "Subscription",
    "TopicPartition",
    "assign",
    "assign_target",
]
