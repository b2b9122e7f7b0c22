"""Kafka's log segment on S3: the ``.log`` bytes and their sparse ``.index`` and ``.timeindex``.

The files are byte-for-byte Kafka's (seed 001, "Log"): a ``.log`` is RecordBatches with their
committed base offsets; an ``.index`` entry is 4-byte relative offset + 4-byte position, one per
``index.interval.bytes`` of log; a ``.timeindex`` entry is 8-byte timestamp + 4-byte relative
offset, recorded only when the segment's max timestamp grows. Entries are made exactly where
Kafka's ``LogSegment.append`` and ``LogSegment.recover`` make them (per batch, once more than the
interval has passed since the last entry), so a Kafka tool reading these files sees its own.

Everything here is pure: bytes in, bytes or positions out.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from tidelog.records import CorruptRecordError, InvalidRecordError, RecordBatch, iter_batches

INDEX_INTERVAL_BYTES = 4096  # Kafka's index.interval.bytes default
NO_TIMESTAMP = -1
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
MAX_SEGMENT_BYTES = 2**31 - 1  # positions are 4-byte signed


class CorruptIndexError(CorruptRecordError):
    """An index fails Kafka's sanity check; rebuild it from the log."""


@dataclass(frozen=True)
class OffsetIndex:
    """Sparse offset -> byte position, as Kafka's ``OffsetIndex``."""

    base_offset: int
    data: bytes

    def __post_init__(self) -> None:
        if len(self.data) % _OFFSET_ENTRY.size:
            raise CorruptIndexError(
                f"offset index of {len(self.data)} bytes is not a whole number of entries"
            )
        last_offset, last_position = -1, -1
        for relative, position in _OFFSET_ENTRY.iter_unpack(self.data):
            if relative <= last_offset or position <= last_position:
                raise CorruptIndexError("offset index entries do not increase")
            last_offset, last_position = relative, position

    def __len__(self) -> int:
        return len(self.data) // _OFFSET_ENTRY.size

    def entry(self, slot: int) -> tuple[int, int]:
        relative, position = _OFFSET_ENTRY.unpack_from(self.data, slot * _OFFSET_ENTRY.size)
        return self.base_offset + relative, position

    def lookup(self, target: int) -> tuple[int, int]:
        """(offset, position) of the greatest entry <= ``target``; (base, 0) if none is."""
        slot = _largest_lower_bound(len(self), lambda s: self.entry(s)[0], target)
        return (self.base_offset, 0) if slot < 0 else self.entry(slot)


@dataclass(frozen=True)
class TimeIndex:
    """Sparse max timestamp so far -> offset, as Kafka's ``TimeIndex``."""

    base_offset: int
    data: bytes

    def __post_init__(self) -> None:
        if len(self.data) % _TIME_ENTRY.size:
            raise CorruptIndexError(
                f"time index of {len(self.data)} bytes is not a whole number of entries"
            )
        last_timestamp, last_offset = NO_TIMESTAMP - 1, -1
        for timestamp, relative in _TIME_ENTRY.iter_unpack(self.data):
            if timestamp <= last_timestamp or relative < last_offset or relative < 0:
                raise CorruptIndexError("time index entries do not increase")
            last_timestamp, last_offset = timestamp, relative

    def __len__(self) -> int:
        return len(self.data) // _TIME_ENTRY.size

    def entry(self, slot: int) -> tuple[int, int]:
        timestamp, relative = _TIME_ENTRY.unpack_from(self.data, slot * _TIME_ENTRY.size)
        return timestamp, self.base_offset + relative

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the greatest entry whose timestamp <= ``timestamp``;
        (NO_TIMESTAMP, base) if none is."""
        slot = _largest_lower_bound(len(self), lambda s: self.entry(s)[0], timestamp)
        return (NO_TIMESTAMP, self.base_offset) if slot < 0 else self.entry(slot)


def _largest_lower_bound(count: int, get: Callable[[int], int], target: int) -> int:
    """Kafka's ``largestLowerBoundSlotFor``: the last slot whose key <= target, or -1."""
    lo, hi = 0, count - 1
    if count == 0 or get(0) > target:
        return -1
    while lo < hi:  # invariant: get(lo) <= target
        mid = (lo + hi + 1) // 2
        if get(mid) <= target:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True)
