"""Reconciling one member to its target (Kafka's CurrentAssignmentBuilder), at each heartbeat.

The member keeps ``assigned & target``. What else it holds must be revoked, and it stays at its
epoch (UNREVOKED_PARTITIONS) until a heartbeat no longer reports any of it as owned. Only then
does it move to the target's epoch and receive the rest of its target, less what another member
still holds: those come later (UNRELEASED_PARTITIONS), once released. So a partition is never
held by two members.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from tidelog.assignors import TopicPartition
from tidelog.groups.consumer.model import NONE, Member, MemberState, Partitions


@dataclass(frozen=True)
class Step:
    """What one heartbeat brings to reconciling a member."""

    target_epoch: int
    target: Partitions  # the member's part of the target
    held_elsewhere: Callable[[TopicPartition], bool]  # does another member hold it?
    owned: Partitions | None  # what the heartbeat says the member owns; None: not said
    subscribed: Callable[[str], bool]  # does the member subscribe to this topic id now?
    subscription_changed: bool
    now_ms: int


def reconcile(member: Member, step: Step) -> Member:
    """The member one step closer to its target. A member that joined after the target was
    computed is ahead of it, and waits for one that names it."""
    if step.target_epoch < member.epoch:
        return member
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if _owns(step.owned, member.revoking):
            return _unsubscribed(member, step) if step.subscription_changed else member
        # Revoked: on to the next epoch, though not past the target's (a subscription change
        # may have sent the member here before its new target exists).
        return _next(member, min(member.epoch + 1, step.target_epoch), step)
    if member.state == MemberState.STABLE and member.epoch == step.target_epoch:
        return _unsubscribed(member, step) if step.subscription_changed else member
    return _next(member, member.epoch, step)


def _next(member: Member, epoch: int, step: Step) -> Member:
    target = frozenset(tp for tp in step.target if step.subscribed(tp.topic))
    kept = member.assigned & target
    revoked = member.assigned - kept
    wanted = target - kept
    unreleased = frozenset(tp for tp in wanted if step.held_elsewhere(tp))
    if revoked and _owns(step.owned, revoked):
        return _revoking(member, epoch, kept, revoked, step.now_ms)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _at(member, step.target_epoch, state, kept | (wanted - unreleased), NONE)


def _unsubscribed(member: Member, step: Step) -> Member:
    """A subscription changed at the member's epoch: what it holds of topics it left is
    revoked at once, before any new target."""
    left = frozenset(tp for tp in member.assigned if not step.subscribed(tp.topic))
    if not left:
        return member
    revoking = member.revoking | left
    if _owns(step.owned, revoking):
        return _revoking(member, member.epoch, member.assigned - left, revoking, step.now_ms)
    return replace(member, assigned=member.assigned - left)


def _revoking(
    member: Member, epoch: int, kept: Partitions, revoked: Partitions, now_ms: int
) -> Member:
    changed = _at(member, epoch, MemberState.UNREVOKED_PARTITIONS, kept, revoked)
    # The rebalance timeout runs from each change, as Kafka's timer is scheduled anew.
    return replace(changed, revoke_by_ms=now_ms + member.rebalance_timeout_ms)


def _at(
    member: Member, epoch: int, state: MemberState, assigned: Partitions, revoking: Partitions
) -> Member:
    return replace(
        member,
        epoch=epoch,
        previous_epoch=member.epoch,  # Kafka's updateMemberEpoch, even to the same epoch
        state=state,
        assigned=assigned,
        revoking=revoking,
        revoke_by_ms=None,
    )


def _owns(owned: Partitions | None, revoking: Partitions) -> bool:
    """Does the member still hold any of ``revoking``? Not saying counts as holding."""
    return owned is None or bool(owned & revoking)
