"""Reading the log: committed batches from an offset, and the offset for a time (ListOffsets).

A fetch reads the partition's head (strongly consistent: the high watermark), walks the index
items from the one holding the offset, plans byte ranges up to ``max_bytes`` (a segment's range
starts at its ``.index`` position for the offset), GETs them concurrently through the read-through
cache, and patches each run batch's 8-byte baseOffset with its committed offset. Kafka's rules:

- at least one whole batch, even one larger than ``max_bytes`` or past a compacted gap, so a
  consumer never stalls;
- whole batches only after that, while they fit;
- nothing at or above the high watermark read before the index (a later commit is not seen);
- an offset below the log start or above the high watermark is OFFSET_OUT_OF_RANGE;
- read_committed (``committed``): nothing at or above the last stable offset, and the aborted
  transactions the batches returned overlap (Kafka's FetchIsolation.TXN_COMMITTED), for the
  client to drop their records.
"""

from __future__ import annotations

import itertools
import logging
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from tidelog.errors import RetriableError
from tidelog.log import keys
from tidelog.log.aborted import aborted_between
from tidelog.log.entries import LogEntry
from tidelog.log.feed import Committed
from tidelog.log.head import (
    Head,
    OffsetOutOfRangeError,
    high_watermark,
    high_watermarks,
    read_head,
    read_heads,
)
from tidelog.log.read.abortedcache import AbortedCache
from tidelog.log.read.cache import ObjectCache
from tidelog.log.read.indexcache import IndexCache
from tidelog.log.segment import INDEX_INTERVAL_BYTES, CorruptIndexError, OffsetIndex, TimeIndex
from tidelog.records import CorruptRecordError, RecordBatch, iter_batches, with_base_offset
from tidelog.storage import Item, MetadataStore, ObjectNotFoundError, ObjectStore
from tidelog.threads import ContextPool
from tidelog.txn.stable import AbortedTxn

logger = logging.getLogger(__name__)

_LENGTH = struct.Struct(">i")
_LENGTH_END = 12  # baseOffset (8) + batchLength (4)
_REPLANS = 3
_FIRST_PAGE = 16
"""Index entries read by a fetch's first query. A fetch needs entries only until its byte budget
is planned, so the index is read in pages that grow fourfold, not to its end (a DynamoDB page
is up to 1 MB: 256 read units, strongly consistent, for a fetch that needed a few items)."""
_MAX_PAGE = 1024
_T = TypeVar("_T")


class IndexMovedError(RetriableError):
    """Roll, retention or compaction swapped index items under a read, again and again."""


@dataclass(frozen=True)
class FetchedBatch:
    data: bytes  # committed baseOffset in place
    batch: RecordBatch


@dataclass
class PartitionData:
    log_start_offset: int
    high_watermark: int
    next_offset: int
    batches: list[FetchedBatch] = field(default_factory=list)
    last_stable_offset: int = -1  # -1: unknown
    committed: bool = False  # read_committed: read only below the last stable offset
    aborted: list[AbortedTxn] = field(default_factory=list)  # read_committed only

    @property
    def until(self) -> int:
        """Where this read stops: the last stable offset for read_committed, else the end."""
        return self.last_stable_offset if self.committed else self.high_watermark

    @property
    def size(self) -> int:
        return sum(len(b.data) for b in self.batches)


@dataclass(frozen=True)
class _Read:
    entry: LogEntry
    start: int  # absolute positions in the object
    end: int


