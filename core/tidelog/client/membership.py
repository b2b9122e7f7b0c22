"""A group member's side of a rebalance, pure: what the group last said, turned into what the
consumer must revoke and assign, and the generation it heartbeats with afterwards.

The coordinator (docs/groups.md) answers a heartbeat in one of two ways. ``Rebalancing``: the
group is preparing generation G; the member gives up every partition not in ``keep`` (empty
unless the protocol is cooperative, so an eager member gives up everything) and then joins G by
naming it. ``Stable``: generation G's assignment. Both reconcile the same way, so one rule
serves eager and cooperative groups alike, and the partitions that do not move are never
revoked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class Rebalancing:
    """``keep``: the member's partitions in ``kept_from``, the last generation assigned."""

    generation: int
    keep: frozenset[TopicPartitionKey] = frozenset()
    kept_from: int = -1


@dataclass(frozen=True)
class Stable:
    generation: int
    assignment: frozenset[TopicPartitionKey]


Answer = Rebalancing | Stable


@dataclass(frozen=True)
class Step:
    """What the consumer does, in this order: revoke (after committing them), then ``join``
    (``Membership.join``: name that generation in heartbeats from now on), then assign.
    ``assign`` is None when no new assignment arrived; an empty tuple is a new generation that
    gave this member nothing new (Kafka calls ``onPartitionsAssigned`` then too)."""

    revoke: tuple[TopicPartitionKey, ...] = ()
    join: int | None = None
    assign: tuple[TopicPartitionKey, ...] | None = None


@dataclass
class Membership:
    """``owned``: the partitions the consumer holds. ``held``: the generation they were
    assigned in (commits are fenced by it). ``joined``: the generation heartbeats name.
    ``since``: the generation its join started (it was in none before)."""

    owned: frozenset[TopicPartitionKey] = field(default_factory=frozenset)
    held: int = -1
    joined: int = -1
    since: int = -1

    def joined_by_join(self, generation: int) -> None:
        """A join's answer: the member has joined the generation its join started."""
        self.held, self.joined, self.since = -1, generation, generation

    def step(self, answer: Answer) -> Step:
        """The group's latest answer, reconciled. A generation being prepared is joined only
        once the partitions it takes are given up: the caller does that, then ``join``."""
        if isinstance(answer, Rebalancing):
            generation = self.commit_generation(answer)
            if generation is not None:
                self.held = generation
            if answer.generation == self.joined:
                return Step()  # joined already; waiting for the others
            revoke = self.owned - answer.keep
            self.owned -= revoke
            return Step(revoke=tuple(sorted(revoke)), join=answer.generation)
        if answer.generation < self.held or (
            answer.generation == self.held and answer.assignment == self.owned
        ):
            return Step()  # nothing new, or an answer overtaken by a later one
        revoke = self.owned - answer.assignment
        assign = answer.assignment - self.owned
        self.owned = answer.assignment
        self.held = self.joined = answer.generation
        return Step(revoke=tuple(sorted(revoke)), assign=tuple(sorted(assign)))

    def commit_generation(self, answer: Answer) -> int | None:
        """The generation the group takes this member's commits as, by its answer. A member
        can be in a generation it has not heard assigned: it joined, and the group went on
        (a cooperative group starts its second phase at once) before a heartbeat came back.
        A member still in the group is in every generation assigned since it first joined:
        each waited for all members to join. None: not one this member was in."""
        if isinstance(answer, Stable):
            return answer.generation
        if self.held < answer.kept_from and self.since <= answer.kept_from:
            return answer.kept_from
        return self.held if answer.kept_from == self.held else None

    def join(self, generation: int) -> None:
        self.joined = generation

    def lose(self) -> tuple[TopicPartitionKey, ...]:
        """The member is out of the group (its session expired, it was removed or fenced):
        everything it held is lost, not revoked; it must join again."""
        lost = tuple(sorted(self.owned))
        self.owned, self.held, self.joined, self.since = frozenset(), -1, -1, -1
        return lost
