"""A host's memory of index entries it read lately (a long-running agent's, or a warm Lambda
environment's), so a consumer working through a backlog does not query the index again for
entries its last fetch's page already brought.

Safe because an entry only ever stops being used, never changes its meaning: a roll or a
compaction replaces it with one pointing elsewhere, and the object it names is collected only
a grace period (an hour by default) after nothing references it. An entry younger than
``ttl_ms`` therefore always names an object that still exists and holds those offsets; the
reader sees the index as it was at most ``ttl_ms`` ago, as a slower reader would. The head (the
high watermark and log start) is never cached: it alone decides what a fetch may return.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable

from tidelog.log.entries import LogEntry

DEFAULT_TTL_MS = 5000
DEFAULT_PARTITIONS = 10_000


class _Partition:
    __slots__ = ("bases", "entries")

    def __init__(self) -> None:
        self.bases: list[int] = []  # sorted
        self.entries: dict[int, tuple[LogEntry, int]] = {}  # base offset -> (entry, read at)


class IndexCache:
    def __init__(
        self,
        clock_ms: Callable[[], int],
        *,
        ttl_ms: int = DEFAULT_TTL_MS,
        partitions: int = DEFAULT_PARTITIONS,
    ) -> None:
        self._clock_ms = clock_ms
        self._ttl_ms = ttl_ms
        self._max_partitions = partitions
        self._partitions: OrderedDict[str, _Partition] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, pk: str, entries: Iterable[LogEntry]) -> None:
        now = self._clock_ms()
        with self._lock:
            partition = self._partitions.get(pk)
            if partition is None:
                partition = self._partitions[pk] = _Partition()
                while len(self._partitions) > self._max_partitions:
                    self._partitions.popitem(last=False)
            self._partitions.move_to_end(pk)
            for entry in entries:
                if entry.base_offset not in partition.entries:
                    bisect.insort(partition.bases, entry.base_offset)
                partition.entries[entry.base_offset] = (entry, now)
            self._expire(partition, now)

    def run_from(self, pk: str, offset: int) -> list[LogEntry]:
        """Fresh entries from the one holding ``offset``, each starting where the one before
        it ends; empty when the first is unknown or stale."""
        now = self._clock_ms()
        with self._lock:
            partition = self._partitions.get(pk)
            if partition is None:
                return []
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
            self._partitions.pop(pk, None)

    def _expire(self, partition: _Partition, now: int) -> None:
        stale = [
            b for b, (_, read_at) in partition.entries.items() if now - read_at >= self._ttl_ms
        ]
        for base in stale:
            del partition.entries[base]
        if stale:
            partition.bases = sorted(partition.entries)
