"""The sticky and cooperative-sticky assignors (KIP-54, KIP-341, KIP-429), as Kafka's
AbstractStickyAssignor and CooperativeStickyAssignor decide.

Balance first, then stickiness: the assignment is as balanced as the subscriptions allow, and
among balanced assignments, keeps as many partitions where they were as it can.

- Previously owned partitions count only for members of the highest generation present (a member
  of an older generation missed a rebalance: what it claims may have moved since). A partition
  claimed by two such members is owned by neither.
- When every member subscribes to the same topics, Kafka's constrained algorithm runs: each
  member keeps up to its quota of owned partitions (``maxQuota`` for the first
  ``partitions % members`` of them, ``minQuota`` for the others), the rest are dealt round-robin
  to the members under quota.
- Otherwise the general algorithm runs: owned partitions stay, the unassigned ones go (those with
  the fewest possible consumers first) to the least-loaded subscriber, and partitions then move
  from a member to a subscriber holding at least two fewer until no such move is left.

Where Kafka walks members in a java.util.HashMap's order, tidelog computes that order from the
member ids (:func:`~tidelog.assignors.common.java_hash_order`), so results match Kafka's own
tests and never depend on the order the members were given in.

Cooperative-sticky computes the same assignment, then withholds every partition that moves from
one present owner to another: the owner revokes it this round and the next rebalance hands it
over, so no partition is ever owned by two members at once.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Mapping

from tidelog.assignors.common import (
    Assignment,
    Subscription,
    TopicPartition,
    java_hash_order,
    partitions_of,
)

Transfers = dict[TopicPartition, str]


def sticky_assign(
    partitions_per_topic: Mapping[str, int], members: Mapping[str, Subscription]
) -> Assignment:
    return _assign(partitions_per_topic, members)[0]


def cooperative_sticky_assign(
    partitions_per_topic: Mapping[str, int], members: Mapping[str, Subscription]
) -> Assignment:
    assignment, transfers = _assign(partitions_per_topic, members)
    if transfers is None:
        transfers = _transfers_from_owned(members, assignment)
    for tp, member in transfers.items():
        assignment[member].remove(tp)
    return assignment


def _assign(
    partitions_per_topic: Mapping[str, int], members: Mapping[str, Subscription]
) -> tuple[Assignment, Transfers | None]:
    owned, contested = _valid_ownership(partitions_per_topic, members)
    topic_sets = {s.topic_set for s in members.values()}
    if len(topic_sets) <= 1:
        return _constrained(partitions_per_topic, members, owned, contested)
    return _general(partitions_per_topic, members, owned), None


def _valid_ownership(
    partitions_per_topic: Mapping[str, int], members: Mapping[str, Subscription]
) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition]]:
    """Each member's still-valid owned partitions, and the partitions claimed more than once."""
    newest = max((s.generation for s in members.values()), default=-1)
    claims: dict[TopicPartition, int] = {}
    owned: dict[str, list[TopicPartition]] = {}
    for member in sorted(members):
        subscription = members[member]
        valid = []
        if subscription.generation == newest:
            for tp in subscription.owned_partitions:
                if tp.topic in subscription.topic_set and 0 <= tp.partition < (
                    partitions_per_topic.get(tp.topic, 0)
                ):
                    valid.append(tp)
                    claims[tp] = claims.get(tp, 0) + 1
        owned[member] = valid
    contested = {tp for tp, count in claims.items() if count > 1}
    if contested:
        owned = {m: [tp for tp in tps if tp not in contested] for m, tps in owned.items()}
    return owned, contested


def _constrained(
    partitions_per_topic: Mapping[str, int],
    members: Mapping[str, Subscription],
    owned: Mapping[str, list[TopicPartition]],
    contested: set[TopicPartition],
) -> tuple[Assignment, Transfers]:
    if not members:
        return {}, {}
    topics = next(iter(members.values())).topics
    quotas = _Quotas(partitions_of(topics, partitions_per_topic), sorted(members))
    # Which members keep max_quota of what they own depends on the order Kafka walks them in:
    # its HashMap's. Emulated, so the same group gets the same answer from both.
    for member in java_hash_order(members):
        quotas.keep_owned(member, owned[member])
    return quotas.deal(contested), quotas.transfers


