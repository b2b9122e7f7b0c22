"""A group coordinator over the in-memory stores, its rebalances run when the test says."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from tests.support.log import Clock

from tidelog.groups.configs import PK as GROUP_CONFIGS_PK
from tidelog.groups.consumer.coordinator import ConsumerCoordinator
from tidelog.groups.consumer.heartbeat import Config
from tidelog.groups.coordinator import Coordinator
from tidelog.groups.model import Limits
from tidelog.log.read.fetch import LogReader
from tidelog.log.topics import Topics
from tidelog.storage import MetadataStore
from tidelog.storage.configs import ConfigItems
from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore


@dataclass
class QueuedRebalancer:
    """Records the rebalances the coordinator starts; ``run`` plays the state machine."""

    started: list[tuple[str, int, int]] = field(default_factory=list)
    coordinator: Coordinator | None = None

    def start(self, group: str, generation: int, delay_ms: int, **execution) -> None:
        self.started.append((group, generation, delay_ms))

    def run(self) -> list[dict[str, object]]:
        """One pass over the started executions, as the state machine's Assign task runs them;
        one still waiting at the join barrier stays queued for the next ``run``."""
        assert self.coordinator is not None
        answers, waiting = [], []
        while self.started:
            started = self.started.pop(0)
            answer = self.coordinator.assign(started[0], started[1])
            answers.append(answer)
            if answer.get("waiting"):
                waiting.append(started)
        self.started[:0] = waiting
        return answers


def coordinator(member_ids=None, limits: Limits | None = None, meta: MetadataStore | None = None):
    """A coordinator over ``meta`` (a fresh in-memory table by default), member ids drawn from
    ``member_ids`` (``m0``, ``m1``... by default)."""
    clock = Clock()
    meta = MemoryMetadataStore() if meta is None else meta
    topics = Topics(meta, clock)
    reader = LogReader(meta, MemoryObjectStore(clock))
    rebalancer = QueuedRebalancer()
    ids = iter(member_ids) if member_ids is not None else (f"m{i}" for i in itertools.count())
    coord = Coordinator(
        meta,
        topics,
        reader,
        rebalancer,
        clock_ms=clock,
        limits=limits or Limits(min_session_timeout_ms=100, max_session_timeout_ms=60_000),
        new_id=lambda: next(ids),
    )
    rebalancer.coordinator = coord
    return coord, rebalancer, topics, clock, meta


class Recorder:
    """Records the executions a consumer group coordinator starts."""

    def __init__(self) -> None:
        self.started: list[tuple[str, int, dict]] = []

    def start(self, group: str, generation: int, delay_ms: int, **execution) -> None:
        self.started.append((group, generation, execution))


def consumer_stack(config: Config, recorder: Recorder | None = None, group_configs: bool = False):
    """A KIP-848 coordinator beside a classic one, over one table, with topic ``t`` of 4; with
    ``group_configs``, groups' own configs in the same table."""
    classic, _, topics, clock, meta = coordinator()
    recorder = recorder or Recorder()
    consumer = ConsumerCoordinator(
        meta,
        topics,
        recorder,
        clock_ms=clock,
        config=config,
        group_configs=ConfigItems(meta, GROUP_CONFIGS_PK, clock_ms=clock)
        if group_configs
        else None,
    )
    topics.create("t", 4, {})
    return consumer, classic, recorder, topics, clock
