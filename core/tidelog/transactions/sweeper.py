"""A long-running host's sweep of transactions open past their timeout (Kafka's
``transaction.abort.timed.out.transaction.cleanup.interval.ms``): each run reads only the
timeouts due (tidelog.transactions.store), so an idle cluster costs a query per shard a run."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from tidelog import threads

log = logging.getLogger(__name__)


class TimeoutSweeper:
    def __init__(self, expire: Callable[[], int], *, interval_s: float) -> None:
        self._expire = expire
        self._interval_s = interval_s
        self._stopping = threading.Event()
        self._thread = threads.thread(self._run, name="tidelog-txn-sweep")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stopping.wait(self._interval_s):
            try:
                ended = self._expire()
            except Exception:  # the next run tries again
                log.warning("transaction timeout sweep failed", exc_info=True)
                continue
            if ended:
                log.info("transaction timeout sweep: %d transaction(s) aborted", ended)
