"""Executor side of a read: a task's entries GET and decoded into rows of Spark's Kafka source
schema. Segments are read from their ``.index`` positions, so a task reading a slice of a large
segment GETs about that slice."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

from tidelog.log.entries import LogEntry
from tidelog.log.scan import committed_batches
from tidelog.log.segment import CorruptIndexError, OffsetIndex
from tidelog.spark.planning import Task
from tidelog.storage import ObjectStore

SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS = ", headers array<struct<key: string, value: binary>>"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
TIMESTAMP_TYPES = {"create": 0, "log_append": 1}


def schema(include_headers: bool) -> str:
    return SCHEMA + (HEADERS if include_headers else "")


def rows(task: Task, objects: ObjectStore, include_headers: bool) -> Iterator[tuple[object, ...]]:
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
            kind = TIMESTAMP_TYPES[batch.timestamp_type]
            for record in batch.records():
                if not r.start <= record.offset < r.end:
                    continue
                row: tuple[object, ...] = (
                    record.key,
                    record.value,
                    r.topic,
                    r.partition,
                    record.offset,
                    _EPOCH + datetime.timedelta(milliseconds=record.timestamp),
                    kind,
                )
                if include_headers:
                    row += ([(k, v) for k, v in record.headers],)
                yield row


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
