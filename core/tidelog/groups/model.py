"""Consumer groups, the pure part: Kafka's states, members, protocol selection, expiry, and the
per-partition rules of offset commits. Everything here takes values and returns values."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from tidelog.assignors import COOPERATIVE, Subscription, TopicPartition
from tidelog.errors import ConflictError, InvalidRequestError, NotFoundError

MAX_METADATA_BYTES = 4096  # Kafka's offset.metadata.max.bytes
MAX_GROUP_ID_LENGTH = 255
CONSUMER_PROTOCOL_TYPE = "consumer"  # Kafka's consumers' JoinGroup protocol type


class State(StrEnum):
    """Kafka's group states (GroupCoordinator's GroupState)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


REBALANCING = frozenset({State.PREPARING_REBALANCE, State.COMPLETING_REBALANCE})


@dataclass(frozen=True)
class JoinRequest:
    topics: Sequence[str] = ()
    topic_pattern: str | None = None
    assignors: Sequence[str] = ("range",)
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = 300_000
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    protocol_type: str = CONSUMER_PROTOCOL_TYPE
    metadata: Sequence[bytes] = ()
    """Each of ``assignors``' metadata, as a Kafka client sent it: kept when the client may
    lead (tidelog.groups.joining.leader_assigns), for its leader to read."""


@dataclass(frozen=True)
class Joined:
    member_id: str
    generation: int
    state: State


@dataclass(frozen=True)
class Heartbeat:
    state: State
    generation: int
    assignment: tuple[TopicPartition, ...]


# -- errors, with Kafka's names ------------------------------------------------------------


class UnknownMemberError(NotFoundError):
    default_kafka_error = "UNKNOWN_MEMBER_ID"


class IllegalGenerationError(ConflictError):
    default_kafka_error = "ILLEGAL_GENERATION"


class RebalanceInProgressError(ConflictError):
    default_kafka_error = "REBALANCE_IN_PROGRESS"

    def __init__(
        self,
        message: str,
        *,
        generation: int,
        state: str,
        keep: Sequence[TopicPartition] = (),
        kept_from: int = -1,
    ) -> None:
        """``keep``: what a cooperative member keeps, its partitions in generation
        ``kept_from``, the last one assigned (-1: none), whose commits the group still takes."""
        super().__init__(message)
        self.generation = generation
        self.state = state
        self.keep = list(keep)
        self.kept_from = kept_from

    def to_dict(self) -> dict[str, object]:
        return {
            **super().to_dict(),
            "generation_id": self.generation,
            "state": self.state,
            "assignment": group_partitions(self.keep),
            "assignment_generation_id": self.kept_from,
        }


class FencedInstanceError(ConflictError):
    default_kafka_error = "FENCED_INSTANCE_ID"


class InconsistentProtocolError(ConflictError):
    """The member's assignors and the group's have none in common (the group's state)."""

    default_kafka_error = "INCONSISTENT_GROUP_PROTOCOL"


class UnknownAssignorError(InvalidRequestError):
    """The request names no assignor, or one tidelog does not have."""

    default_kafka_error = "INCONSISTENT_GROUP_PROTOCOL"


class NonEmptyGroupError(ConflictError):
    default_kafka_error = "NON_EMPTY_GROUP"


class GroupNotFoundError(NotFoundError):
    default_kafka_error = "GROUP_ID_NOT_FOUND"