class _Quotas:
    """Kafka's constrained assignment: every member ends with ``min_quota`` or ``max_quota``
    partitions, exactly ``extra`` of them with ``max_quota``."""

    def __init__(self, partitions: list[TopicPartition], members: list[str]) -> None:
        self.partitions = partitions
        self.assignment: Assignment = {member: [] for member in members}
        self.min_quota, self.extra = divmod(len(partitions), len(members))
        self.max_quota = self.min_quota + (1 if self.extra else 0)
        self.over_min = 0  # members at max_quota, when it differs from min_quota
        self.under_min: list[str] = []
        self.at_min: list[str] = []  # may still take one more
        self.revoked: set[TopicPartition] = set()
        self.transfers: Transfers = {}

    def keep_owned(self, member: str, mine: list[TopicPartition]) -> None:
        """Keep up to the member's quota of what it owns; what is over it is revoked."""
        if len(mine) < self.min_quota:
            self.assignment[member] = list(mine)
            self.under_min.append(member)
        elif len(mine) >= self.max_quota and self.over_min < self.extra:
            self.over_min += 1
            if self.over_min == self.extra:
                self.at_min.clear()
            self.assignment[member] = mine[: self.max_quota]
            self.revoked.update(mine[self.max_quota :])
        else:
            self.assignment[member] = mine[: self.min_quota]
            self.revoked.update(mine[self.min_quota :])
            if self.over_min < self.extra:
                self.at_min.append(member)

    def deal(self, contested: set[TopicPartition]) -> Assignment:
        """Deal the rest round-robin: first to members under min_quota, then one each to
        members at min_quota until ``extra`` members hold max_quota."""
        taken = {tp for partitions in self.assignment.values() for tp in partitions}
        under = sorted(self.under_min)
        waiting = deque(sorted(self.at_min))
        turn = 0
        for tp in (tp for tp in self.partitions if tp not in taken):
            from_under = bool(under)
            if turn >= len(under):
                turn = 0
            if from_under:
                member = under[turn]
            elif waiting:
                member = waiting.popleft()
            else:
                raise RuntimeError("sticky assignor: partitions left but every member is full")
            self.assignment[member].append(tp)
            if tp in self.revoked or tp in contested:
                self.transfers[tp] = member
            count = len(self.assignment[member])
            if from_under and count == self.min_quota:
                under.pop(turn)
                waiting.append(member)
                continue
            if from_under:
                turn += 1
            if count == self.max_quota != self.min_quota:
                self.over_min += 1
                if self.over_min == self.extra:
                    break
        return self.assignment


def _general(
    partitions_per_topic: Mapping[str, int],
    members: Mapping[str, Subscription],
    owned: Mapping[str, list[TopicPartition]],
) -> Assignment:
    subscribers: dict[str, list[str]] = {}
    for member in sorted(members):
        for topic in members[member].topic_set:
            if topic in partitions_per_topic:
                subscribers.setdefault(topic, []).append(member)
    assignment: Assignment = {member: list(owned[member]) for member in sorted(members)}
    load = _Load(assignment, members, subscribers)
    taken = {tp for partitions in assignment.values() for tp in partitions}
    unassigned = [tp for tp in partitions_of(subscribers, partitions_per_topic) if tp not in taken]
    unassigned.sort(key=lambda tp: (len(subscribers[tp.topic]), tp.topic, tp.partition))
    for tp in unassigned:
        target = load.least_loaded(tp.topic)
        if target is None:  # every topic in ``unassigned`` has a subscriber
            raise RuntimeError(f"sticky assignor: no subscriber for {tp}")
        load.add(target, tp)

    # Move partitions to a subscriber holding at least two fewer until none can move. Partitions
    # a member did not own before go first: moving them costs no stickiness.
    moved = True
    while moved:
        moved = False
        for member in sorted(assignment, key=lambda m: (-len(assignment[m]), m)):
            previously = set(owned[member])
            for tp in sorted(assignment[member], key=lambda tp: (tp in previously, tp)):
                target = load.least_loaded(tp.topic, excluding=member)
                if target is not None and load.count(target) < load.count(member) - 1:
                    load.remove(member, tp)
                    load.add(target, tp)
                    moved = True
    return assignment


class _Load:
    """Members' partition counts, with the least-loaded subscriber of a topic in O(log n)
    (a heap per topic, entries dropped lazily once their count is stale)."""

    def __init__(
        self,
        assignment: Assignment,
        members: Mapping[str, Subscription],
        subscribers: Mapping[str, list[str]],
    ) -> None:
        self._assignment = assignment
        self._topics = {m: [t for t in s.topic_set if t in subscribers] for m, s in members.items()}
        self._heaps = {
            topic: [(len(assignment[m]), m) for m in names] for topic, names in subscribers.items()
        }
        for heap in self._heaps.values():
            heapq.heapify(heap)

    def count(self, member: str) -> int:
        return len(self._assignment[member])

    def add(self, member: str, tp: TopicPartition) -> None:
        self._assignment[member].append(tp)
        self._touch(member)

    def remove(self, member: str, tp: TopicPartition) -> None:
        self._assignment[member].remove(tp)
        self._touch(member)

    def least_loaded(self, topic: str, excluding: str | None = None) -> str | None:
        heap = self._heaps[topic]
        skipped = []
        found = None
        while heap:
            count, member = heap[0]
            if count != self.count(member):
                heapq.heappop(heap)  # stale
            elif member == excluding:
                skipped.append(heapq.heappop(heap))
            else:
                found = member
                break
        for entry in skipped:
            heapq.heappush(heap, entry)
        return found

    def _touch(self, member: str) -> None:
        entry = (self.count(member), member)
        for topic in self._topics[member]:
            heapq.heappush(self._heaps[topic], entry)


def _transfers_from_owned(
    members: Mapping[str, Subscription], assignment: Mapping[str, Iterable[TopicPartition]]
) -> Transfers:
    """Kafka's computePartitionsTransferringOwnership: partitions newly assigned to one member
    that another member owned and is losing."""
    added: Transfers = {}
    revoked: set[TopicPartition] = set()
    for member, partitions in assignment.items():
        mine = set(members[member].owned_partitions)
        assigned = set(partitions)
        for tp in sorted(assigned - mine):
            added[tp] = member
        revoked |= mine - assigned
    return {tp: member for tp, member in added.items() if tp in revoked}
