"""Writing rows into topics through the produce path's commit protocol, exactly once across
Spark task retries.

Each task writes as an idempotent producer whose id is derived from the write (a batch job, or
a streaming query's micro-batch) and the task's partition, so a retried task is the same
producer again. Its rows are deterministic (Spark recomputes a partition the same way), so are
its batches and their sequence numbers: before appending, the task reads the producer's state
in each target partition and skips every batch whose sequences are already there; a batch
caught in flight is recognised by the commit's own duplicate detection. Keyless rows go to the
partition ``task partition id % partitions``: Kafka's sticky choice is random, and a retry must
choose the same partition.
"""

from __future__ import annotations

import datetime
import hashlib
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from tidelog.log import keys
from tidelog.log.topics import Topic, Topics
from tidelog.log.write.produce import parse_raw
from tidelog.log.write.producers import ProducerState
from tidelog.log.write.staging import StagingArea
from tidelog.log.write.writer import AppendRequest, Writer
from tidelog.partitioner import partition_for_key
from tidelog.records import RecordBatchBuilder
from tidelog.storage import MetadataStore, ObjectStore

BATCH_BYTES = 1024 * 1024
DERIVED_PRODUCER_IDS = 1 << 62  # allocated producer ids count up from 0; these never meet them


def producer_id(write_id: str, task_partition: int) -> int:
    digest = hashlib.sha256(f"{write_id}/{task_partition}".encode()).digest()
    return DERIVED_PRODUCER_IDS | int.from_bytes(digest[:8], "big") >> 2


class Row(NamedTuple):  # a tuple: made once per row written, several times cheaper than a dataclass
    topic: str
    partition: int | None
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None


@dataclass
class Written:
    records: int = 0
    skipped: int = 0  # already written by an earlier attempt of this task
    batches: int = 0
    partitions: set[tuple[str, int]] = field(default_factory=set)


def target(row: Row, topic: Topic, task_partition: int) -> int:
    if row.partition is not None:
        topic.check_partition(row.partition)
        return row.partition
    if row.key is None:
        return task_partition % topic.partitions
    return partition_for_key(row.key, topic.partitions)


def write_rows(
    meta: MetadataStore,
    objects: ObjectStore,
    rows: Iterable[Row],
    *,
    pid: int,
    task_partition: int,
    batch_bytes: int = BATCH_BYTES,
    clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
) -> Written:
    now = clock_ms
    topics = Topics(meta, now)
    known: dict[str, Topic] = {}
    with tempfile.TemporaryDirectory(prefix="tidelog-spark-") as staging:
        writer = Writer(
            meta,
            objects,
            StagingArea(Path(staging)),
            clock_ms=now,
            sleep=time.sleep,
            jitter=lambda: 0.5,
        )
        task = _Task(meta, writer, pid, now, batch_bytes)
        for row in rows:
            topic = known.get(row.topic) or known.setdefault(row.topic, topics.get(row.topic))
            task.add(topic, target(row, topic, task_partition), row)
        task.flush_all()
        return task.written


class _Task:
    def __init__(
        self,
        meta: MetadataStore,
        writer: Writer,
        pid: int,
        now: Callable[[], int],
        batch_bytes: int,
    ) -> None:
        self._batch_bytes = batch_bytes
        self._meta = meta
        self._writer = writer
        self._pid = pid
        self._now = now
        self._pending: dict[tuple[str, int], tuple[Topic, RecordBatchBuilder]] = {}
        self._next_sequence: dict[tuple[str, int], int] = {}
        self._written_to: dict[tuple[str, int], int] = {}  # last sequence already in the log
        self.written = Written()

    def add(self, topic: Topic, partition: int, row: Row) -> None:
        key = (topic.name, partition)
        if key not in self._pending:
            sequence = self._next_sequence.setdefault(key, 0)
            builder = RecordBatchBuilder(
                _codec(topic), producer_id=self._pid, producer_epoch=0, base_sequence=sequence
            )
            self._pending[key] = (topic, builder)
        _, builder = self._pending[key]
        stamp = row.timestamp if row.timestamp is not None else self._now()
        builder.append(row.key, row.value, row.headers, stamp)
        if builder.size_estimate >= self._batch_bytes:
            self.flush(key)

    def flush_all(self) -> None:
        for key in list(self._pending):
            self.flush(key)

    def flush(self, key: tuple[str, int]) -> None:
        topic, builder = self._pending.pop(key)
        first = self._next_sequence[key]
        count = len(builder)
        self._next_sequence[key] = first + count
        if key not in self._written_to:
            self._written_to[key] = self._last_sequence(topic, key[1])
        if first + count - 1 <= self._written_to[key]:
            self.written.skipped += count  # an earlier attempt of this task wrote it
            return
        batches = parse_raw(topic, builder.build(), self._now())
        (result,) = self._writer.append([AppendRequest(topic, key[1], batches)])
        if result.error is not None:
            raise result.error
        self.written.records += count
        self.written.batches += 1
        self.written.partitions.add(key)

    def _last_sequence(self, topic: Topic, partition: int) -> int:
        item = self._meta.get(keys.log_pk(topic.topic_id, partition), keys.producer_sk(self._pid))
        if item is None:
            return -1
        return ProducerState.from_attributes(self._pid, dict(item)).last_sequence


_CODECS = {"producer": "none", "uncompressed": "none"}


def _codec(topic: Topic) -> str:
    configured = topic.config("compression.type")
    return _CODECS.get(configured, configured)


def rows_from(values: Iterator[Mapping[str, object]], default_topic: str | None) -> Iterator[Row]:
    """Spark rows (as dicts) to :class:`Row`: ``value`` (and optionally ``key``, ``headers``,
    ``topic``, ``partition``, ``timestamp``); strings are written as UTF-8."""
    for raw in values:
        topic = raw.get("topic") or default_topic
        if not topic:
            raise ValueError("a row has no topic: add a topic column or the topic option")
        given = raw.get("headers")
        pairs: Iterable[object] = given if isinstance(given, list | tuple) else ()
        headers = tuple(_header(h) for h in pairs)
        stamp, partition = raw.get("timestamp"), raw.get("partition")
        yield Row(
            topic=str(topic),
            partition=None if partition is None else int(str(partition)),
            key=_bytes(raw.get("key")),
            value=_bytes(raw.get("value")),
            headers=headers,
            timestamp=None if stamp is None else _millis(stamp),
        )


def _header(pair: object) -> tuple[str, bytes | None]:
    if isinstance(pair, Mapping):
        return str(pair["key"]), _bytes(pair.get("value"))
    if isinstance(pair, list | tuple) and len(pair) == 2:
        return str(pair[0]), _bytes(pair[1])
    raise ValueError(f"a header is (key, value), not {pair!r}")


def _bytes(value: object) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return str(value).encode("utf-8")


def _millis(value: object) -> int:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return int(value.timestamp() * 1000)
    return int(str(value))
