"""Stores that count the calls made through them (housekeeping's cost, in items and GETs)."""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tidelog.storage import Delete, MetadataStore, ObjectStore, Put, Write
from tidelog.storage.metadata import Item
from tidelog.storage.objects import ObjectInfo


class CountingStore:
    """``reads`` counts calls; ``items_read`` counts the items queries returned (what DynamoDB
    bills a Query by)."""

    def __init__(self, inner: MetadataStore) -> None:
        self.inner = inner
        self.reads = 0
        self.items_read = 0
        self.calls: Counter[str] = Counter()

    def get(self, pk: str, sk: str) -> Item | None:
        self.reads += 1
        self.calls["get"] += 1
        return self.inner.get(pk, sk)

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        self.reads += 1
        self.calls["get_many"] += 1
        return self.inner.get_many(keys)

    def query(self, pk: str, **kwargs: Any) -> Iterator[Item]:
        self.reads += 1
        self.calls["query"] += 1
        items = list(self.inner.query(pk, **kwargs))  # as a page comes: whole
        self.items_read += len(items)
        return iter(items)

    def write(self, op: Put | Delete) -> None:
        self.inner.write(op)

    def transact(self, ops: Sequence[Write]) -> None:
        self.inner.transact(ops)


class CountingObjects:
    """``gets`` counts GETs by (key, start, end); ``in_flight`` is the most out at once."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.gets: Counter[tuple[str, int, int | None]] = Counter()
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        self._meeting: threading.Barrier | None = None

    def put(self, key: str, body: bytes, *, if_absent: bool = True) -> None:
        self.inner.put(key, body, if_absent=if_absent)

    def meet(self, parties: int) -> None:
        """From now on no GET ends before ``parties`` are out at once (or five seconds pass)."""
        self._meeting = threading.Barrier(parties, timeout=5)

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        return self._out((key, start, end), lambda: self.inner.get(key, start, end))

    def tail(self, key: str, size: int) -> bytes:
        """Counted as a GET from ``-size``."""
        return self._out((key, -size, None), lambda: self.inner.tail(key, size))

    def _out(self, counted: tuple[str, int, int | None], call: Callable[[], bytes]) -> bytes:
        with self._lock:
            self.gets[counted] += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self._meeting is not None:
                with contextlib.suppress(threading.BrokenBarrierError):
                    self._meeting.wait()
            return call()
        finally:
            with self._lock:
                self.in_flight -= 1

    def head(self, key: str) -> ObjectInfo | None:
        return self.inner.head(key)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self.inner.list(prefix)

    def gets_of(self, prefix: str) -> int:
        return sum(n for (key, _, _), n in self.gets.items() if key.startswith(prefix))
