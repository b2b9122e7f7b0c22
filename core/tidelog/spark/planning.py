"""Planning a read on the driver: offset ranges per topic-partition, resolved against the log,
split into tasks, each carrying the index entries (S3 keys and byte ranges) it reads.
Executors then do only ranged GETs and decoding."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tidelog.log.entries import LogEntry
from tidelog.log.read.fetch import LogReader
from tidelog.log.topics import Topic
from tidelog.spark.options import OffsetSpec, OptionError, Subscription
from tidelog.txn.stable import AbortedTxn


class DataLossError(RuntimeError):
    """Offsets a query needs are gone (retention); with failOnDataLoss=false they are skipped."""


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    topic_id: str
    start: int
    end: int  # exclusive

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Task:
    """One Spark task: an offset range and the entries that hold it; read_committed, the
    aborted transactions over the range (its markers are never rows either)."""

    range: OffsetRange
    entries: tuple[LogEntry, ...]
    aborted: tuple[AbortedTxn, ...] = ()


def resolve(
    reader: LogReader,
    topics: Mapping[str, Topic],
    subscription: Subscription,
    start: OffsetSpec | Mapping[tuple[str, int], int],
    end: OffsetSpec | Mapping[tuple[str, int], int],
    *,
    fail_on_data_loss: bool,
    no_match: str = "error",
    committed: bool = True,
) -> list[OffsetRange]:
    """The offset range of every subscribed partition, ``start`` and ``end`` being specs (batch
    options) or exact offsets (a streaming micro-batch). read_committed (``committed``) ends at
    the last stable offset: past it, a transaction is still open."""
    sizes = {name: topic.partitions for name, topic in topics.items()}
    ranges = []
    for tp in subscription.partitions(sizes):
        topic = topics[tp[0]]
        head = reader.full_head(topic.topic_id, tp[1])
        log_start = head.log_start_offset
        high_watermark = head.last_stable_offset if committed else head.next_offset
        bounds = (log_start, high_watermark)
        first = _offset(reader, topic, tp, start, bounds, no_match=no_match)
        last = _offset(reader, topic, tp, end, bounds, no_match="latest")
        last = min(last, high_watermark)
        if first < log_start:
            if fail_on_data_loss:
                raise DataLossError(
                    f"{tp[0]}-{tp[1]}: offsets {first}..{log_start - 1} are gone (retention); "
                    "set failOnDataLoss=false to skip them"
                )
            first = log_start
        if first > last:
            raise OptionError(f"{tp[0]}-{tp[1]}: the range starts at {first}, after its end {last}")
        ranges.append(OffsetRange(tp[0], tp[1], topic.topic_id, first, last))
    return ranges


def _offset(
    reader: LogReader,
    topic: Topic,
    tp: tuple[str, int],
    spec: OffsetSpec | Mapping[tuple[str, int], int],
    bounds: tuple[int, int],
    *,
    no_match: str,
) -> int:
    log_start, high_watermark = bounds
    if not isinstance(spec, OffsetSpec):
        return spec.get(tp, log_start)  # a partition new since the last micro-batch: all of it
    kind, value = spec.for_partition(tp)
    if kind == "earliest":
        return log_start
    if kind == "latest":
        return high_watermark
    if kind == "offset":
        assert value is not None
        return value
    assert value is not None
    found = reader.offset_for_timestamp(topic.topic_id, tp[1], value)
    if found is not None:
        return found[0]
    if no_match == "latest":
        return high_watermark
    raise OptionError(
        f"{tp[0]}-{tp[1]} has no record at or after timestamp {value} (set "
        "startingOffsetsByTimestampStrategy=latest to start at the end instead)"
    )


def split(ranges: Sequence[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Kafka's KafkaOffsetRangeCalculator: with minPartitions above the number of non-empty
    ranges, each range is cut into parts in proportion to its size."""
    ranges = [r for r in ranges if r.size > 0]
    if min_partitions is None or min_partitions <= len(ranges):
        return list(ranges)
    total = sum(r.size for r in ranges)
    out = []
    for r in ranges:
        parts = max(1, math.ceil(r.size / total * min_partitions))
        step = r.size / parts
        bounds = [r.start + round(step * i) for i in range(parts)] + [r.end]
        out += [
            OffsetRange(r.topic, r.partition, r.topic_id, a, b)
            for a, b in itertools.pairwise(bounds)
            if b > a
        ]
    return out


def plan(reader: LogReader, ranges: Sequence[OffsetRange], *, committed: bool = True) -> list[Task]:
    """Each range with the index entries holding its offsets (one lookup per range), and
    read_committed, the aborted transactions over it (one more)."""
    tasks = []
    for r in ranges:
        entries = []
        for entry in reader.entries(r.topic_id, r.partition, r.start):
            if entry.base_offset >= r.end:
                break
            entries.append(entry)
        aborted = reader.aborted(r.topic_id, r.partition, r.start, r.end) if committed else []
        tasks.append(Task(r, tuple(entries), tuple(aborted)))
    return tasks


def rate_limit(
    start: dict[tuple[str, int], int], end: dict[tuple[str, int], int], limit: int
) -> dict[tuple[str, int], int]:
    """Spark's Kafka source rate limit: ``limit`` offsets spread over the partitions in
    proportion to what each has waiting."""
    sizes = {tp: max(0, end[tp] - start.get(tp, end[tp])) for tp in end}
    total = sum(sizes.values())
    if total <= limit:
        return dict(end)
    out = {}
    for tp, last in end.items():
        begin = start.get(tp, last)
        share = limit * sizes[tp] / total
        step = int(share) if share >= 1 else (1 if sizes[tp] else 0)
        out[tp] = min(begin + step, last)
    return out
