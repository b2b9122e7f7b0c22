"""What a housekeeping pass reads of the runs it rolls.

A flush object holds a run of each partition its requests named, and each partition rolls its
own runs. Read one run at a time, a pass rolling six partitions fed by small requests GETs every
small object six times, one GET after another: a thousand runs a roll, each a round trip to S3
(30 ms at the median), and most of what the roller costs. So a pass reads through one
``RunReads``:

- a run that ends within ``read_ahead`` bytes of its object's start brings that whole prefix:
  all of a small object, kept for the pass's other partitions (objects never change, so what
  was read stays true). What is kept is bounded by ``budget`` bytes, least recently used out
  first; a run further in is read alone, as its bytes alone are worth a GET;
- a roll's GETs go out ``at_once`` at a time (``TIDELOG_HOUSEKEEPING_AT_ONCE``), so its
  round trips overlap.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Iterator, Sequence
from itertools import islice

from tidelog.log.entries import LogEntry
from tidelog.log.lifecycle import AT_ONCE
from tidelog.storage import ObjectStore
from tidelog.threads import ContextPool

READ_AHEAD = 256 * 1024  # whole, the objects of requests a few KiB each
BUDGET = 64 * 1024 * 1024  # beside a roll's own segment (up to 128 MiB) in a 1 GiB function


class RunReads:
    def __init__(
        self,
        objects: ObjectStore,
        *,
        read_ahead: int = READ_AHEAD,
        budget: int = BUDGET,
        at_once: int = AT_ONCE,
    ) -> None:
        self._objects = objects
        self._read_ahead = read_ahead
        self._budget = budget
        self._at_once = at_once
        self._kept: OrderedDict[str, bytes] = OrderedDict()  # object key: its first bytes
        self._kept_bytes = 0
        self._lock = threading.Lock()

    def read(self, runs: Sequence[LogEntry]) -> Iterator[bytes]:
        """Each run's bytes, in the order given. No more than ``at_once`` runs are read ahead
        of the one taken, so a roll holds its runs' bytes only until it has used them."""
        if len(runs) <= 1 or self._at_once <= 1:
            yield from map(self._read, runs)
            return
        todo = iter(runs)
        with ContextPool(self._at_once, "run-reads") as pool:  # in the caller's role
            ahead = deque(pool.submit(self._read, run) for run in islice(todo, self._at_once))
            while ahead:
                data = ahead.popleft().result()
                for run in islice(todo, 1):
                    ahead.append(pool.submit(self._read, run))
                yield data

    def _read(self, run: LogEntry) -> bytes:
        if run.end > self._read_ahead:
            return self._objects.get(run.object_key, run.start, run.end)
        prefix = self._kept_prefix(run.object_key)
        if prefix is None:
            prefix = self._objects.get(run.object_key, 0, self._read_ahead)
            self._keep(run.object_key, prefix)
        return prefix[run.start : run.end]

    def _kept_prefix(self, key: str) -> bytes | None:
        with self._lock:
            prefix = self._kept.get(key)
            if prefix is not None:
                self._kept.move_to_end(key)
            return prefix

    def _keep(self, key: str, prefix: bytes) -> None:
        with self._lock:
            if key in self._kept:
                return  # another thread read it too
            self._kept[key] = prefix
            self._kept_bytes += len(prefix)
            while self._kept_bytes > self._budget:
                _, dropped = self._kept.popitem(last=False)
                self._kept_bytes -= len(dropped)