class Segment:
    """A closed segment: its three files and what the metadata item records of it."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    batches: int
    log: bytes
    index: bytes
    timeindex: bytes


class SegmentBuilder:
    """Appends batches (committed base offsets already in them) as Kafka's LogSegment does."""

    def __init__(self, base_offset: int, index_interval_bytes: int = INDEX_INTERVAL_BYTES) -> None:
        self.base_offset = base_offset
        self._interval = index_interval_bytes
        self._log: list[bytes] = []
        self._size = 0
        self._since_index = 0
        self._index = bytearray()
        self._timeindex = bytearray()
        self._last_time_entry: tuple[int, int] | None = None
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max = -1
        self._last_offset = base_offset - 1
        self._batches = 0

    @property
    def size(self) -> int:
        return self._size

    def append(self, batch: RecordBatch) -> None:
        last = batch.last_offset
        if batch.base_offset <= self._last_offset or batch.base_offset < self.base_offset:
            raise CorruptRecordError(
                f"batch at offset {batch.base_offset} does not follow {self._last_offset}"
            )
        if last - self.base_offset > 2**31 - 1 or self._size + batch.size_in_bytes > (
            MAX_SEGMENT_BYTES
        ):
            raise ValueError("a segment spans at most 2^31 offsets and bytes")
        if batch.max_timestamp > self._max_timestamp:
            self._max_timestamp, self._offset_of_max = batch.max_timestamp, last
        if self._since_index > self._interval:
            self._index += _OFFSET_ENTRY.pack(last - self.base_offset, self._size)
            self._maybe_time_entry()
            self._since_index = 0
        data = bytes(batch.buffer)
        self._log.append(data)
        self._size += len(data)
        self._since_index += len(data)
        self._last_offset = last
        self._batches += 1

    def _maybe_time_entry(self) -> None:
        entry = (self._max_timestamp, self._offset_of_max)
        if self._offset_of_max < 0:
            return
        if self._last_time_entry is None or entry[0] > self._last_time_entry[0]:
            self._timeindex += _TIME_ENTRY.pack(entry[0], entry[1] - self.base_offset)
            self._last_time_entry = entry

    def close(self) -> Segment:
        """The finished segment; the time index gets its closing entry, as on a roll. (A
        segment compaction emptied has no batches, and keeps its place in the offsets.)"""
        self._maybe_time_entry()
        return Segment(
            base_offset=self.base_offset,
            last_offset=self._last_offset,
            max_timestamp=self._max_timestamp,
            batches=self._batches,
            log=b"".join(self._log),
            index=bytes(self._index),
            timeindex=bytes(self._timeindex),
        )


def build(
    base_offset: int,
    batches: Iterable[RecordBatch],
    index_interval_bytes: int = INDEX_INTERVAL_BYTES,
) -> Segment:
    builder = SegmentBuilder(base_offset, index_interval_bytes)
    for batch in batches:
        builder.append(batch)
    return builder.close()


def recover(
    base_offset: int, log: bytes, index_interval_bytes: int = INDEX_INTERVAL_BYTES
) -> tuple[Segment | None, int]:
    """Kafka's segment recovery: walk the batches, check each one's size and CRC, stop at the
    first bad byte, rebuild both indexes. Returns the valid segment (None if nothing is valid)
    and how many bytes were truncated."""
    builder = SegmentBuilder(base_offset, index_interval_bytes)
    for batch in _valid_prefix(log):
        try:
            builder.append(batch)
        except (CorruptRecordError, ValueError):
            break
    if not builder.size:
        return None, len(log)
    return builder.close(), len(log) - builder.size


def _valid_prefix(log: bytes) -> Iterator[RecordBatch]:
    try:
        for batch in iter_batches(log):
            if not isinstance(batch, RecordBatch) or not batch.is_valid():
                return
            yield batch
    except (CorruptRecordError, InvalidRecordError):  # a damaged header: the end of the valid log
        return


def batches_from(log: bytes | memoryview) -> Iterator[RecordBatch]:
    """The whole batches of ``log`` (a read may end inside one: it is left out)."""
    for batch in iter_batches(log):
        if not isinstance(batch, RecordBatch):
            raise CorruptRecordError("a segment holds only RecordBatch v2")
        yield batch
