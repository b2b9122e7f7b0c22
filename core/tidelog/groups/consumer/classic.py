"""Members of the classic protocol in a consumer group, as Kafka 4 serves them (its
GroupMetadataManager's classicGroup*ToConsumerGroup): JoinGroup, SyncGroup, Heartbeat and
LeaveGroup over the consumer group's epochs, target and reconciliation.

- **JoinGroup** is a heartbeat that says everything: the member's subscription and what it
  still owns (a cooperative client lists it in its subscription; an eager one has given
  everything up). It is answered with the member's epoch as the generation.
- **SyncGroup** answers the member's assigned partitions, or REBALANCE_IN_PROGRESS if the
  group has moved to an epoch the member has not joined.
- **Heartbeat** keeps the session and answers REBALANCE_IN_PROGRESS when the member must join
  again to move on: the group's epoch is ahead of it, it has partitions to give up, or none of
  the partitions it waits for is held any more.
- **LeaveGroup** removes it at once, static or not.

A classic member's generation is its member epoch; its session is its own JoinGroup's.

**Upgrading** (``upgrade``): a consumer-protocol member joining a classic group that has
members turns it into a consumer group, as Kafka's online upgrade does: each classic member
keeps its partitions and its generation as its epoch, and the target starts as the classic
assignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from tidelog.assignors import TopicPartition
from tidelog.groups.consumer.heartbeat import (
    Config,
    Heartbeat,
    Outcome,
    Topics,
    heartbeat,
    without,
)
from tidelog.groups.consumer.model import (
    JOIN_EPOCH,
    NONE,
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    Member,
    MemberState,
    Partitions,
    Target,
    UnknownConsumerMemberError,
    subscribed_topics,
)
from tidelog.groups.model import (
    FencedInstanceError,
    Group,
    IllegalGenerationError,
    RebalanceInProgressError,
)


@dataclass(frozen=True)
class ClassicJoin:
    member_id: str
    instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[str, ...]  # the assignors it names, in its order
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...]  # by topic name, from its subscription (v1+)
    client_id: str = ""
    client_host: str = ""


def join(
    group: ConsumerGroup, request: ClassicJoin, topics: Topics, config: Config, now_ms: int
) -> Outcome:
    """The member joined or rejoined, and reconciled to the target the group has. A static
    member joining under a new id replaces its old self, as a classic group fences it."""
    ids = {name: topic_id for name, (topic_id, _) in topics.items()}
    owned = frozenset(TopicPartition(ids[t], p) for t, p in request.owned if t in ids)
    if request.instance_id is not None:
        old = group.static_member(request.instance_id)
        if old is not None and old.member_id != request.member_id:
            gone = replace(old, epoch=STATIC_LEAVE_EPOCH, revoking=NONE)
            group = replace(group, members={**group.members, old.member_id: gone})
    outcome = heartbeat(
        group,
        Heartbeat(
            member_id=request.member_id,
            epoch=JOIN_EPOCH,
            instance_id=request.instance_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            topics=request.topics,
            owned=owned,
            client_id=request.client_id,
            client_host=request.client_host,
        ),
        topics,
        config,
        now_ms,
    )
    member = replace(
        outcome.group.members[outcome.member_id],
        classic_session_ms=request.session_timeout_ms,
        protocols=request.protocols,
    )
    joined = replace(outcome.group, members={**outcome.group.members, member.member_id: member})
    return replace(outcome, group=joined)


def member_of(group: ConsumerGroup, member_id: str, instance_id: str | None = None) -> Member:
    """The classic member a SyncGroup, Heartbeat or LeaveGroup names (Kafka's
    validateConsumerGroupMember and throwIfMemberDoesNotUseClassicProtocol)."""
    if instance_id is not None:
        member = group.static_member(instance_id)
        if member is None:
            raise UnknownConsumerMemberError(
                f"Member with instance id {instance_id} is not a member of group {group.name}."
            )
        if member_id and member.member_id != member_id:
            raise FencedInstanceError(
                f"Static member {member_id} with instance id {instance_id} was replaced by "
                f"member {member.member_id}."
            )
    else:
        found = group.members.get(member_id)
        if found is None:
            raise UnknownConsumerMemberError(
                f"Member {member_id} is not a member of group {group.name}."
            )
        member = found
    if not member.is_classic:
        raise UnknownConsumerMemberError(
            f"Member {member.member_id} uses the consumer protocol, not the classic one."
        )
    return member


def sync(group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int) -> Member:
    """The member whose assignment a SyncGroup answers: REBALANCE_IN_PROGRESS if the group has
    moved to an epoch it has not joined (unless it has partitions to give up first)."""
    member = member_of(group, member_id, instance_id)
    _same_generation(member, generation)
    if group.epoch > member.epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
        raise _rejoin(group, member)
    return member


def beat(
    group: ConsumerGroup,
    member_id: str,
    instance_id: str | None,
    generation: int,
    *,
    topics: Topics,
    now_ms: int,
) -> tuple[ConsumerGroup, bool]:
    """The group with the member's session renewed, and whether it must join again. A
    subscribed topic that appeared or grew moves the group epoch here too, as a consumer
    member's heartbeat does: a classic client that does not watch the topic's metadata
    still rejoins for it."""
    member = member_of(group, member_id, instance_id)
    _same_generation(member, generation)
    alive = replace(member, heartbeat_ms=now_ms)
    group = replace(group, members={**group.members, member.member_id: alive})
    wanted = subscribed_topics(group.members.values(), topics)
    if group.epoch == group.target.epoch and wanted != dict(group.target.topics):
        group = replace(group, epoch=group.epoch + 1)
    return group, must_rejoin(group, member)


def must_rejoin(group: ConsumerGroup, member: Member) -> bool:
    """Kafka's three reasons: the group epoch is ahead of the member's; it has partitions to
    give up; or none of the partitions it waits for is held any more (its JoinGroup then
    waits for a target still being computed: tidelog.kafka.mixed_groups)."""
    if member.epoch < group.epoch or member.state == MemberState.UNREVOKED_PARTITIONS:
        return True
    if member.state != MemberState.UNRELEASED_PARTITIONS:
        return False
    held = {tp for m in group.members.values() if m.member_id != member.member_id for tp in m.held}
    waiting = group.target.of(member.member_id) - member.assigned
    return not waiting & held


def leave(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroup:
    """LeaveGroup: the member is gone at once, static or not (Kafka's
    classicGroupLeaveToConsumerGroup fences it)."""
    return without(group, member_of(group, member_id, instance_id).member_id)


def assigned_by_name(member: Member, names: Mapping[str, str]) -> list[TopicPartition]:
    """The member's partitions as a classic client reads them: by topic name (a topic deleted
    meanwhile is left out)."""
    return sorted(TopicPartition(names[t], p) for t, p in member.assigned if t in names)


def upgrade(classic: Group, topics: Topics, now_ms: int, incarnation: str) -> ConsumerGroup:
    """A classic group with members as a consumer group: each member keeps its partitions of
    the last assignment and that generation as its epoch; the target is that assignment."""
    last = classic.assignment
    epoch = last.generation if last is not None else 0
    members: dict[str, Member] = {}
    targets: dict[str, Partitions] = {}
    for member_id, old in classic.members.items():
        held = NONE
        if last is not None:
            held = frozenset(
                TopicPartition(topics[t][0], p) for t, p in last.of(member_id) if t in topics
            )
        members[member_id] = Member(
            member_id=member_id,
            epoch=epoch,
            previous_epoch=epoch,
            assigned=held,
            instance_id=old.group_instance_id,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            topics=old.topics,
            pattern=old.topic_pattern,
            client_id=old.client_id,
            client_host=old.client_host,
            heartbeat_ms=old.heartbeat_ms,
            classic_session_ms=old.session_timeout_ms,
            protocols=old.assignors,
        )
        targets[member_id] = held
    subscribed = subscribed_topics(members.values(), topics)
    return ConsumerGroup(
        classic.name,
        epoch=epoch,
        version=classic.version,
        members=members,
        target=Target(epoch=epoch, members=targets, topics=subscribed),
        epoch_ms=now_ms,
        incarnation=incarnation,
    )


def _same_generation(member: Member, generation: int) -> None:
    if generation != member.epoch:
        raise IllegalGenerationError(
            f"The received generation id {generation} does not match the expected member "
            f"epoch {member.epoch}."
        )


def _rejoin(group: ConsumerGroup, member: Member) -> RebalanceInProgressError:
    return RebalanceInProgressError(
        f"A new rebalance is triggered in group {group.name} and member {member.member_id} "
        "should rejoin to catch up.",
        generation=group.epoch,
        state=group.state.value,
    )
