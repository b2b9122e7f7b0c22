"""A consumer group of KIP-848's protocol, as values: its epochs, members and target assignment.

Partitions are named by topic id, as the protocol names them: a topic deleted and created again
under its name is another topic, and a member never confuses the two.

- The **group epoch** moves on whenever what the assignor would compute changes: a member
  joins, leaves or changes its subscription, or a subscribed topic appears or grows.
- The **target assignment** is the assignor's answer for one group epoch (the assignment
  epoch). It lags the group epoch while the state machine computes it.
- Each **member** has an epoch of its own and reconciles to the target one heartbeat at a
  time: it keeps what it has of its target, gives up the rest, and receives a partition only
  once no other member holds it (tidelog.groups.consumer.reconcile).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from tidelog.assignors import TopicPartition
from tidelog.errors import ConflictError, InvalidRequestError, NotFoundError
from tidelog.groups.model import IllegalGenerationError

Partitions = frozenset[TopicPartition]  # (topic id, partition)
NONE: Partitions = frozenset()

JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH = 0, -1, -2  # what a heartbeat's epoch asks


class MemberState(StrEnum):
    """Kafka's MemberState: where the member is in reconciling to its target."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"  # it must give partitions up first
    UNRELEASED_PARTITIONS = "unreleased_partitions"  # partitions of its target are still held


class GroupState(StrEnum):
    """Kafka's ConsumerGroupState, as ListGroups and ConsumerGroupDescribe name it."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class FencedMemberEpochError(ConflictError):
    default_kafka_error = "FENCED_MEMBER_EPOCH"


class StaleMemberEpochError(ConflictError):
    default_kafka_error = "STALE_MEMBER_EPOCH"


class UnreleasedInstanceIdError(ConflictError):
    default_kafka_error = "UNRELEASED_INSTANCE_ID"


class UnknownConsumerMemberError(NotFoundError):
    default_kafka_error = "UNKNOWN_MEMBER_ID"


@dataclass(frozen=True)
class Member:
    member_id: str
    epoch: int = 0
    previous_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Partitions = NONE
    revoking: Partitions = NONE  # assigned before, to give up; still held until it says so
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = 300_000
    topics: tuple[str, ...] = ()  # subscribed topic names
    pattern: str | None = None  # subscribed regular expression (v1), matched in full
    assignor: str | None = None  # group.remote.assignor; None: the group's default
    client_id: str = ""
    client_host: str = ""
    heartbeat_ms: int = 0  # its last heartbeat, which its session counts from
    revoke_by_ms: int | None = None  # while it holds partitions to give up: its deadline
    # A member of the classic protocol (tidelog.groups.consumer.classic): its own session
    # timeout, and the assignors its JoinGroup named, in its order.
    classic_session_ms: int | None = None
    protocols: tuple[str, ...] = ()

    @property
    def is_classic(self) -> bool:
        return self.classic_session_ms is not None

    def subscribes(self, name: str) -> bool:
        if name in self.topics:
            return True
        return self.pattern is not None and _matches(self.pattern, name)

    @property
    def held(self) -> Partitions:
        """What the member may still be consuming: its assignment and what it must give up."""
        return self.assigned | self.revoking


@dataclass(frozen=True)
class Target:
    """The assignor's answer for one group epoch, and the topics it was computed from."""

    epoch: int = 0
    members: Mapping[str, Partitions] = field(default_factory=dict)
    topics: Mapping[str, int] = field(default_factory=dict)  # topic id -> partitions
    assignor: str | None = None

    def of(self, member_id: str) -> Partitions:
        return self.members.get(member_id, NONE)


@dataclass(frozen=True)
class ConsumerGroup:
    name: str
    epoch: int = 0  # the group epoch
    version: int = 0  # the compare-and-set of its meta item; 0: not stored
    members: Mapping[str, Member] = field(default_factory=dict)
    target: Target = field(default_factory=Target)
    epoch_ms: int = 0  # when the group moved to its epoch
    incarnation: str = ""  # drawn when created (tidelog.groups.rebalancer)

    @property
    def exists(self) -> bool:
        return self.version > 0

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.target.epoch < self.epoch:
            return GroupState.ASSIGNING
        if any(
            m.epoch != self.target.epoch or m.state != MemberState.STABLE
            for m in self.members.values()
        ):
            return GroupState.RECONCILING
        return GroupState.STABLE

    def owner_epochs(self) -> dict[TopicPartition, int]:
        """Each partition some member holds, and that member's epoch (Kafka's current
        partition epoch): a partition here is given to nobody else."""
        return {tp: m.epoch for m in self.members.values() for tp in m.held}

    def member_at(self, member_id: str | None, epoch: int) -> Member:
        """Kafka's validateMemberEpoch, for commits and fetches that name a member: the
        member, at the epoch it names (STALE_MEMBER_EPOCH; ILLEGAL_GENERATION for a classic
        member, whose epoch is its generation)."""
        member = self.members.get(member_id or "")
        if member is None:
            raise UnknownConsumerMemberError(
                f"Member {member_id} is not a member of group {self.name}."
            )
        if epoch != member.epoch:
            said = "generation id" if member.is_classic else "member epoch"
            error = IllegalGenerationError if member.is_classic else StaleMemberEpochError
            raise error(
                f"The received {said} {epoch} does not match the expected member epoch "
                f"{member.epoch}."
            )
        return member

    def static_member(self, instance_id: str) -> Member | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def assignor(self, default: str) -> str:
        """Kafka's choice: the assignor most members name, ties to the first by name; the
        default when nobody names one."""
        votes: dict[str, int] = {}
        for member in self.members.values():
            if member.assignor is not None:
                votes[member.assignor] = votes.get(member.assignor, 0) + 1
        if not votes:
            return default
        return min(votes, key=lambda name: (-votes[name], name))


def subscribed_topics(
    members: Iterable[Member], topics: Mapping[str, tuple[str, int]]
) -> dict[str, int]:
    """The topics (id -> partitions) that any member subscribes to, of ``topics`` (name ->
    (id, partitions)): what a target is computed from."""
    members = list(members)
    return {
        topic_id: count
        for name, (topic_id, count) in topics.items()
        if any(m.subscribes(name) for m in members)
    }


def validate_pattern(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise InvalidRequestError(
            f"SubscribedTopicRegex {pattern!r} is not a regular expression: {exc}",
            kafka_error="INVALID_REQUEST",
        ) from exc
    return pattern


def _matches(pattern: str, name: str) -> bool:
    return re.fullmatch(pattern, name) is not None
