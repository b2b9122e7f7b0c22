"""One ConsumerGroupHeartbeat, as values: the group before, the request, the topics and the time
in; the group after and the answer out (Kafka's GroupMetadataManager.consumerGroupHeartbeat).

1. The member joins, is found, or leaves; its epoch is checked (FENCED_MEMBER_EPOCH).
2. Its new fields are kept; fields sent as null keep their last value.
3. The group epoch moves on if the member joined, left or changed its subscription, or a
   subscribed topic appeared or grew: the caller then starts the assignment state machine for
   that epoch. The target lags until it answers; members reconcile to the target they have.
4. The member is reconciled (tidelog.groups.consumer.reconcile).

Sessions and rebalance timeouts are judged first, at the request's arrival: a member silent
past its session, or holding what it must give up past its rebalance timeout, is removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tidelog.assignors import TopicPartition
from tidelog.errors import InvalidRequestError
from tidelog.groups.consumer.model import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    NONE,
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    FencedMemberEpochError,
    Member,
    MemberState,
    Partitions,
    UnknownConsumerMemberError,
    UnreleasedInstanceIdError,
    subscribed_topics,
    validate_pattern,
)
from tidelog.groups.consumer.reconcile import Step, reconcile
from tidelog.groups.model import FencedInstanceError

Topics = Mapping[str, tuple[str, int]]  # name -> (topic id, partitions)


@dataclass(frozen=True)
class Config:
    """Kafka's group.consumer.* broker configs."""

    session_timeout_ms: int = 45_000
    # Also the timeout librdkafka gives its next heartbeat request: never answer a short one.
    heartbeat_interval_ms: int = 5_000
    assignors: Sequence[str] = ("uniform", "range")


@dataclass(frozen=True)
class Heartbeat:
    member_id: str
    epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1  # -1: unchanged
    topics: tuple[str, ...] | None = None  # None: unchanged
    pattern: str | None = None
    assignor: str | None = None
    owned: Partitions | None = None  # None: unchanged
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class Outcome:
    group: ConsumerGroup
    member_id: str
    epoch: int  # the member's epoch now; -1 or -2 once it left
    assignment: Partitions | None  # sent when the request was full or the assignment moved


