"""The coordinator of consumer-protocol groups over the metadata store: each heartbeat is one
transaction conditional on the group as read (tidelog.groups.consumer.items); a heartbeat that
moves the group epoch starts the assignment state machine, whose task (``assign``) writes the
target if the epoch is still the group's.

A consumer group and a classic group share a name space, as in Kafka: an empty group of one
protocol becomes one of the other when a member of the other joins; a group with members of
the other protocol refuses it (GROUP_ID_NOT_FOUND, Kafka's "not a consumer group").
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace

from tidelog.errors import RetriableError
from tidelog.groups import items as shared
from tidelog.groups.consumer import items
from tidelog.groups.consumer.heartbeat import (
    Config,
    Heartbeat,
    Outcome,
    Topics,
    expire,
    heartbeat,
    validate,
)
from tidelog.groups.consumer.model import ConsumerGroup, GroupIsClassicError
from tidelog.groups.consumer.target import compute_target
from tidelog.groups.model import validate_group_id
from tidelog.groups.rebalancer import CONSUMER, Rebalancer
from tidelog.log.topics import Topics as TopicStore
from tidelog.storage import ConditionFailedError, Delete, MetadataStore, Write

logger = logging.getLogger(__name__)

_ATTEMPTS = 30
TOPICS_TTL_MS = 1_000
STALL_MS = 60_000  # an epoch unassigned this long is started over (as classic generations are)


def stalled(group: ConsumerGroup, now_ms: int) -> bool:
    return group.target.epoch < group.epoch and now_ms - group.epoch_ms > STALL_MS


class ConsumerCoordinator:
    def __init__(
        self,
        meta: MetadataStore,
        topics: TopicStore,
        rebalancer: Rebalancer,
        *,
        clock_ms: Callable[[], int],
        config: Config | None = None,
        new_incarnation: Callable[[], str] = lambda: uuid.uuid4().hex[:8],
    ) -> None:
        self._meta = meta
        self._topics = topics
        self._rebalancer = rebalancer
        self._clock_ms = clock_ms
        self.config = config or Config()
        self._new_incarnation = new_incarnation
        self._lock = threading.Lock()
        self._listed: tuple[int, Topics] | None = None

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

    def load(self, name: str) -> ConsumerGroup | None:
        """The consumer group as stored, or None if the name holds no consumer group."""
        found = list(self._meta.query(shared.group_pk(name)))
        return items.group_from_items(name, found) if items.is_consumer(found) else None

    def describe(self, name: str) -> ConsumerGroup | None:
        """The group as it is now: members past their session or rebalance timeout left out."""
        group = self.load(validate_group_id(name))
        return None if group is None else expire(group, self.config, self._clock_ms())

    def heartbeat(self, name: str, request: Heartbeat) -> Outcome:
        validate_group_id(name)
        validate(request, self.config)
        now = self._clock_ms()
        topics = self.topic_map()
        for _ in range(_ATTEMPTS):
            found = list(self._meta.query(shared.group_pk(name)))
            loaded, released = self._consumer_group(name, found)
            current = expire(loaded, self.config, now)
            if current.members and stalled(current, now):
                # The target of this epoch never came (its execution could not start, or
                # failed for good): a new epoch, and a new execution for it.
                logger.warning("group %s: epoch %d was never assigned", name, current.epoch)
                current = replace(current, epoch=current.epoch + 1)
            outcome = heartbeat(current, request, topics, self.config, now)
            new = outcome.group
            if new.epoch != loaded.epoch:
                new = replace(new, epoch_ms=now)
            if not loaded.exists or released:  # created: executions named anew
                new = replace(new, incarnation=self._new_incarnation())
            outcome = replace(outcome, group=new)
            writes = released + items.diff(name, loaded, new)
            if not writes:
                return outcome
            try:
                self._meta.transact(writes)
            except ConditionFailedError:
                continue
            if new.epoch > loaded.epoch and new.members:
                self._start(name, new)
            return outcome
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
        self, name: str, found: list[Mapping[str, object]]
    ) -> tuple[ConsumerGroup, list[Write]]:
        """The consumer group the items hold; or, where they hold an empty classic group, a new
        consumer group and the deletes that retire the classic one's membership items (its
        offsets stay the group's)."""
        if items.is_consumer(found) or not found:
            return items.group_from_items(name, found), []
        classic = shared.group_from_items(name, found)
        if classic.members:
            raise GroupIsClassicError(
                f"Group {name} is not a consumer group: it has members of the classic protocol"
            )
        released: list[Write] = [
            Delete(str(i["pk"]), str(i["sk"])) for i in found if i["sk"] != shared.META_SK
        ]
        # The classic meta item is replaced, on condition of its version: a join meanwhile
        # makes the heartbeat read the group again.
        return ConsumerGroup(name, version=classic.version), released

    def _start(self, name: str, group: ConsumerGroup) -> None:
        try:
            self._rebalancer.start(
                name, group.epoch, 0, incarnation=group.incarnation, protocol=CONSUMER
            )
        except Exception:  # the epoch stands; the next heartbeat of the group starts it again
            logger.exception("group %s: could not start epoch %d's assignment", name, group.epoch)
