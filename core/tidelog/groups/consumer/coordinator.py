"""The coordinator of consumer-protocol groups over the metadata store: each heartbeat is one
transaction conditional on the group as read (tidelog.groups.consumer.items); a heartbeat that
moves the group epoch starts the assignment state machine, whose task (``assign``) writes the
target if the epoch is still the group's.

A consumer group and a classic group share a name space, as in Kafka: an empty group of one
protocol becomes one of the other when a member of the other joins. A classic group with
members becomes a consumer group when a consumer-protocol member joins it (Kafka's online
upgrade), and its classic members carry on in it (``classic_*``). A consumer group never turns
back into a classic one while it has members: a classic member joins it as a classic member.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TypeVar

from tidelog.assignors import TopicPartition
from tidelog.errors import RetriableError
from tidelog.groups import items as shared
from tidelog.groups.configs import applied
from tidelog.groups.consumer import classic, items
from tidelog.groups.consumer.heartbeat import (
    Config,
    Heartbeat,
    Outcome,
    Topics,
    expire,
    heartbeat,
    validate,
)
from tidelog.groups.consumer.model import ConsumerGroup, UnknownConsumerMemberError
from tidelog.groups.consumer.target import compute_target
from tidelog.groups.model import GroupNotFoundError, validate_group_id
from tidelog.groups.rebalancer import CONSUMER, Rebalancer
from tidelog.log.topics import Topics as TopicStore
from tidelog.storage import ConditionFailedError, Delete, MetadataStore, Put, Write
from tidelog.storage.configs import ConfigItems
from tidelog.storage.metadata import MAX_TRANSACTION_WRITES

logger = logging.getLogger(__name__)
_R = TypeVar("_R")

_ATTEMPTS = 30
TOPICS_TTL_MS = 1_000
STALL_MS = 60_000  # an epoch unassigned this long is started over (as classic generations are)
# An epoch whose target is this late has its execution started again: a start that failed is
# retried; one under way is refused as a duplicate (the name is the epoch's), harmlessly.
RESTART_MS = 10_000


def stalled(group: ConsumerGroup, now_ms: int) -> bool:
    return group.target.epoch < group.epoch and now_ms - group.epoch_ms > STALL_MS


def _outcome(outcome: Outcome) -> tuple[ConsumerGroup, Outcome]:
    return outcome.group, outcome


def _written(changed: tuple[ConsumerGroup, Outcome]) -> Outcome:
    return replace(changed[1], group=changed[0])


def _merged(writes: list[Write]) -> list[Write]:
    """One write per item, as a transaction needs: an item a conversion deletes and the new
    group puts is put, whatever was there (the meta item's version guards the whole)."""
    put = {w.key for w in writes if isinstance(w, Put)}
    deleted = {w.key for w in writes if isinstance(w, Delete)}
    return [
        Put(w.item) if isinstance(w, Put) and w.key in deleted else w
        for w in writes
        if not (isinstance(w, Delete) and w.key in put)
    ]


class ConsumerCoordinator:
    def __init__(
        self,
        meta: MetadataStore,
        topics: TopicStore,
        rebalancer: Rebalancer,
        *,
        clock_ms: Callable[[], int],
        config: Config | None = None,
        group_configs: ConfigItems | None = None,
        new_incarnation: Callable[[], str] = lambda: uuid.uuid4().hex[:8],
    ) -> None:
        self._meta = meta
        self._topics = topics
        self._rebalancer = rebalancer
        self._clock_ms = clock_ms
        self.config = config or Config()  # the broker's: a group's own configs override it
        self._group_configs = group_configs
        self._new_incarnation = new_incarnation
        self._lock = threading.Lock()
        self._listed: tuple[int, Topics] | None = None
        self._restarted: dict[tuple[str, int], int] = {}  # (group, epoch) -> when, in ms

    def topic_map(self) -> Topics:
        """Every topic by name, with its id and partition count: listed at most once a second
        (every heartbeat of every group looks), as Kafka's coordinator reads a metadata image.
        A topic that appears or grows reaches the groups within that second."""
        now = self._clock_ms()
        with self._lock:
            if self._listed is not None and now - self._listed[0] < TOPICS_TTL_MS:
                return self._listed[1]
        listed = {t.name: (t.topic_id, t.partitions) for t in self._topics.list()}
        with self._lock:
            self._listed = (now, listed)
        return listed

    def config_of(self, name: str) -> Config:
        """The config a group's members live by: the broker's, with the group's own configs
        (tidelog.groups.configs) in place."""
        if self._group_configs is None:
            return self.config
        return applied(self._group_configs.cached(name), self.config)

    def load(self, name: str) -> ConsumerGroup | None:
        """The consumer group as stored, or None if the name holds no consumer group."""
        found = list(self._meta.query(shared.group_pk(name)))
        return items.group_from_items(name, found) if items.is_consumer(found) else None

    def target_epoch(self, name: str) -> int:
        """The epoch of the group's target assignment as stored: one item read, for a member
        waiting for its target (0: none)."""
        item = self._meta.get(shared.group_pk(name), items.TARGET_SK)
        return 0 if item is None else items.target_from_item(item).epoch

    def describe(self, name: str) -> ConsumerGroup | None:
        """The group as it is now: members past their session or rebalance timeout left out."""
        group = self.load(validate_group_id(name))
        return None if group is None else expire(group, self.config_of(name), self._clock_ms())

    def heartbeat(self, name: str, request: Heartbeat) -> Outcome:
        config = self.config_of(validate_group_id(name))
        validate(request, config)
        return _written(
            self._change(
                name,
                lambda g, topics, now: _outcome(heartbeat(g, request, topics, config, now)),
                config,
            )
        )

    # -- members of the classic protocol (tidelog.groups.consumer.classic) ------------------

    def classic_join(self, name: str, request: classic.ClassicJoin) -> Outcome:
        config = self.config_of(validate_group_id(name))
        return _written(
            self._change(
                name,
                lambda g, topics, now: _outcome(classic.join(g, request, topics, config, now)),
                config,
            )
        )

    def classic_sync(
        self, name: str, member_id: str, instance_id: str | None, generation: int
    ) -> list[TopicPartition]:
        """The partitions a classic member's SyncGroup answers, by topic name."""
        group = self.describe(name)
        if group is None:
            raise UnknownConsumerMemberError(f"Group {name} has no consumer members.")
        member = classic.sync(group, member_id, instance_id, generation)
        names = {topic_id: t for t, (topic_id, _) in self.topic_map().items()}
        return classic.assigned_by_name(member, names)

    def classic_heartbeat(
        self, name: str, member_id: str, instance_id: str | None, generation: int
    ) -> bool:
        """The classic member's session renewed; whether it must join again."""
        return self._change(
            name,
            lambda g, topics, now: classic.beat(
                g, member_id, instance_id, generation, topics=topics, now_ms=now
            ),
        )[1]

    def classic_leave(self, name: str, member_id: str, instance_id: str | None) -> None:
        self._change(name, lambda g, _, now: (classic.leave(g, member_id, instance_id), None))

    def _change(
        self,
        name: str,
        step: Callable[[ConsumerGroup, Topics, int], tuple[ConsumerGroup, _R]],
        config: Config | None = None,
    ) -> tuple[ConsumerGroup, _R]:
        """``step`` applied to the group as it is now, and written in one transaction
        conditional on the group as read (computed again if it moved meanwhile); ``config``,
        the group's, where the caller has it already."""
        config = config or self.config_of(validate_group_id(name))
        now = self._clock_ms()
        topics = self.topic_map()
        for _ in range(_ATTEMPTS):
            found = list(self._meta.query(shared.group_pk(name)))
            stored, loaded, released = self._consumer_group(name, found, topics, now)
            current = expire(loaded, config, now)
            if current.members and stalled(current, now):
                # The target of this epoch never came (its execution could not start, or
                # failed for good): a new epoch, and a new execution for it.
                logger.warning("group %s: epoch %d was never assigned", name, current.epoch)
                current = replace(current, epoch=current.epoch + 1)
            new, answer = step(current, topics, now)
            if new.epoch != loaded.epoch:
                new = replace(new, epoch_ms=now)
            if not stored.exists or released:  # created or converted: executions named anew
                new = replace(new, incarnation=self._new_incarnation())
            writes = _merged(released + items.diff(name, stored, new))
            if writes:
                try:
                    self._meta.transact(writes)
                except ConditionFailedError:
                    continue
            if new.epoch > loaded.epoch and new.members and writes:
                self._start(name, new)
            else:
                self._restart_if_late(name, new, now)
            return new, answer
        raise RetriableError(f"group {name} kept changing; try again")

    def assign(self, name: str, epoch: int) -> dict[str, object]:
        """The state machine's task: the target of ``epoch``, written if that is still the
        group's epoch (a later epoch has an execution of its own)."""
        answer: dict[str, object] = {
            "group": name,
            "generation": epoch,
            "stale": True,
            "waiting": False,
        }
        topics = self.topic_map()
        for _ in range(_ATTEMPTS):
            group = self.load(name)
            if group is None or group.epoch != epoch or group.target.epoch >= epoch:
                return answer
            if not group.members:
                return answer
            new = replace(group, target=compute_target(group, topics))
            try:
                self._meta.transact(items.diff(name, group, new))
            except ConditionFailedError:
                continue
            return {**answer, "stale": False}
        raise RetriableError(f"group {name} kept changing under its assignment; try again")

    def _consumer_group(
        self, name: str, found: list[Mapping[str, object]], topics: Topics, now_ms: int
    ) -> tuple[ConsumerGroup, ConsumerGroup, list[Write]]:
        """The group as stored, the group to change, and the writes that retire a classic
        group's items. An empty classic group becomes a new consumer group (its offsets stay
        the group's); one with members is upgraded, each keeping what it was assigned
        (tidelog.groups.consumer.classic.upgrade)."""
        if items.is_consumer(found) or not found:
            group = items.group_from_items(name, found)
            return group, group, []
        old = shared.group_from_items(name, found)
        released: list[Write] = [
            Delete(str(i["pk"]), str(i["sk"])) for i in found if i["sk"] != shared.META_SK
        ]
        # The classic meta item is replaced on condition of its version: a change to the
        # classic group meanwhile makes this one read the group again.
        stored = ConsumerGroup(name, version=old.version)
        if not old.members:
            return stored, stored, released
        if len(found) + 1 > MAX_TRANSACTION_WRITES:  # its items, rewritten, and a target
            # Kafka refuses an upgrade past group.consumer.max.size the same way.
            raise GroupNotFoundError(
                f"Cannot upgrade classic group {name} to a consumer group: its "
                f"{len(old.members)} members are more than one transaction converts."
            )
        logger.info("group %s: upgraded to the consumer protocol", name)
        return stored, classic.upgrade(old, topics, now_ms, old.incarnation), released

    def _restart_if_late(self, name: str, group: ConsumerGroup, now_ms: int) -> None:
        """At most once per RESTART_MS for each epoch, from this process."""
        if not group.members or group.target.epoch >= group.epoch:
            return
        if now_ms - group.epoch_ms < RESTART_MS:
            return
        key = (name, group.epoch)
        with self._lock:
            if now_ms - self._restarted.get(key, 0) < RESTART_MS:
                return
            if len(self._restarted) > 10_000:  # old epochs' entries; a bound, not a cache
                self._restarted.clear()
            self._restarted[key] = now_ms
        logger.warning(
            "group %s: epoch %d unassigned for %d ms; starting it again",
            name,
            group.epoch,
            now_ms - group.epoch_ms,
        )
        self._start(name, group)

    def _start(self, name: str, group: ConsumerGroup) -> None:
        try:
            self._rebalancer.start(
                name, group.epoch, 0, incarnation=group.incarnation, protocol=CONSUMER
            )
        except Exception:  # the epoch stands; the next heartbeat of the group starts it again
            logger.exception("group %s: could not start epoch %d's assignment", name, group.epoch)
