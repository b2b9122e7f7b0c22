"""The heads this process commits, told to whoever in it waits on them.

An agent's long polls wait on its watcher, which reads the heads of the partitions they wait on
once an interval. A record this agent commits itself need not wait for that read: its commit
knows the partition's new head, and hands it here the moment the transaction succeeds.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Mapping

from tidelog.log.head import Head

logger = logging.getLogger(__name__)

PartitionKey = tuple[str, int]  # (topic id, partition)
# The committed heads, and when the commit's transaction was sent (the monotonic clock): each
# head is the log's as of a moment after that, as a read begun then would have found it at least.
Listener = Callable[[Mapping[PartitionKey, Head], float], None]


class HeadFeed:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Bound methods, held weakly: a listener's owner (a fetch handler) is not kept alive
        # by having listened.
        self._listeners: list[weakref.WeakMethod[Listener]] = []

    def subscribe(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(weakref.WeakMethod(listener))

    def publish(self, heads: Mapping[PartitionKey, Head], sent: float) -> None:
        with self._lock:
            self._listeners = [ref for ref in self._listeners if ref() is not None]
            listeners = [ref() for ref in self._listeners]
        for listener in listeners:
            if listener is None:
                continue
            try:
                listener(heads, sent)
            except Exception:  # a listener's failure fails no append
                logger.exception("a listener of committed heads failed")
