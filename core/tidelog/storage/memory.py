"""In-memory adapters for both storage ports: the reference the contract suite holds S3 and
DynamoDB to, and the fast store for unit and simulation tests. Thread-safe and atomic."""

from __future__ import annotations

import copy
import operator
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tidelog.storage.errors import ConditionFailedError, ObjectExistsError, ObjectNotFoundError
from tidelog.storage.metadata import (
    All,
    AnyOf,
    AttrAbsent,
    Compare,
    Condition,
    Delete,
    Item,
    ItemAbsent,
    ItemExists,
    Put,
    Write,
    check_query,
    check_transaction,
)
from tidelog.storage.objects import ObjectInfo, check_range, check_tail

Clock = Callable[[], int]


class MemoryObjectStore:
    def __init__(self, clock_ms: Clock) -> None:
        self._clock_ms = clock_ms
        self._objects: dict[str, tuple[bytes, ObjectInfo]] = {}
        self._lock = threading.Lock()

    def put(self, key: str, body: bytes, *, if_absent: bool = True) -> None:
        with self._lock:
            if if_absent and key in self._objects:
                raise ObjectExistsError(f"an object already exists at {key!r}")
            self._objects[key] = (bytes(body), ObjectInfo(key, len(body), self._clock_ms()))

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        check_range(start, end)
        with self._lock:
            if key not in self._objects:
                raise ObjectNotFoundError(f"no object at {key!r}")
            body = self._objects[key][0]
        return body[start:end]

    def tail(self, key: str, size: int) -> bytes:
        check_tail(size)
        return self.get(key)[-size:]

    def head(self, key: str) -> ObjectInfo | None:
        with self._lock:
            entry = self._objects.get(key)
        return entry[1] if entry else None

    def delete(self, key: str) -> None:
        with self._lock:
            self._objects.pop(key, None)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        with self._lock:
            infos = [info for key, (_, info) in self._objects.items() if key.startswith(prefix)]
        return iter(sorted(infos, key=lambda info: info.key))


class MemoryMetadataStore:
    def __init__(self) -> None:
        self._items: dict[tuple[str, str], Item] = {}
        self._lock = threading.Lock()

    def get(self, pk: str, sk: str) -> Item | None:
        with self._lock:
            return copy.deepcopy(self._items.get((pk, sk)))

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        with self._lock:
            return {k: copy.deepcopy(self._items[k]) for k in keys if k in self._items}

    def query(
        self,
        pk: str,
        *,
        lo: str | None = None,
        hi: str | None = None,
        prefix: str | None = None,
        descending: bool = False,
        limit: int | None = None,
    ) -> Iterator[Item]:
        check_query(lo, hi, prefix, limit)
        with self._lock:
            matches = sorted(
                (sk, item)
                for (item_pk, sk), item in self._items.items()
                if item_pk == pk
                and (lo is None or sk >= lo)
                and (hi is None or sk <= hi)
                and (prefix is None or sk.startswith(prefix))
            )
            if descending:
                matches.reverse()
            return iter([copy.deepcopy(item) for _, item in matches[:limit]])

    def write(self, op: Put | Delete) -> None:
        self.transact([op])

    def transact(self, ops: Sequence[Write]) -> None:
        check_transaction(ops)
        with self._lock:
            current = {i: self._items.get(op.key) for i, op in enumerate(ops)}
            failed = [
                i
                for i, op in enumerate(ops)
                if op.condition is not None and not evaluate(op.condition, current[i])
            ]
            if failed:
                raise ConditionFailedError(
                    "condition failed",
                    failed=failed,
                    current={i: copy.deepcopy(current[i]) for i in failed},
                )
            for op in ops:
                if isinstance(op, Put):
                    self._items[op.key] = copy.deepcopy(dict(op.item))
                elif isinstance(op, Delete):
                    self._items.pop(op.key, None)


def evaluate(condition: Condition, item: Item | None) -> bool:
    """DynamoDB's meaning of a condition on the item as stored (None when absent)."""
    if isinstance(condition, ItemAbsent):
        return item is None
    if isinstance(condition, ItemExists):
        return item is not None
    if isinstance(condition, AttrAbsent):
        return item is None or condition.name not in item
    if isinstance(condition, All):
        return all(evaluate(c, item) for c in condition.conditions)
    if isinstance(condition, AnyOf):
        return any(evaluate(c, item) for c in condition.conditions)
    return _compare(condition, item)


def _compare(condition: Compare, item: Item | None) -> bool:
    if item is None or condition.name not in item:
        return condition.op == "<>"
    actual = item[condition.name]
    if type(actual) is not type(condition.value):
        return condition.op == "<>"
    return _COMPARISONS[condition.op](actual, condition.value)


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