# -- members and the group -----------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    member_id: str
    topics: tuple[str, ...]
    topic_pattern: str | None
    assignors: tuple[str, ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    heartbeat_ms: int
    group_instance_id: str | None = None
    joined_generation: int = 0
    """The newest generation the member has joined: by joining, or by a heartbeat naming it
    during the rebalance, which says it gave up what it must (Kafka's JoinGroup)."""
    client_id: str = ""
    client_host: str = ""
    """Who the member says it is (a Kafka client's id) and where it connected from, as Kafka's
    DescribeGroups answers them; empty over HTTP."""
    metadata: tuple[bytes, ...] = ()
    """Each assignor's metadata as the member's client sent it, where a member of the group may
    run the assignor (tidelog.groups.joining); empty where tidelog runs it."""

    def subscribes(self, topic: str) -> bool:
        if topic in self.topics:
            return True
        return (
            self.topic_pattern is not None and re.fullmatch(self.topic_pattern, topic) is not None
        )

    def same_subscription(self, other: Member) -> bool:
        return (self.topics, self.topic_pattern, self.assignors, self.metadata) == (
            other.topics,
            other.topic_pattern,
            other.assignors,
            other.metadata,
        )

    def metadata_of(self, protocol: str | None) -> bytes:
        """The member's metadata for ``protocol``, as its client sent it."""
        for assignor, metadata in zip(self.assignors, self.metadata, strict=False):
            if assignor == protocol:
                return metadata
        return b""


@dataclass(frozen=True)
class Assignment:
    generation: int
    protocol: str | None
    members: Mapping[str, tuple[TopicPartition, ...]]
    partitions: Mapping[str, int]  # the topic sizes it was computed for
    sent: Mapping[str, bytes] = field(default_factory=dict)
    """Each member's assignment as the group's leader sent it, where a member assigns
    (tidelog.groups.joining): what SyncGroup hands each member, byte for byte."""

    def of(self, member_id: str) -> tuple[TopicPartition, ...]:
        return tuple(self.members.get(member_id, ()))


@dataclass(frozen=True)
class Committed:
    topic: str
    partition: int
    offset: int
    metadata: str
    commit_ms: int
    leader_epoch: int = -1  # the epoch the consumer fetched that offset under; -1: unknown


@dataclass(frozen=True)
class Group:
    name: str
    state: State
    generation: int
    protocol: str | None
    version: int
    members: Mapping[str, Member] = field(default_factory=dict)
    assignment: Assignment | None = None
    fenced: Mapping[str, str] = field(default_factory=dict)  # old member id -> instance id
    pending: Mapping[str, int] = field(default_factory=dict)
    """Member ids handed out before the member joins (Kafka's MEMBER_ID_REQUIRED, KIP-394),
    each until its session would have run out (ms)."""
    rebalance_ms: int = 0  # when the current generation began
    stable_ms: int = 0
    """When the current generation was assigned: every member's session counts from then at
    least, as Kafka reschedules each member's session when its group turns Stable."""
    assignors: frozenset[str] = frozenset()
    """The assignors every member supports, as its meta item keeps them (a new member's join
    that reads no other member needs them; empty: none, or not kept yet)."""
    incarnation: str = ""
    """Drawn when the group is created: its generations count from 1 again after a deletion,
    and this keeps their state machine executions apart (tidelog.groups.rebalancer)."""
    protocol_type: str = CONSUMER_PROTOCOL_TYPE
    """What kind of group its members' JoinGroup says it is: "consumer" for Kafka's
    consumers and Kafka Streams, "connect" for Kafka Connect's workers, any other for a
    client's own use of group membership."""
    leader: str | None = None
    """The member that runs the assignor, where a member does (tidelog.groups.joining)."""
    gone_since_ms: int = 0
    """Since when a topic of the assignment has been found gone (0: none is), while the group
    waits GONE_GRACE_MS before it rebalances without it."""

    @property
    def exists(self) -> bool:
        return self.version > 0

    def current_assignment(self) -> Assignment | None:
        """The assignment of this generation, once written."""
        if self.assignment is not None and self.assignment.generation == self.generation:
            return self.assignment
        return None

    def static_member(self, instance_id: str) -> Member | None:
        return next((m for m in self.members.values() if m.group_instance_id == instance_id), None)


def empty_group(name: str) -> Group:
    return Group(name, State.EMPTY, 0, None, 0)


# -- requests --------------------------------------------------------------------------------


def validate_group_id(group: str) -> str:
    if not group or len(group) > MAX_GROUP_ID_LENGTH or not group.isprintable():
        raise InvalidRequestError(
            f"a group id is 1-{MAX_GROUP_ID_LENGTH} printable characters",
            kafka_error="INVALID_GROUP_ID",
        )
    return group


@dataclass(frozen=True)
class Limits:
    """Kafka's broker bounds on a member's session (group.min/max.session.timeout.ms)."""

    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000


def common_assignors(members: Iterable[Member]) -> frozenset[str]:
    """The assignors every member supports (Kafka's candidate protocols)."""
    each = [frozenset(m.assignors) for m in members]
    return frozenset.intersection(*each) if each else frozenset()


def select_protocol(members: Iterable[Member]) -> str:
    """Kafka's ``GroupMetadata.selectProtocol``: of the assignors every member supports, the
    one most members prefer (each votes for its first supported candidate); ties go to the
    name first in order. INCONSISTENT_GROUP_PROTOCOL when no assignor is common to all."""
    members = list(members)
    candidates = common_assignors(members)
    if not candidates:
        raise InconsistentProtocolError("the members support no assignor in common")
    votes = Counter(next(a for a in m.assignors if a in candidates) for m in members)
    return min(candidates, key=lambda c: (-votes[c], c))


def session_over(group: Group, member: Member, now_ms: int) -> bool:
    """Has the member's session run out? It counts from its last heartbeat, or from when the
    group's generation was assigned, if later."""
    return max(member.heartbeat_ms, group.stable_ms) + member.session_timeout_ms < now_ms


def expired_members(group: Group, now_ms: int) -> list[str]:
    """Members whose session ran out, but for those that joined the generation still gathering
    its members: Kafka keeps a member awaiting its join alive, bounded by the rebalance
    timeout (the join barrier's), not by its session."""
    return sorted(
        m.member_id
        for m in group.members.values()
        if session_over(group, m, now_ms)
        and not (gathering(group) and m.joined_generation == group.generation)
    )


def subscriptions(
    group: Group, partitions: Mapping[str, int]
) -> tuple[dict[str, Subscription], dict[str, int]]:
    """Each member's subscription for the assignor (owned partitions from the last assignment,
    for the sticky assignors), and the sizes of the topics any member subscribes to."""
    previous = group.assignment
    subscribed: dict[str, Subscription] = {}
    sizes: dict[str, int] = {}
    for member_id, member in sorted(group.members.items()):
        topics = sorted(t for t in partitions if member.subscribes(t))
        sizes.update((t, partitions[t]) for t in topics)
        owned = previous.of(member_id) if previous is not None else ()
        subscribed[member_id] = Subscription(
            topics,
            owned_partitions=owned,
            generation=previous.generation if previous is not None and owned else -1,
            group_instance_id=member.group_instance_id,
        )
    return subscribed, sizes


def withheld(assigned: Mapping[str, Sequence[TopicPartition]], sizes: Mapping[str, int]) -> bool:
    """Did a cooperative assignor hold partitions back (their owner must give them up first)?"""
    given = {tp for partitions in assigned.values() for tp in partitions}
    return any(TopicPartition(t, p) not in given for t, n in sizes.items() for p in range(n))


def is_cooperative(protocol: str | None) -> bool:
    return protocol in COOPERATIVE


def group_partitions(partitions: Iterable[TopicPartition]) -> list[dict[str, object]]:
    """``[{"topic", "partitions": [...]}]``, topics and partitions sorted."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


def rebalanced(
    group: Group, members: Mapping[str, Member], protocol: str | None, now_ms: int
) -> Group:
    """The group after a membership change: the next generation, rebalancing (or Empty).

    A member that had already joined the generation being replaced has given up what it had
    to, and nothing was handed out since: it has joined the next one too. Members of a Stable
    generation must all join again (the join barrier)."""
    generation = group.generation + 1
    carried = {
        member_id: (
            replace(member, joined_generation=generation)
            if group.state in REBALANCING and member.joined_generation == group.generation
            else member
        )
        for member_id, member in members.items()
    }
    return replace(
        group,
        state=State.PREPARING_REBALANCE if members else State.EMPTY,
        generation=generation,
        protocol=protocol if members else None,
        members=carried,
        rebalance_ms=now_ms,
        gone_since_ms=0,
    )


GONE_GRACE_MS = 30_000
"""How long a subscribed topic of the assignment may stay gone before the group rebalances
without it. A client that leads its group waits as long (librdkafka's
``topic.metadata.propagation.max.ms``) before it treats a subscribed topic as gone; a group
rebalanced the moment its topic was deleted has its members join while the topic is missing,
and a member that then drops the topic from its subscription (librdkafka before 2.1 does) never
sees it created again."""


def checked_topics(group: Group, wanted: Mapping[str, int], now_ms: int) -> Group | None:
    """A Stable group whose assignor runs here, against the partition counts of the topics its
    members subscribe to now: None when it must rebalance (a subscribed topic appeared or
    changed its count, or one has stayed gone GONE_GRACE_MS), else the group, noting since when
    a topic of its assignment is gone."""
    assignment = group.current_assignment()
    assert assignment is not None
    assigned = dict(assignment.partitions)
    if wanted == assigned:
        return replace(group, gone_since_ms=0)
    if any(assigned.get(topic) != count for topic, count in wanted.items()):
        return None
    since = group.gone_since_ms or now_ms
    return None if now_ms - since >= GONE_GRACE_MS else replace(group, gone_since_ms=since)


def gathering(group: Group) -> bool:
    """Is the group's generation still gathering its members (Kafka's join phase)? A member
    who joins or leaves now changes that generation and starts none of its own: on Kafka a
    wave of joins is one rebalance, not one per member."""
    return group.state == State.PREPARING_REBALANCE


def joining_generation(group: Group) -> int:
    """The generation a member joining now joins: the one gathering, else the one its join
    starts."""
    return group.generation if gathering(group) else group.generation + 1


def membership_changed(
    group: Group, members: Mapping[str, Member], protocol: str | None, now_ms: int
) -> Group:
    """The group after members joined, left or were found gone: the generation gathering
    takes them as they are (its state machine, already started, assigns whoever is a member
    when the join barrier opens); otherwise the next generation begins."""
    if gathering(group) and members:
        return replace(group, members=dict(members), protocol=protocol)
    return rebalanced(group, members, protocol, now_ms)


EXPIRE_AT_ONCE = 90  # sessions ended, removed by one change: within one transaction


def without_expired(group: Group, now_ms: int) -> tuple[Group, list[str]]:
    """The group without the member ids handed out and not claimed by ``now_ms``, and without
    the members whose session ran out (a membership change), with those members' ids."""
    if any(expires < now_ms for expires in group.pending.values()):
        group = replace(group, pending={k: v for k, v in group.pending.items() if v >= now_ms})
    gone = expired_members(group, now_ms)[:EXPIRE_AT_ONCE]
    if not gone:
        return group, []
    members = {k: v for k, v in group.members.items() if k not in gone}
    protocol = select_protocol(members.values()) if members else None
    return membership_changed(group, members, protocol, now_ms), gone


