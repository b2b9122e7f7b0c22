"""A partition log over the in-memory stores with a clock the test moves: produce, fetch and
the lifecycle jobs, as the functions wire them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tidelog.log.lifecycle.housekeeping import JOBS, Housekeeper, Report
from tidelog.log.read.fetch import LogReader
from tidelog.log.topics import Topic, Topics
from tidelog.log.write.staging import StagingArea
from tidelog.log.write.validate import validate_batches
from tidelog.log.write.writer import AppendRequest, Writer
from tidelog.records import Record, RecordBatchBuilder
from tidelog.storage import MetadataStore, ObjectStore
from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore

T0 = 1_700_000_000_000


@dataclass
class Clock:
    now: int = T0

    def __call__(self) -> int:
        return self.now


@dataclass
class TinyLog:
    meta: MetadataStore
    objects: ObjectStore
    topics: Topics
    writer: Writer
    reader: LogReader
    clock: Clock
    keeper: Housekeeper
    topic: Topic
    produced: list[tuple[int, Record]] = field(default_factory=list)  # (partition, record)

    def produce(
        self,
        partition: int,
        entries: Sequence[tuple[bytes | None, bytes | None]],
        timestamp: int | None = None,
    ) -> list[int]:
        """Append one batch of (key, value) records; their offsets."""
        builder = RecordBatchBuilder()
        stamp = self.clock.now if timestamp is None else timestamp
        for key, value in entries:
            builder.append(key, value, (), stamp)
        batches = validate_batches(builder.build(), max_message_bytes=10**8, log_append_time=None)
        (result,) = self.writer.append([AppendRequest(self.topic, partition, batches)])
        assert result.error is None, result.error
        return list(range(result.base_offset, result.last_offset + 1))

    def fetch_all(self, partition: int, offset: int | None = None, max_bytes: int = 1 << 20):
        """Every record from ``offset`` (default: the log start) to the end, fetch by fetch."""
        log_start, end = self.reader.head(self.topic.topic_id, partition)
        position = log_start if offset is None else offset
        out: list[Record] = []
        while position < end:
            data = self.reader.fetch(self.topic.topic_id, partition, position, max_bytes)
            assert data.next_offset > position, "a fetch must make progress"
            for fetched in data.batches:
                out += [r for r in fetched.batch.records() if r.offset >= position]
            position = data.next_offset
        return out

    def housekeep(self, *jobs: str) -> Report:
        return self.keeper.run(jobs or JOBS)


def tiny_log(
    tmp_path: Path,
    *,
    partitions: int = 1,
    configs: dict[str, object] | None = None,
    meta: MetadataStore | None = None,
    objects: ObjectStore | None = None,
    grace_ms: int = 1000,
    settle_ms: int = 0,
) -> TinyLog:
    clock = Clock()
    meta = meta or MemoryMetadataStore()
    objects = objects or MemoryObjectStore(clock)
    topics = Topics(meta, clock)
    topic = topics.create("tiny", partitions, configs or {})
    writer = Writer(
        meta,
        objects,
        StagingArea(tmp_path / "staging"),
        clock_ms=clock,
        sleep=time.sleep,
        jitter=lambda: 0.5,
    )
    keeper = Housekeeper(
        meta, objects, topics, clock_ms=clock, grace_ms=grace_ms, settle_ms=settle_ms
    )
    return TinyLog(meta, objects, topics, writer, LogReader(meta, objects), clock, keeper, topic)


def housekeeping_configs(**changed: str) -> dict[str, str]:
    """The topic configs housekeeping's schedule reads, at test values, some of them changed
    (``retention_ms="1000"`` sets retention.ms)."""
    configs = {
        "cleanup.policy": "delete",
        "segment.bytes": "1000",
        "segment.ms": str(10**9),
        "retention.ms": "-1",
        "retention.bytes": "-1",
        "delete.retention.ms": "0",
    }
    configs.update({name.replace("_", "."): value for name, value in changed.items()})
    return configs
