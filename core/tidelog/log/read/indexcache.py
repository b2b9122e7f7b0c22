"""A host's memory of index entries it read or wrote lately (a long-running agent's, or a warm
Lambda environment's), so a consumer working through a backlog does not query the index again
for entries its last fetch's page already brought, and an agent serves the partitions it writes
to without querying the index for what it committed.

Safe because an entry only ever stops being used, never changes its meaning: a roll or a
compaction replaces it with one pointing elsewhere, and the object it names is collected only
a grace period (an hour by default) after nothing references it. An entry younger than
``ttl_ms`` (kept no longer than that grace period) therefore always names an object that still
exists and holds those offsets; the reader sees the index as it was at most ``ttl_ms`` ago, as
a slower reader would. The head (the high watermark and log start) is never cached: it alone
decides what a fetch may return.

Memory is bounded by entries, not time: past ``entries`` in all, the partitions used least
lately are forgotten first (about 450 bytes an entry).
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable

from tidelog.log.entries import LogEntry

DEFAULT_TTL_MS = 60_000
DEFAULT_PARTITIONS = 10_000
DEFAULT_ENTRIES = 65_536
_SWEEPS_PER_TTL = 8  # stale entries are dropped at most this often a time to live, a partition


class _Partition:
    __slots__ = ("bases", "entries", "swept_at")

    def __init__(self, now: int) -> None:
        self.bases: list[int] = []  # sorted
        self.entries: dict[int, tuple[LogEntry, int]] = {}  # base offset -> (entry, read at)
        self.swept_at = now


class IndexCache:
    def __init__(
        self,
        clock_ms: Callable[[], int],
        *,
        ttl_ms: int = DEFAULT_TTL_MS,
        partitions: int = DEFAULT_PARTITIONS,
        entries: int = DEFAULT_ENTRIES,
    ) -> None:
        self._clock_ms = clock_ms
        self._ttl_ms = ttl_ms
        self._max_partitions = partitions
        self._max_entries = entries
        self._partitions: OrderedDict[str, _Partition] = OrderedDict()
        self._count = 0  # entries held, in all partitions
        self._lock = threading.Lock()

    @property
    def ttl_ms(self) -> int:
        return self._ttl_ms

    def __len__(self) -> int:
        return self._count

    def remember(self, pk: str, entries: Iterable[LogEntry]) -> None:
        now = self._clock_ms()
        with self._lock:
            partition = self._partitions.get(pk)
            if partition is None:
                partition = self._partitions[pk] = _Partition(now)
            self._partitions.move_to_end(pk)
            for entry in entries:
                if entry.base_offset not in partition.entries:
                    bisect.insort(partition.bases, entry.base_offset)
                    self._count += 1
                partition.entries[entry.base_offset] = (entry, now)
            if now - partition.swept_at >= self._ttl_ms // _SWEEPS_PER_TTL:
                self._sweep(partition, now)
            self._bound(partition)

    def run_from(self, pk: str, offset: int) -> list[LogEntry]:
        """Fresh entries from the one holding ``offset``, each starting where the one before
        it ends; empty when the first is unknown or stale."""
        now = self._clock_ms()
        with self._lock:
            partition = self._partitions.get(pk)
            if partition is None:
                return []
            self._partitions.move_to_end(pk)
            i = bisect.bisect_right(partition.bases, offset) - 1
            if i < 0:
                return []
            run: list[LogEntry] = []
            found = partition.entries.get(partition.bases[i])
            while found is not None:
                entry, read_at = found
                if now - read_at >= self._ttl_ms or entry.last_offset < offset:
                    break
                run.append(entry)
                offset = entry.last_offset + 1
                found = partition.entries.get(offset)
            return run

    def forget(self, pk: str) -> None:
        with self._lock:
            partition = self._partitions.pop(pk, None)
            if partition is not None:
                self._count -= len(partition.entries)

    def _sweep(self, partition: _Partition, now: int) -> None:
        """Drop the partition's stale entries (a run never uses them: this is for memory)."""
        partition.swept_at = now
        stale = [
            b for b, (_, read_at) in partition.entries.items() if now - read_at >= self._ttl_ms
        ]
        for base in stale:
            del partition.entries[base]
        if stale:
            partition.bases = sorted(partition.entries)
            self._count -= len(stale)

    def _bound(self, kept: _Partition) -> None:
        """Forget the partitions used least lately while over either bound; past the entries'
        bound on its own, ``kept`` (the one just remembered) keeps its newest entries."""
        while len(self._partitions) > self._max_partitions or self._count > self._max_entries:
            pk, oldest = next(iter(self._partitions.items()))
            if oldest is kept:
                break
            del self._partitions[pk]
            self._count -= len(oldest.entries)
        excess = self._count - self._max_entries
        if excess > 0:
            for base in kept.bases[:excess]:
                del kept.entries[base]
            del kept.bases[:excess]
            self._count -= excess
