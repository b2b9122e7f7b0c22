"""Long polls at one read per interval, however many consumers wait.

A Fetch at the end of the log waits up to its ``max_wait_ms`` for new records. Polling each
waiting request's partitions would cost a read per consumer per poll; instead one thread reads
the heads of every partition anyone is waiting on (one BatchGetItem per hundred partitions) and
wakes the waiters whose partitions moved, pausing between reads at least as long as the last
took.

The heads this agent commits itself come without a read: its commits hand them to
:meth:`HighWatermarkWatcher.observe` (tidelog.log.feed), which wakes the waiters at once.

What it read also spares the waiters' own reads. A fetch at an offset where the watcher last
saw nothing to fetch waits for the watcher's next read rather than making one, and a head read
that began after the fetch came serves it as a read of its own made then would.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from tidelog.log.feed import Committed
from tidelog.log.head import Head

Partition = tuple[str, int]  # (topic id, partition)
ReadHeads = Callable[[Sequence[Partition]], Mapping[Partition, Head]]

POLL_INTERVAL_S = 0.05


class HighWatermarkWatcher:
    def __init__(self, read_heads: ReadHeads, *, interval_s: float = POLL_INTERVAL_S) -> None:
        self._read_heads = read_heads
        self._interval_s = interval_s
        self._changed = threading.Condition()
        self._heads: dict[Partition, tuple[float, Head]] = {}  # when its read began, the head
        self._waiting: Counter[Partition] = Counter()
        self._thread: threading.Thread | None = None

    def wait(self, offsets: Mapping[Partition, int], deadline: float) -> bool:
        """Block until any partition's high watermark passes its offset (True), or until
        ``deadline`` on the monotonic clock (False)."""
        with self._changed:
            self._waiting.update(offsets.keys())
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._poll, name="tidelog-hw-watcher", daemon=True
                )
                self._thread.start()
            try:
                while not any(self._high(p) > o for p, o in offsets.items()):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._changed.wait(remaining)
                return True
            finally:
                self._waiting.subtract(offsets.keys())
                self._waiting += Counter()  # drops the partitions nobody waits on any more

    def settled(
        self, offsets: Mapping[Partition, int], *, committed: bool
    ) -> dict[Partition, int] | None:
        """What to :meth:`wait` past instead of reading: each partition's high watermark as last
        read, when that read showed nothing to fetch at its offset (read_committed: nothing
        before the last stable offset). None when a partition was not read, or has records
        to fetch."""
        past: dict[Partition, int] = {}
        with self._changed:
            for partition, offset in offsets.items():
                seen = self._heads.get(partition)
                if seen is None:
                    return None
                head = seen[1]
                if (head.last_stable_offset if committed else head.next_offset) > offset:
                    return None
                past[partition] = max(offset, head.next_offset)
        return past

    def read_since(
        self, partitions: Iterable[Partition], began: float
    ) -> dict[Partition, Head] | None:
        """The heads of ``partitions`` from reads that began at or after ``began`` (the monotonic
        clock); None unless every one's did."""
        with self._changed:
            found = {p: self._heads.get(p) for p in partitions}
        if any(seen is None or seen[0] < began for seen in found.values()):
            return None
        return {p: seen[1] for p, seen in found.items() if seen is not None}

    def observe(self, committed: Committed) -> None:
        """Heads this process committed, each the log's as of a moment after the commit's
        transaction was sent: as good as a read begun then. Kept only for the partitions
        someone waits on, and only where newer than what was read."""
        with self._changed:
            moved = False
            for partition, head in committed.heads.items():
                if partition in self._waiting and head.next_offset > self._high(partition):
                    self._heads[partition] = (committed.sent, head)
                    moved = True
            if moved:
                self._changed.notify_all()

    def _high(self, partition: Partition) -> int:
        seen = self._heads.get(partition)
        return -1 if seen is None else seen[1].next_offset

    def _poll(self) -> None:
        while True:
            with self._changed:
                wanted = list(self._waiting)
                if not wanted:
                    self._heads.clear()
                    self._thread = None
                    return
            began = time.monotonic()
            try:
                heads = self._read_heads(wanted)
            except Exception:  # noqa: BLE001 - a failed read is tried again next interval
                heads = {}
            with self._changed:
                # A read that began before a commit this process observed may end after it:
                # the head the commit gave is then the newer.
                self._heads.update(
                    (p, (began, head))
                    for p, head in heads.items()
                    if head.next_offset >= self._high(p)
                )
                self._changed.notify_all()
            # A read slower than the interval (many partitions, a busy store) is followed by a
            # pause as long: polling takes at most half of what the store serves this host.
            time.sleep(max(self._interval_s, time.monotonic() - began))