def laggards(group: Group) -> list[str]:
    """Members that have not joined the group's generation yet (the barrier waits for them)."""
    return sorted(
        m for m, member in group.members.items() if member.joined_generation < group.generation
    )


def rebalance_deadline_ms(group: Group) -> int:
    """Kafka's rebalance timeout: the largest of the members', from the generation's start."""
    return group.rebalance_ms + max(
        (m.rebalance_timeout_ms for m in group.members.values()), default=0
    )


REBALANCE_STALL_MS = 60_000
"""How long past the join barrier's deadline a rebalance may go without its assignment."""


def stalled(group: Group, now_ms: int, stall_ms: int = REBALANCE_STALL_MS) -> bool:
    """A rebalance whose assignment never came (its state machine could not be started, or
    failed for good): ``stall_ms`` past the join barrier's deadline, the next heartbeat starts
    the generation over."""
    return group.state in REBALANCING and now_ms > rebalance_deadline_ms(group) + stall_ms


def known_member(group: Group, member_id: str) -> Member:
    """The member, if the group has it (an instance fenced by a newer one is told so)."""
    if member_id in group.fenced:
        raise FencedInstanceError(
            f"member {member_id} was replaced by a newer member with group_instance_id "
            f"{group.fenced[member_id]!r}"
        )
    member = group.members.get(member_id)
    if member is None:
        raise UnknownMemberError(f"member {member_id!r} is not in group {group.name!r}")
    return member
