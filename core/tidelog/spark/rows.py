"""Executor side of a read: a task's entries GET and decoded into Arrow batches of Spark's
Kafka source schema. Segments are read from their ``.index`` positions, so a task reading a
slice of a large segment GETs about that slice."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tidelog.log.entries import LogEntry
from tidelog.log.scan import committed_batches
from tidelog.log.segment import CorruptIndexError, OffsetIndex
from tidelog.records import RecordBatch
from tidelog.records.columns import columns
from tidelog.spark.planning import Task
from tidelog.storage import ObjectStore
from tidelog.txn.markers import appended
from tidelog.txn.stable import visible

SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS = ", headers array<struct<key: string, value: binary>>"
TIMESTAMP_TYPES = {"create": 0, "log_append": 1}


def schema(include_headers: bool) -> str:
    return SCHEMA + (HEADERS if include_headers else "")


def arrow_batches(task: Task, objects: ObjectStore, include_headers: bool) -> Iterator[Any]:
    """The task's rows as Arrow record batches, one per stored batch, decoded column by column
    (:mod:`tidelog.records.columns`): Spark takes them without converting row by row."""
    import pyarrow as pa  # noqa: PLC0415 - on the executor
    import pyarrow.compute as pc  # noqa: PLC0415

    schema = _arrow_schema(pa, include_headers)
    r = task.range
    topic = pa.scalar(r.topic, pa.string())
    partition = pa.scalar(r.partition, pa.int32())
    for batch in _batches(task, objects):
        records = columns(batch, r.start, r.end, headers=include_headers)
        count = len(records)
        if not count:
            continue
        millis = pa.array(records.timestamps, pa.int64())
        arrays = [
            pa.array(records.keys, pa.binary()),
            pa.array(records.values, pa.binary()),
            pa.repeat(topic, count),
            pa.repeat(partition, count),
            pa.array(records.offsets, pa.int64()),
            pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC")),
            pa.repeat(pa.scalar(TIMESTAMP_TYPES[batch.timestamp_type], pa.int32()), count),
        ]
        if include_headers:
            pairs = [[{"key": k, "value": v} for k, v in h] for h in records.headers]
            arrays.append(pa.array(pairs, schema.field("headers").type))
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _arrow_schema(pa: Any, include_headers: bool) -> Any:
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        fields.append(pa.field("headers", pa.list_(header)))
    return pa.schema(fields)


def _batches(task: Task, objects: ObjectStore) -> Iterator[RecordBatch]:
    r = task.range
    for entry in task.entries:
        start, end = _byte_range(entry, objects, r.start, r.end)
        if start >= end:
            continue
        data = objects.get(entry.object_key, start, end)
        for batch in committed_batches(entry, data):
            if batch.base_offset >= r.end:
                return
            if batch.last_offset < r.start or batch.is_control_batch:
                continue
            if task.aborted and not visible(appended(batch), task.aborted):
                continue
            yield batch


def _byte_range(entry: LogEntry, objects: ObjectStore, first: int, end: int) -> tuple[int, int]:
    """The bytes of ``entry`` that hold offsets [first, end): all of a run; for a segment, from
    the index entry at or below ``first`` to the one after the first at or past ``end``."""
    if not entry.is_segment or entry.index is None:
        return entry.start, entry.end
    try:
        index = OffsetIndex(entry.base_offset, objects.get(entry.index))
    except CorruptIndexError:
        return entry.start, entry.end
    start = index.lookup(first)[1] if first > entry.base_offset else 0
    stop = entry.end
    for slot in range(len(index)):
        offset, _ = index.entry(slot)
        if offset >= end:
            # Batches after this entry's begin past ``end``: stop at the next entry.
            if slot + 1 < len(index):
                stop = entry.start + index.entry(slot + 1)[1]
            break
    return entry.start + start, stop
