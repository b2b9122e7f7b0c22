"""A size-bounded read-through cache of object bytes on local disk (NVMe in Lambda's ``/tmp``).

Objects are immutable once written (create-only PUTs; a rewrite gets a new key), so a cached
range is never stale and nothing needs invalidating: entries only leave when the cache is full,
least recently used first. Segments are cached in aligned blocks, so fetches starting at
different offsets share them; a run (a range of a flush object) is cached whole, since readers
always read it whole.

A long-running host (the Kafka agent, ``tidelog dev``) caches flush objects whole instead: the
partitions in one object are mostly led by the host that wrote it, so its readers want all of
them, and one GET serves every run. Its own flush objects go in as they are committed, so a
consumer at the head reads what its agent just wrote without any GET. Concurrent misses on one
entry share one load.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

BLOCK_BYTES = 1024 * 1024

Loader = Callable[[str, int, int | None], bytes]


class ObjectCache:
    def __init__(self, directory: Path, max_bytes: int, loader: Loader) -> None:
        # Files from an earlier process have no place in this one's bookkeeping: start empty.
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True, exist_ok=True)
        self._dir = directory
        self._max = max_bytes
        self._load = loader
        self._entries: OrderedDict[str, int] = OrderedDict()  # file name -> size, LRU first
        self._size = 0
        self._lock = threading.Lock()
        self._loading: dict[str, Future[bytes]] = {}
        self.hits = 0
        self.misses = 0

    def read(self, key: str, start: int, end: int | None) -> bytes:
        """Bytes [start, end) of an object (end None: to its end), cached as one unit."""
        name = _name(key, start, end)
        data = self._lookup(name)
        if data is None:
            data = self._load_once(name, lambda: self._load(key, start, end))
        return data

    def read_within(self, key: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of an object cached whole: only the range is read from disk."""
        name = _name(key, 0, None)
        data = self._lookup(name, start, end)
        if data is None:
            data = self._load_once(name, lambda: self._load(key, 0, None))[start:end]
        return data

    def put(self, key: str, data: bytes) -> None:
        """Cache a whole object this process has just written (it is immutable from now on)."""
        self._store(_name(key, 0, None), data)

    def read_blocks(self, key: str, start: int, end: int, size: int) -> bytes:
        """Bytes [start, end) of an object of ``size`` bytes, through aligned blocks."""
        first, last = start // BLOCK_BYTES, (end - 1) // BLOCK_BYTES
        parts = [
            self.read(key, b * BLOCK_BYTES, min(size, (b + 1) * BLOCK_BYTES))
            for b in range(first, last + 1)
        ]
        offset = first * BLOCK_BYTES
        return b"".join(parts)[start - offset : end - offset]

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def _lookup(self, name: str, start: int = 0, end: int | None = None) -> bytes | None:
        with self._lock:
            if name not in self._entries:
                self.misses += 1
                return None
            self._entries.move_to_end(name)
            self.hits += 1
        try:
            with (self._dir / name).open("rb") as file:
                file.seek(start)
                return file.read(-1 if end is None else end - start)
        except FileNotFoundError:  # evicted between the lookup and the read
            return None

    def _load_once(self, name: str, load: Callable[[], bytes]) -> bytes:
        """Load and store an entry; a reader missing it while another loads it waits for that
        load instead of starting its own."""
        with self._lock:
            loading = self._loading.get(name)
            if loading is None:
                loading = self._loading[name] = Future()
                owner = True
            else:
                owner = False
        if not owner:
            return loading.result()
        try:
            data = load()
            self._store(name, data)
        except BaseException as exc:
            loading.set_exception(exc)
            raise
        else:
            loading.set_result(data)
            return data
        finally:
            with self._lock:
                del self._loading[name]

    def _store(self, name: str, data: bytes) -> None:
        if len(data) > self._max:
            return
        temporary = self._dir / f".{name}.{threading.get_ident()}"
        temporary.write_bytes(data)
        os.replace(temporary, self._dir / name)
        with self._lock:
            if name in self._entries:
                return
            self._entries[name] = len(data)
            self._size += len(data)
            while self._size > self._max:
                evicted, size = self._entries.popitem(last=False)
                self._size -= size
                (self._dir / evicted).unlink(missing_ok=True)


def _name(key: str, start: int, end: int | None) -> str:
    return hashlib.sha256(f"{key}\0{start}\0{end}".encode()).hexdigest()
