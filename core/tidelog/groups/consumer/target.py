"""A consumer group's target assignment for its epoch: what the assignment state machine's task
computes (the assignor of KIP-848 running on the coordinator's side)."""

from __future__ import annotations

from tidelog.assignors import Subscription, assign_target
from tidelog.groups.consumer.heartbeat import Topics
from tidelog.groups.consumer.model import ConsumerGroup, Target, subscribed_topics

DEFAULT_ASSIGNOR = "uniform"  # Kafka's: the first of group.consumer.assignors


def compute_target(group: ConsumerGroup, topics: Topics) -> Target:
    """The assignor's answer for ``group.epoch``: each member's subscribed topics, by id, with
    its current target as what it owns (the assignors are sticky to it)."""
    partitions = subscribed_topics(group.members.values(), topics)
    subscriptions = {
        member_id: Subscription(
            [topic_id for name, (topic_id, _) in topics.items() if member.subscribes(name)],
            owned_partitions=sorted(group.target.of(member_id)),
            group_instance_id=member.instance_id,
        )
        for member_id, member in group.members.items()
    }
    assignor = group.assignor(DEFAULT_ASSIGNOR)
    assigned = assign_target(assignor, partitions, subscriptions)
    return Target(
        epoch=group.epoch,
        members={member_id: frozenset(tps) for member_id, tps in assigned.items()},
        topics=partitions,
        assignor=assignor,
    )
