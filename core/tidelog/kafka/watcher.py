"""Long polls at one read per interval, however many consumers wait.

A Fetch at the end of the log waits up to its ``max_wait_ms`` for new records. Polling each
waiting request's partitions would cost a read per consumer per poll; instead one thread reads
the high watermarks of every partition anyone is waiting on (one BatchGetItem per hundred
partitions) and wakes the waiters whose partitions moved, pausing between reads at least as
long as the last took.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

Partition = tuple[str, int]  # (topic id, partition)
ReadHeads = Callable[[Sequence[Partition]], Mapping[Partition, int]]

POLL_INTERVAL_S = 0.05


class HighWatermarkWatcher:
    def __init__(self, read_heads: ReadHeads, *, interval_s: float = POLL_INTERVAL_S) -> None:
        self._read_heads = read_heads
        self._interval_s = interval_s
        self._changed = threading.Condition()
        self._heads: dict[Partition, int] = {}
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
                while not any(self._heads.get(p, -1) > o for p, o in offsets.items()):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._changed.wait(remaining)
                return True
            finally:
                self._waiting.subtract(offsets.keys())
                self._waiting += Counter()  # drops the partitions nobody waits on any more

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
                self._heads.update(heads)
                self._changed.notify_all()
            # A read slower than the interval (many partitions, a busy store) is followed by a
            # pause as long: polling takes at most half of what the store serves this host.
            time.sleep(max(self._interval_s, time.monotonic() - began))
