"""The one way a classic group's state changes: read its items, apply a pure change, write
the difference in one transaction conditional on what was read (again from the start when
another change won), and start the assignment state machine for a generation it began."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from tidelog.errors import RetriableError
from tidelog.groups import items, stored
from tidelog.groups.model import Group, State, common_assignors, without_expired
from tidelog.groups.rebalancer import Rebalancer
from tidelog.log.topics import Topics
from tidelog.storage import ConditionFailedError, MetadataStore, Write

logger = logging.getLogger(__name__)

_ATTEMPTS = 30
_T = TypeVar("_T")


class GroupChanges:
    def __init__(
        self,
        meta: MetadataStore,
        topics: Topics,
        rebalancer: Rebalancer,
        *,
        clock_ms: Callable[[], int],
        initial_rebalance_delay_ms: int,
        new_incarnation: Callable[[], str],
    ) -> None:
        self._meta = meta
        self._topics = topics
        self._rebalancer = rebalancer
        self._clock_ms = clock_ms
        self._initial_delay_ms = initial_rebalance_delay_ms
        self._new_incarnation = new_incarnation

    def load(self, name: str) -> Group:
        """The classic group (ConsumerProtocolGroupError for a consumer group's name)."""
        return stored.load_classic(self._meta, name)

    def load_meta(self, name: str) -> Group:
        """The classic group as its meta item says, no members (one item read; likewise
        ConsumerProtocolGroupError for a consumer group's name)."""
        return stored.load_meta(self._meta, name)

    def topic_sizes(self) -> dict[str, int]:
        return {t.name: t.partitions for t in self._topics.list()}

    def _expired(self, group: Group, at_ms: int | None = None) -> Group:
        left, gone = without_expired(group, self._clock_ms() if at_ms is None else at_ms)
        if gone:
            logger.info("group %s: sessions expired for %s", group.name, gone)
        return left

    def _mutate(
        self,
        name: str,
        change: Callable[[Group], tuple[Group, list[Write], _T]],
        *,
        expire: bool = True,
        arrived_ms: int | None = None,
        whole: bool = True,
    ) -> _T:
        """Apply ``change`` to the group as stored, sessions that ran out first, judged at
        ``arrived_ms`` (as Kafka judges a heartbeat on arrival, not after a busy moment's
        retries); a new generation begins when written: retries never shorten its timeout.
        Not ``whole``: to its meta item alone (a change that adds items and reads no others)."""
        for _ in range(_ATTEMPTS):
            loaded = self.load(name) if whole else self.load_meta(name)
            group = self._expired(loaded, arrived_ms) if expire else loaded
            new, extra, answer = change(group)
            if whole:  # kept for joins that read only the meta item (tidelog.groups.sessions)
                new = replace(new, assignors=common_assignors(new.members.values()))
            if not loaded.exists:
                new = replace(new, incarnation=self._new_incarnation())
            if new.generation != loaded.generation:
                new = replace(new, rebalance_ms=max(new.rebalance_ms, self._clock_ms()))
            writes = items.diff(name, loaded, new) + extra
            if not writes:
                return answer
            try:
                self._meta.transact(writes)
            except ConditionFailedError:
                continue
            if new.generation != loaded.generation and new.members:
                delay = self._initial_delay_ms if loaded.state == State.EMPTY else 0
                try:
                    self._rebalancer.start(name, new.generation, delay, incarnation=new.incarnation)
                except Exception:  # the change stands; a heartbeat restarts a stalled one
                    logger.exception(
                        "group %s: could not start generation %d's rebalance", name, new.generation
                    )
            return answer
        raise RetriableError(f"group {name} kept changing; try again")
