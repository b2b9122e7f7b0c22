"""What this process commits, told to whoever in it reads the log.

An agent's long polls wait on its watcher, which reads the heads of the partitions they wait on
once an interval, and its reader remembers the index entries it read lately. A record this
agent commits itself need neither: its commit knows each partition's new head and the index
entries it wrote, and hands them here the moment the transaction succeeds. A consumer woken by
its own agent's commit then fetches with no call to the table at all.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tidelog.log.entries import LogEntry
from tidelog.log.head import Head

logger = logging.getLogger(__name__)

PartitionKey = tuple[str, int]  # (topic id, partition)


@dataclass(frozen=True)
class Committed:
    """One transaction's partitions: each one's new head and the index entries it wrote.
    ``sent`` is when the transaction was sent (the monotonic clock): each head is the log's as
    of a moment after that, as a read begun then would have found it at least."""

    heads: Mapping[PartitionKey, Head]
    entries: Mapping[PartitionKey, Sequence[LogEntry]]
    sent: float


Listener = Callable[[Committed], None]


class CommitFeed:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Bound methods, held weakly: a listener's owner (a fetch handler) is not kept alive
        # by having listened.
        self._listeners: list[weakref.WeakMethod[Listener]] = []

    def subscribe(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(weakref.WeakMethod(listener))

    def publish(self, committed: Committed) -> None:
        with self._lock:
            self._listeners = [ref for ref in self._listeners if ref() is not None]
            listeners = [ref() for ref in self._listeners]
        for listener in listeners:
            if listener is None:
                continue
            try:
                listener(committed)
            except Exception:  # a listener's failure fails no append
                logger.exception("a listener of commits failed")
