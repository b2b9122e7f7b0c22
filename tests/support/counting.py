"""A metadata store that counts the reads made through it (housekeeping's cost, in items)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from tidelog.storage import Delete, MetadataStore, Put, Write
from tidelog.storage.metadata import Item


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