def validate(request: Heartbeat, config: Config) -> None:
    """Kafka's checks of a request, before the group is read (INVALID_REQUEST)."""
    if not request.member_id:
        raise InvalidRequestError("MemberId can't be empty.")  # v1: clients name themselves
    if request.instance_id == "":
        raise InvalidRequestError("InstanceId can't be empty.")
    if request.rack_id == "":
        raise InvalidRequestError("RackId can't be empty.")
    if request.epoch == JOIN_EPOCH:
        if request.rebalance_timeout_ms == -1:
            raise InvalidRequestError("RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or request.owned:
            raise InvalidRequestError("TopicPartitions must be empty when (re-)joining.")
        if request.topics is None and request.pattern is None:
            raise InvalidRequestError(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                "(re-)joining."
            )
    elif request.epoch == STATIC_LEAVE_EPOCH:
        if request.instance_id is None:
            raise InvalidRequestError("InstanceId can't be null.")
    elif request.epoch < STATIC_LEAVE_EPOCH:
        raise InvalidRequestError("MemberEpoch is invalid.")
    if request.pattern:
        validate_pattern(request.pattern)
    if request.assignor is not None and request.assignor not in config.assignors:
        raise InvalidRequestError(
            f"ServerAssignor {request.assignor} is not supported. Supported assignors: "
            f"{', '.join(config.assignors)}.",
            kafka_error="UNSUPPORTED_ASSIGNOR",
        )


def expire(group: ConsumerGroup, config: Config, now_ms: int) -> ConsumerGroup:
    """The group without members past their session (a classic member's own) or their
    rebalance timeout."""
    gone = [
        m.member_id
        for m in group.members.values()
        if m.heartbeat_ms + (m.classic_session_ms or config.session_timeout_ms) < now_ms
        or (m.revoke_by_ms is not None and m.revoke_by_ms < now_ms)
    ]
    for member_id in gone:
        group = without(group, member_id)
    return group


def without(group: ConsumerGroup, member_id: str) -> ConsumerGroup:
    """The member fenced: its partitions are free, and the group moves to a new epoch."""
    members = {k: v for k, v in group.members.items() if k != member_id}
    target = replace(
        group.target, members={k: v for k, v in group.target.members.items() if k != member_id}
    )
    return replace(group, epoch=group.epoch + 1, members=members, target=target)


def heartbeat(
    group: ConsumerGroup, request: Heartbeat, topics: Topics, config: Config, now_ms: int
) -> Outcome:
    """``group`` as loaded, its sessions already judged (``expire``)."""
    if request.epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        return _leave(group, request, now_ms)
    member, group = _member(group, request)
    changed = _updated(member, request, now_ms)
    subscription_changed = (changed.topics, changed.pattern) != (member.topics, member.pattern)
    joined = request.member_id not in group.members
    members = {**group.members, changed.member_id: changed}
    epoch = group.epoch
    wanted = subscribed_topics(members.values(), topics)
    if epoch == 0 or joined or subscription_changed:
        epoch += 1
    elif epoch == group.target.epoch and wanted != dict(group.target.topics):
        epoch += 1  # a subscribed topic appeared, grew or went away
    if joined:
        # Its epoch is the group's at once, never 0: the target naming it comes from the state
        # machine, and until then it has nothing (Kafka computes the target in the heartbeat).
        changed = replace(changed, epoch=epoch, state=MemberState.UNRELEASED_PARTITIONS)
        members[changed.member_id] = changed
    group = replace(group, epoch=epoch, members=members)
    subscribed_ids = {
        topic_id for name, (topic_id, _) in topics.items() if changed.subscribes(name)
    }
    held = group.owner_epochs()
    step = Step(
        target_epoch=group.target.epoch,
        target=group.target.of(changed.member_id),
        held_elsewhere=lambda tp: tp in held and tp not in changed.held,
        owned=request.owned,
        subscribed=lambda topic_id: topic_id in subscribed_ids,
        subscription_changed=subscription_changed,
        now_ms=now_ms,
    )
    reconciled = reconcile(changed, step)
    group = replace(group, members={**group.members, reconciled.member_id: reconciled})
    full = (
        request.epoch == JOIN_EPOCH
        or (
            request.rebalance_timeout_ms != -1
            and (request.topics is not None or request.pattern is not None)
            and request.owned is not None
        )
        or reconciled.assigned != member.assigned
    )
    return Outcome(
        group=group,
        member_id=reconciled.member_id,
        epoch=reconciled.epoch,
        assignment=reconciled.assigned if full else None,
    )


def _member(group: ConsumerGroup, request: Heartbeat) -> tuple[Member, ConsumerGroup]:
    """The member the request is from, created when it joins; a static member rejoining under
    a new id takes its old self's place (once that one has left, -2)."""
    if request.instance_id is not None:
        existing = group.static_member(request.instance_id)
        if request.epoch == JOIN_EPOCH:
            if existing is None:
                return group.members.get(request.member_id) or Member(request.member_id), group
            if existing.member_id == request.member_id:  # rejoining as itself (KAFKA-19233)
                return existing, group
            if existing.epoch != STATIC_LEAVE_EPOCH:
                raise UnreleasedInstanceIdError(
                    f"Static member {existing.member_id} with instance id "
                    f"{request.instance_id} is not released yet."
                )
            moved = replace(existing, member_id=request.member_id, epoch=0, previous_epoch=0)
            return moved, _replaced(group, existing.member_id, moved)
        if existing is None:
            raise UnknownConsumerMemberError(f"Instance id {request.instance_id} is unknown.")
        if existing.member_id != request.member_id:
            raise FencedInstanceError(
                f"Static member {request.member_id} with instance id {request.instance_id} was "
                f"replaced by member {existing.member_id}."
            )
        _check_epoch(existing, request)
        return existing, group
    member = group.members.get(request.member_id)
    if member is None:
        if request.epoch != JOIN_EPOCH:
            raise UnknownConsumerMemberError(
                f"Member {request.member_id} is not a member of group {group.name}."
            )
        return Member(request.member_id), group
    _check_epoch(member, request)
    return member, group


def _check_epoch(member: Member, request: Heartbeat) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: an epoch ahead is fenced; one behind
    is too, unless it is the previous epoch with no more than the member's assignment (its
    answer was lost). Epoch 0 is a fenced member rejoining under its id (KAFKA-19233)."""
    if request.epoch == JOIN_EPOCH:
        return
    if request.epoch > member.epoch or (
        request.epoch < member.epoch
        and (
            request.epoch != member.previous_epoch
            or request.owned is None
            or not request.owned <= member.assigned
        )
    ):
        raise FencedMemberEpochError(
            f"The consumer group member has epoch {request.epoch}; the group coordinator knows "
            f"{member.epoch}. The member must abandon all its partitions and rejoin."
        )


def _replaced(group: ConsumerGroup, old_id: str, new: Member) -> ConsumerGroup:
    members = {k: v for k, v in group.members.items() if k != old_id}
    members[new.member_id] = new
    targets = dict(group.target.members)
    if old_id in targets:
        targets[new.member_id] = targets.pop(old_id)
    return replace(group, members=members, target=replace(group.target, members=targets))


def _updated(member: Member, request: Heartbeat, now_ms: int) -> Member:
    """The member with what the request says; null fields keep their value."""
    return replace(
        member,
        instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(
            request.rebalance_timeout_ms
            if request.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms
        ),
        topics=tuple(sorted(set(request.topics))) if request.topics is not None else member.topics,
        pattern=(request.pattern or None) if request.pattern is not None else member.pattern,
        assignor=request.assignor if request.assignor is not None else member.assignor,
        client_id=request.client_id,
        client_host=request.client_host,
        heartbeat_ms=now_ms,
    )


def _leave(group: ConsumerGroup, request: Heartbeat, now_ms: int) -> Outcome:
    if request.instance_id is None:
        member = group.members.get(request.member_id)
        if member is None:
            raise UnknownConsumerMemberError(
                f"Member {request.member_id} is not a member of group {group.name}."
            )
        return _left(without(group, member.member_id), member.member_id, LEAVE_EPOCH)
    member = group.static_member(request.instance_id)
    if member is None:
        raise UnknownConsumerMemberError(f"Instance id {request.instance_id} is unknown.")
    if member.member_id != request.member_id:
        raise FencedInstanceError(
            f"Static member {request.member_id} with instance id {request.instance_id} was "
            f"replaced by member {member.member_id}."
        )
    if request.epoch == LEAVE_EPOCH:
        return _left(without(group, member.member_id), member.member_id, LEAVE_EPOCH)
    # -2: gone for now. Its partitions wait one session for it, from now (or a new instance of
    # it). The session restarts as at every heartbeat Kafka hears, and the member's item is
    # written conditional on its heartbeat: a heartbeat it sent before leaving, read before
    # this and landing after, would otherwise bring it back to life (it finds this changed).
    paused = replace(member, epoch=STATIC_LEAVE_EPOCH, revoking=NONE, heartbeat_ms=now_ms)
    group = replace(group, members={**group.members, member.member_id: paused})
    return _left(group, member.member_id, STATIC_LEAVE_EPOCH)


def _left(group: ConsumerGroup, member_id: str, epoch: int) -> Outcome:
    return Outcome(group, member_id, epoch, None)


def owned_partitions(pairs: Sequence[tuple[str, Sequence[int]]]) -> Partitions:
    """A request's TopicPartitions as a set (topic id, partition)."""
    return frozenset(TopicPartition(topic, p) for topic, ps in pairs for p in ps)
