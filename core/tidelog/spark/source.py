"""The ``tidelog`` format: topics as DataFrames (batch and streaming), DataFrames into topics.

    spark.dataSource.register(TidelogDataSource)
    spark.read.format("tidelog").option("cluster", "tidelog").option("subscribe", "clicks").load()

Options follow Spark's Kafka source (see docs/spark.md). The driver plans (one index lookup per
partition range); executors do ranged GETs and decoding.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from tidelog.log.read.fetch import LogReader
from tidelog.log.topics import Topic, Topics
from tidelog.spark import options as opts
from tidelog.spark.planning import OffsetRange, Task, plan, rate_limit, resolve, split
from tidelog.spark.rows import arrow_batches, schema
from tidelog.spark.stores import stores
from tidelog.spark.write import BATCH_BYTES, producer_id, rows_from, write_rows

logger = logging.getLogger(__name__)

Offsets = dict[str, dict[str, int]]  # {"topic": {"partition": offset}}: JSON for checkpoints


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TidelogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "tidelog"

    def schema(self) -> str:
        return schema(opts.flag(self.options, "includeHeaders", False))

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(dict(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(dict(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise opts.OptionError("a log is appended to: use mode('append')")
        return BatchWriter(dict(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return StreamWriter(dict(self.options))


class _Planned(InputPartition):
    def __init__(self, task: Task) -> None:
        super().__init__(task)
        self.task = task


class _Reading:
    """What batch and streaming reads share: the connection, the log, the row decoding."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.connection = opts.Connection.from_options(options)
        self.subscription = opts.subscription(options)
        self.include_headers = opts.flag(options, "includeHeaders", False)
        self.fail_on_data_loss = opts.flag(options, "failOnDataLoss", True)
        self.min_partitions = opts.positive(options, "minPartitions")
        self.committed = opts.read_committed(options)

    def log(self) -> tuple[LogReader, dict[str, Topic]]:
        meta, objects = stores(self.connection)
        topics = {t.name: t for t in Topics(meta, _now_ms).list()}
        return LogReader(meta, objects), topics

    def tasks(self, ranges: Sequence[OffsetRange]) -> list[_Planned]:
        reader, _ = self.log()
        planned = plan(reader, split(ranges, self.min_partitions), committed=self.committed)
        return [_Planned(t) for t in planned]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, _Planned):
            return  # nothing was planned: Spark still runs one task, with its own partition
        _, objects = stores(self.connection)
        yield from arrow_batches(partition.task, objects, self.include_headers)


class BatchReader(_Reading, DataSourceReader):
    def partitions(self) -> Sequence[InputPartition]:
        reader, topics = self.log()
        ranges = resolve(
            reader,
            topics,
            self.subscription,
            opts.starting(self.options, streaming=False),
            opts.ending(self.options),
            fail_on_data_loss=self.fail_on_data_loss,
            no_match=opts.option(self.options, "startingOffsetsByTimestampStrategy", "error")
            or "error",
            committed=self.committed,
        )
        return self.tasks(ranges)


