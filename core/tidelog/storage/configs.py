"""Named sets of configs, one item each, read through a short cache: a group's own configs
(tidelog.groups.configs) and the brokers' dynamic configs (tidelog.log.configs) are
kept this way, as Kafka keeps its config records apart from what they configure.

Items (one partition key per kind)::

    (<pk>, <name>)    {"configs": {name: value}, "version": n}, absent when none is set
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from tidelog.errors import RetriableError
from tidelog.storage.errors import ConditionFailedError
from tidelog.storage.metadata import Compare, Delete, ItemAbsent, MetadataStore, Put

TTL_MS = 1_000
_ATTEMPTS = 10
_KEPT = 10_000  # names cached at most: a bound on names gone quiet, not an eviction policy


class ConfigItems:
    """Every set of configs of one kind in the metadata store. ``cached`` is at most ``ttl_ms``
    old: whatever reads configs on every request (a heartbeat, a produce) looks this way, as
    Kafka's brokers read their metadata image."""

    def __init__(
        self, meta: MetadataStore, pk: str, *, clock_ms: Callable[[], int], ttl_ms: int = TTL_MS
    ) -> None:
        self._meta = meta
        self._pk = pk
        self._clock_ms = clock_ms
        self._ttl_ms = ttl_ms
        self._lock = threading.Lock()
        self._cached: dict[str, tuple[int, dict[str, str]]] = {}

    def get(self, name: str) -> dict[str, str]:
        return self._read(name)[0]

    def cached(self, name: str) -> dict[str, str]:
        with self._lock:
            hit = self._cached.get(name)
        if hit is not None and self._clock_ms() - hit[0] < self._ttl_ms:
            return dict(hit[1])
        return self.get(name)

    def alter(
        self, name: str, change: Callable[[dict[str, str]], dict[str, str]]
    ) -> dict[str, str]:
        """The configs become ``change`` of them, written on condition that nobody changed them
        meanwhile (computed again if somebody did); none left: the item goes."""
        for _ in range(_ATTEMPTS):
            configs, version = self._read(name)
            new = change(dict(configs))
            if new == configs:
                return new
            guard = ItemAbsent() if version == 0 else Compare("version", "=", version)
            write = (
                Put({"pk": self._pk, "sk": name, "configs": new, "version": version + 1}, guard)
                if new
                else Delete(self._pk, name, guard)
            )
            try:
                self._meta.write(write)
            except ConditionFailedError:
                continue
            with self._lock:
                self._cached.pop(name, None)
            return new
        raise RetriableError(f"the configs of {name} kept changing; try again")

    def names(self) -> list[str]:
        """The names with configs set."""
        return [str(item["sk"]) for item in self._meta.query(self._pk)]

    def _read(self, name: str) -> tuple[dict[str, str], int]:
        item = self._meta.get(self._pk, name)
        if item is None:
            configs, version = {}, 0
        else:
            stored = item["configs"]
            assert isinstance(stored, Mapping)
            configs = {str(k): str(v) for k, v in stored.items()}
            version = int(str(item["version"]))
        with self._lock:
            if len(self._cached) > _KEPT:
                self._cached.clear()
            self._cached[name] = (self._clock_ms(), configs)
        return dict(configs), version