class LogReader:
    def __init__(
        self,
        meta: MetadataStore,
        objects: ObjectStore,
        cache: ObjectCache | None = None,
        *,
        whole_objects: bool = False,
        index_cache: IndexCache | None = None,
        aborted_cache: AbortedCache | None = None,
        concurrency: int = 8,
    ) -> None:
        """``whole_objects``: cache flush objects whole, not run by run (see ObjectCache).
        ``index_cache``: remember index entries read lately (see IndexCache)."""
        self._meta = meta
        self._objects = objects
        self._cache = cache
        self._whole_objects = whole_objects and cache is not None
        self._index_cache = index_cache
        self._aborted_cache = aborted_cache
        self._pool = ContextPool(concurrency, thread_name_prefix="tidelog-get")

    @property
    def cache(self) -> ObjectCache | None:
        return self._cache

    @property
    def index_cache(self) -> IndexCache | None:
        return self._index_cache

    def remember_committed(self, committed: Committed) -> None:
        """The index entries this process just wrote, remembered as if read: a fetch from its
        own commit then queries no index (tidelog.log.feed)."""
        if self._index_cache is not None:
            for key, entries in committed.entries.items():
                self._index_cache.remember(keys.log_pk(*key), entries)

    # -- the head and the index ----------------------------------------------------------

    def head(self, topic_id: str, partition: int) -> tuple[int, int]:
        return high_watermark(self._meta, topic_id, partition)

    def heads(
        self, partitions: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], tuple[int, int]]:
        return high_watermarks(self._meta, partitions)

    def full_head(self, topic_id: str, partition: int) -> Head:
        """The head with its open transactions (the last stable offset)."""
        return read_head(self._meta, topic_id, partition)

    def aborted(self, topic_id: str, partition: int, start: int, end: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping offsets ``[start, end)``."""
        return aborted_between(self._meta, topic_id, partition, start, end)

    def full_heads(self, partitions: Sequence[tuple[str, int]]) -> dict[tuple[str, int], Head]:
        """``full_head`` of many partitions, a hundred a call (BatchGetItem)."""
        return read_heads(self._meta, partitions)

    def entries(
        self, topic_id: str, partition: int, offset: int, until: int | None = None
    ) -> Iterator[LogEntry]:
        """Index entries from the one holding ``offset``, in offset order, each covering offsets
        past the ones before it (leftovers of a half-done roll are skipped), up to the one
        holding ``until - 1`` when ``until`` is given. Entries cover the log without gaps; a gap
        means a roll, retention or compaction swapped items between two reads of the index,
        and raises :class:`IndexMovedError`."""
        if until is not None and offset >= until:
            return
        pk = keys.log_pk(topic_id, partition)
        covered = offset
        if self._index_cache is not None:
            for entry in self._index_cache.run_from(pk, offset):
                yield entry
                covered = entry.last_offset + 1
                if until is not None and covered >= until:
                    return
        at = keys.index_sk(covered)
        items = self._index(pk, at)
        aligned = next(items, None)
        if aligned is None or aligned["sk"] != at:
            # The offset is inside an entry (or past the last): find the one holding it. A
            # consumer reading whole runs lands on an entry's base and skips this query.
            first = next(
                iter(self._meta.query(pk, lo=keys.INDEX_PREFIX, hi=at, descending=True, limit=1)),
                None,
            )
            if first is not None:
                self._remember(pk, [first])
            items = self._index(pk, str(first["sk"]) if first else at)
        else:
            items = itertools.chain([aligned], items)
        for item in items:
            entry = LogEntry.from_item(item)
            if entry.last_offset < covered:
                continue
            if entry.base_offset > covered:
                raise IndexMovedError(f"{pk}: no index entry holds offset {covered}")
            yield entry
            covered = entry.last_offset + 1
            if until is not None and covered >= until:
                return

    def _index(self, pk: str, lo: str) -> Iterator[Item]:
        """Index items from sort key ``lo`` on, a page at a time, each page read only once the
        one before it is used up."""
        page = _FIRST_PAGE
        while True:
            items = list(self._meta.query(pk, lo=lo, hi=keys.INDEX_PREFIX + "~", limit=page))
            self._remember(pk, items)
            yield from items
            if len(items) < page:
                return
            lo = keys.index_sk(LogEntry.from_item(items[-1]).base_offset + 1)
            page = min(page * 4, _MAX_PAGE)

    def _remember(self, pk: str, items: Sequence[Item]) -> None:
        if self._index_cache is not None and items:
            self._index_cache.remember(pk, [LogEntry.from_item(item) for item in items])

    # -- fetch ---------------------------------------------------------------------------

    def fetch(
        self,
        topic_id: str,
        partition: int,
        offset: int,
        max_bytes: int,
        head: Head | None = None,
        *,
        committed: bool = False,
    ) -> PartitionData:
        """Committed batches from ``offset`` (``committed``: read_committed's). An object that
        vanished under the read was replaced (rolled, compacted) and collected after a grace
        period this read outlived: the index now points elsewhere, so the read starts over.

        ``head`` is the partition's when the caller read it with others (``full_heads``, one
        call for many partitions); a read that starts over reads it again."""
        heads = iter([head] if head is not None else [])
        return self._replanning(
            keys.log_pk(topic_id, partition),
            lambda: self._fetch(
                topic_id,
                partition,
                offset,
                max_bytes,
                next(heads, None) or read_head(self._meta, topic_id, partition),
                committed=committed,
            ),
        )

    def _replanning(self, pk: str, read: Callable[[], _T]) -> _T:
        for _ in range(_REPLANS):
            try:
                return read()
            except (ObjectNotFoundError, IndexMovedError) as exc:
                logger.info("the index moved under a read (%s); reading again", exc)
                if self._index_cache is not None:
                    self._index_cache.forget(pk)
        try:
            return read()
        except ObjectNotFoundError as exc:
            raise IndexMovedError(str(exc)) from exc

    def _fetch(
        self,
        topic_id: str,
        partition: int,
        offset: int,
        max_bytes: int,
        head: Head,
        *,
        committed: bool,
    ) -> PartitionData:
        log_start, high_watermark = head.log_start_offset, head.next_offset
        if not log_start <= offset <= high_watermark:
            raise OffsetOutOfRangeError(offset, log_start, high_watermark)
        result = PartitionData(
            log_start,
            high_watermark,
            offset,
            last_stable_offset=head.last_stable_offset,
            committed=committed,
        )
        position = -1  # read on past a compacted gap the plan ended in, as Kafka's read does
        while not result.batches and position < result.next_offset < result.until:
            position = result.next_offset
            reads = self._plan(topic_id, partition, position, result.until, max_bytes)
            for read, data in zip(reads, self._get_all(reads), strict=True):
                if not self._collect(read, data, result, max_bytes):
                    break
        if committed and result.batches and head.last_abort >= offset:
            end = result.next_offset
            result.aborted = (
                self._aborted_cache.between(
                    topic_id, partition, offset, end, last_abort=head.last_abort
                )
                if self._aborted_cache is not None
                else aborted_between(self._meta, topic_id, partition, offset, end)
            )
        return result

    def _plan(
        self, topic_id: str, partition: int, offset: int, high_watermark: int, max_bytes: int
    ) -> list[_Read]:
        reads: list[_Read] = []
        planned = 0
        for entry in self.entries(topic_id, partition, offset, until=high_watermark):
            start, end = entry.start, entry.end
            if entry.is_segment:
                if offset > entry.base_offset:
                    start += self._position(entry, offset)
                # The index entry may sit up to an interval (plus a batch) before the offset.
                end = min(end, start + max(max_bytes - planned, 0) + 2 * INDEX_INTERVAL_BYTES)
            reads.append(_Read(entry, start, end))
            planned += end - start
            if planned >= max_bytes:
                break
        return reads

    def _collect(self, read: _Read, data: bytes, result: PartitionData, max_bytes: int) -> bool:
        """Add ``read``'s wanted batches to ``result``; False when the fetch is complete."""
        entry, position = read.entry, read.start
        next_run_offset = entry.base_offset  # runs: offsets counted from the item's base
        size = result.size
        while True:
            reader = iter_batches(data)
            for stored in reader:
                if not isinstance(stored, RecordBatch):
                    raise CorruptRecordError(f"{entry.object_key} holds a legacy batch")
                base = stored.base_offset if entry.is_segment else next_run_offset
                last = base + stored.last_offset_delta
                next_run_offset = last + 1
                if base >= result.until:
                    return False
                if last < result.next_offset:
                    continue
                if result.batches and size + stored.size_in_bytes > max_bytes:
                    return False
                raw = bytes(stored.buffer)
                patched = raw if entry.is_segment else with_base_offset(raw, base)
                result.batches.append(FetchedBatch(patched, RecordBatch(patched)))
                size += len(patched)
                result.next_offset = last + 1
            position += reader.position
            if position >= entry.end:
                # The whole entry is read: offsets it covers and holds no batch for (a
                # compacted segment) are passed over.
                result.next_offset = min(
                    max(result.next_offset, entry.last_offset + 1), result.until
                )
                return result.next_offset < result.until
            if result.batches:
                return False  # the planned range ends inside the budget's last batch
            data = self._rest_of_batch(entry, position, data[reader.position :])

    def _rest_of_batch(self, entry: LogEntry, position: int, partial: bytes) -> bytes:
        """The first batch did not fit in the planned range: read the whole of it."""
        if len(partial) < _LENGTH_END:
            partial = self._bytes(entry, position, min(entry.end, position + _LENGTH_END))
        (length,) = _LENGTH.unpack_from(partial, 8)
        if length < 0:
            raise CorruptRecordError(f"{entry.object_key}: negative batch length at {position}")
        return self._bytes(entry, position, min(entry.end, position + _LENGTH_END + length))

    # -- ListOffsets ---------------------------------------------------------------------

    def offset_for_timestamp(
        self, topic_id: str, partition: int, timestamp: int
    ) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp >= ``timestamp``, scanning
        from the first entry whose max timestamp reaches it (Kafka's ``fetchOffsetByTimestamp``);
        None when no record does."""
        return self._replanning(
            keys.log_pk(topic_id, partition),
            lambda: self._offset_for_timestamp(topic_id, partition, timestamp),
        )

    def _offset_for_timestamp(
        self, topic_id: str, partition: int, timestamp: int
    ) -> tuple[int, int] | None:
        log_start, high_watermark = self.head(topic_id, partition)
        for entry in self.entries(topic_id, partition, log_start, until=high_watermark):
            if entry.max_timestamp < timestamp:
                continue
            start = entry.start
            if entry.is_segment and entry.timeindex is not None:
                # Search below the target: every record before an entry for ts - 1 is older.
                found = self._timeindex(entry)
                if found is not None:
                    _, offset = found.lookup(timestamp - 1)
                    if offset > entry.base_offset:
                        start += self._position(entry, offset)
            data = PartitionData(log_start, high_watermark, max(log_start, entry.base_offset))
            self._collect(
                _Read(entry, start, entry.end),
                self._bytes(entry, start, entry.end),
                data,
                entry.size,
            )
            for fetched in data.batches:
                if fetched.batch.max_timestamp < timestamp:
                    continue
                for record in fetched.batch.records():
                    if record.offset >= log_start and record.timestamp >= timestamp:
                        return record.offset, record.timestamp
        return None

    def offset_for_max_timestamp(self, topic_id: str, partition: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp, the first of them if
        several share it (Kafka's ListOffsets -3, KIP-734); None for an empty log."""
        return self._replanning(
            keys.log_pk(topic_id, partition),
            lambda: self._offset_for_max_timestamp(topic_id, partition),
        )

    def _offset_for_max_timestamp(self, topic_id: str, partition: int) -> tuple[int, int] | None:
        log_start, high_watermark = self.head(topic_id, partition)
        latest: LogEntry | None = None
        for entry in self.entries(topic_id, partition, log_start, until=high_watermark):
            if latest is None or entry.max_timestamp > latest.max_timestamp:
                latest = entry
        if latest is None:
            return None
        data = PartitionData(log_start, high_watermark, max(log_start, latest.base_offset))
        self._collect(
            _Read(latest, latest.start, latest.end),
            self._bytes(latest, latest.start, latest.end),
            data,
            latest.size,
        )
        for fetched in data.batches:
            if fetched.batch.max_timestamp == latest.max_timestamp:
                for record in fetched.batch.records():
                    if record.offset >= log_start and record.timestamp == latest.max_timestamp:
                        return record.offset, record.timestamp
        return None

    # -- bytes -----------------------------------------------------------------------------

    def _get_all(self, reads: Sequence[_Read]) -> list[bytes]:
        if len(reads) == 1:
            return [self._bytes(reads[0].entry, reads[0].start, reads[0].end)]
        futures = [self._pool.submit(self._bytes, r.entry, r.start, r.end) for r in reads]
        return [f.result() for f in futures]

    def _bytes(self, entry: LogEntry, start: int, end: int) -> bytes:
        if start >= end:
            return b""
        if self._cache is None:
            return self._objects.get(entry.object_key, start, end)
        if entry.is_segment:
            return self._cache.read_blocks(entry.object_key, start, end, entry.end)
        if self._whole_objects:
            return self._cache.read_within(entry.object_key, start, end)
        if (start, end) == (entry.start, entry.end):
            return self._cache.read(entry.object_key, start, end)
        return self._objects.get(entry.object_key, start, end)

    def _whole(self, key: str) -> bytes:
        if self._cache is None:
            return self._objects.get(key)
        return self._cache.read(key, 0, None)

    def _position(self, entry: LogEntry, offset: int) -> int:
        """Where in the segment to start reading for ``offset`` (0 if its index is unusable:
        a full scan is slower, never wrong)."""
        assert entry.index is not None
        try:
            return OffsetIndex(entry.base_offset, self._whole(entry.index)).lookup(offset)[1]
        except CorruptIndexError:
            logger.warning(
                "corrupt offset index %s: reading the segment from its start", entry.index
            )
            return 0

    def _timeindex(self, entry: LogEntry) -> TimeIndex | None:
        assert entry.timeindex is not None
        try:
            return TimeIndex(entry.base_offset, self._whole(entry.timeindex))
        except CorruptIndexError:
            logger.warning("corrupt time index %s: scanning the segment", entry.timeindex)
            return None


def wait_until(
    ready: Callable[[], bool],
    deadline: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Poll ``ready`` with growing pauses (10 ms to 100 ms) until it holds or ``deadline``."""
    pause = 0.01
    while not ready():
        remaining = deadline - clock()
        if remaining <= 0:
            return False
        sleep(min(pause, remaining))
        pause = min(pause * 1.5, 0.1)
    return True