class StreamReader(_Reading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        if opts.option(options, "endingOffsets") is not None:
            raise opts.OptionError("endingOffsets is for batch queries only")
        self.max_offsets = opts.positive(options, "maxOffsetsPerTrigger")
        self.group = opts.option(options, "groupIdForLag")
        self.target: Offsets | None = None
        self._lag_committed: Offsets | None = None

    def initialOffset(self) -> Offsets:
        reader, topics = self.log()
        ranges = resolve(
            reader,
            topics,
            self.subscription,
            opts.starting(self.options, streaming=True),
            opts.OffsetSpec("latest"),
            fail_on_data_loss=self.fail_on_data_loss,
            committed=self.committed,
        )
        return _offsets({(r.topic, r.partition): r.start for r in ranges})

    def _latest(self) -> Offsets:
        reader, topics = self.log()
        sizes = {name: t.partitions for name, t in topics.items()}
        latest = {}
        for topic, partition in self.subscription.partitions(sizes):
            head = reader.full_head(topics[topic].topic_id, partition)
            latest[(topic, partition)] = (
                head.last_stable_offset if self.committed else head.next_offset
            )
        return _offsets(latest)

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._latest()

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable() if self.max_offsets is None else ReadMaxRows(self.max_offsets)

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        self._commit_for_lag(start)
        end = self.target if self.target is not None else self._latest()
        begin = _flat(start)
        latest = _flat(end)
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        return _offsets(latest)

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        reader, topics = self.log()
        ranges = resolve(
            reader,
            topics,
            opts.Subscription(assigned=tuple(sorted(_flat(end)))),
            _flat(start),
            _flat(end),
            fail_on_data_loss=self.fail_on_data_loss,
            committed=self.committed,
        )
        return self.tasks(ranges)

    def commit(self, end: Offsets) -> None:
        self._commit_for_lag(end)

    def _commit_for_lag(self, end: Offsets) -> None:
        """Record what the query has processed as the group's committed offsets, so its lag
        shows like any consumer's. Spark hands a micro-batch's start offsets to
        ``latestOffset`` only once the batch before has completed, and does not always call
        ``commit`` (not after the last batch of an availableNow run), so both report here."""
        if self.group is None or end == self._lag_committed:
            return
        self._lag_committed = end
        from tidelog.groups.coordinator import Coordinator  # noqa: PLC0415
        from tidelog.groups.offsets import OffsetCommit  # noqa: PLC0415

        meta, objects = stores(self.connection)
        topics = Topics(meta, _now_ms)
        coordinator = Coordinator(
            meta, topics, LogReader(meta, objects), _NoRebalance(), clock_ms=_now_ms
        )
        commits = [OffsetCommit(t, p, o) for (t, p), o in sorted(_flat(end).items())]
        for result in coordinator.commit(self.group, "", -1, commits):
            if result.error is not None:
                logger.warning(
                    "lag commit of %s-%d: %s", result.topic, result.partition, result.error.message
                )


class _NoRebalance:
    def start(
        self,
        group: str,
        generation: int,
        delay_ms: int,
        *,
        incarnation: str = "",
        protocol: str = "classic",
    ) -> None:
        raise RuntimeError("a Spark query commits offsets for lag only; it never joins groups")


def _offsets(flat: dict[tuple[str, int], int]) -> Offsets:
    out: Offsets = {}
    for (topic, partition), offset in sorted(flat.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def _flat(offsets: Offsets) -> dict[tuple[str, int], int]:
    return {(t, int(p)): int(o) for t, ps in offsets.items() for p, o in ps.items()}


# -- writing -------------------------------------------------------------------------------


class Committed(WriterCommitMessage):
    def __init__(self, records: int, skipped: int) -> None:
        self.records = records
        self.skipped = skipped


class _Writing:
    def __init__(self, options: dict[str, str]) -> None:
        self.connection = opts.Connection.from_options(options)
        self.topic = opts.option(options, "topic")
        self.batch_bytes = opts.positive(options, "batchBytes") or BATCH_BYTES

    def write_task(self, write_id: str, rows_in: Iterator[dict[str, Any]]) -> Committed:
        context = TaskContext.get()
        task_partition = context.partitionId() if context is not None else 0
        meta, objects = stores(self.connection)
        written = write_rows(
            meta,
            objects,
            rows_from(rows_in, self.topic),
            pid=producer_id(write_id, task_partition),
            task_partition=task_partition,
            batch_bytes=self.batch_bytes,
        )
        return Committed(written.records, written.skipped)


def _rows(batches: Iterator[Any]) -> Iterator[dict[str, Any]]:
    """Spark hands a writing task its rows as Arrow batches (the Arrow writers): converted a
    batch at a time, not as Spark's Row objects one by one."""
    for batch in batches:
        yield from batch.to_pylist()


class BatchWriter(_Writing, DataSourceArrowWriter):
    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        # Made on the driver, shipped with every task: all attempts of a task share it.
        self.write_id = opts.option(options, "writeId") or str(uuid.uuid4())

    def write(self, iterator: Iterator[Any]) -> Committed:
        return self.write_task(self.write_id, _rows(iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        done = [m for m in messages if isinstance(m, Committed)]
        logger.info(
            "wrote %d records (%d already there)",
            sum(m.records for m in done),
            sum(m.skipped for m in done),
        )


class StreamWriter(_Writing, DataSourceStreamArrowWriter):
    """A micro-batch replayed after a restart writes as the same producers: their ids derive
    from the query's checkpoint location (or ``writeId``), the batch id and the task."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        stable = opts.option(options, "writeId") or opts.option(options, "checkpointLocation")
        if stable is None:
            raise opts.OptionError(
                "a streaming write needs checkpointLocation (or writeId) to write exactly once"
            )
        self.write_id = stable

    def write(self, iterator: Iterator[Any]) -> Committed:
        context = TaskContext.get()
        batch = context.getLocalProperty("streaming.sql.batchId") if context else None
        return self.write_task(f"{self.write_id}/{batch}", _rows(iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        done = [m for m in messages if isinstance(m, Committed)]
        logger.info("micro-batch %d: wrote %d records", batchId, sum(m.records for m in done))
