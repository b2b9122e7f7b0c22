"""An index entry's bytes, batch by batch, each with its committed offsets.

A run's stored batches keep the producer's baseOffset: their offsets are counted from the
entry's base. A segment's batches carry their committed offsets already.
"""

from __future__ import annotations

from collections.abc import Iterator

from tidelog.log.entries import LogEntry
from tidelog.records import CorruptRecordError, RecordBatch, iter_batches, with_base_offset


def committed_batches(entry: LogEntry, data: bytes) -> Iterator[RecordBatch]:
    """The batches of ``data`` (the whole of ``entry``'s byte range), committed base offsets
    written in (a copy for runs; segments are served as they are)."""
    offset = entry.base_offset
    for stored in iter_batches(data):
        if not isinstance(stored, RecordBatch):
            raise CorruptRecordError(f"{entry.object_key} holds a legacy batch")
        if entry.is_segment:
            yield stored
            continue
        yield RecordBatch(with_base_offset(stored.buffer, offset))
        offset += stored.last_offset_delta + 1
    if not entry.is_segment and offset != entry.last_offset + 1:
        raise CorruptRecordError(
            f"{entry.object_key}[{entry.start}:{entry.end}] holds offsets to {offset - 1}, "
            f"its index item says {entry.last_offset}"
        )
