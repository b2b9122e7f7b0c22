"""The metadata store port: items under (pk, sk) with conditional, transactional writes.

It is DynamoDB's model cut down to what tidelog uses. Items are flat mappings of attribute names
to ``str``, ``int``, ``bool``, ``bytes``, ``None``, lists and string-keyed dicts of those; every
item has the string attributes ``pk`` (partition key) and ``sk`` (sort key). Reads are strongly
consistent. Conditions are a small expression tree that each adapter renders (DynamoDB) or
evaluates (memory) the same way; the contract suite holds them to one behaviour.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from tidelog.storage.errors import InvalidStorageRequestError

Item = Mapping[str, object]

MAX_TRANSACTION_WRITES = 100
MAX_BATCH_GET = 100
MAX_ITEM_BYTES = 400 * 1024

CompareOp = Literal["=", "<>", "<", "<=", ">", ">="]


@dataclass(frozen=True, slots=True)
class ItemAbsent:
    """No item is stored at the key (``attribute_not_exists(pk)``)."""


@dataclass(frozen=True, slots=True)
class ItemExists:
    """An item is stored at the key (``attribute_exists(pk)``)."""


@dataclass(frozen=True, slots=True)
class AttrAbsent:
    """The item is absent or lacks the attribute (``attribute_not_exists(name)``)."""

    name: str


@dataclass(frozen=True, slots=True)
class Compare:
    """``name op value``; false when the attribute is missing, as in DynamoDB."""

    name: str
    op: CompareOp
    value: str | int | bytes | bool


@dataclass(frozen=True, slots=True)
class All:
    conditions: tuple[Condition, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    conditions: tuple[Condition, ...]


Condition = ItemAbsent | ItemExists | AttrAbsent | Compare | All | AnyOf


def all_of(*conditions: Condition) -> Condition:
    return conditions[0] if len(conditions) == 1 else All(conditions)


def any_of(*conditions: Condition) -> Condition:
    return conditions[0] if len(conditions) == 1 else AnyOf(conditions)


@dataclass(frozen=True, slots=True)
class Put:
    """Store ``item`` whole (replacing any item at its key) if ``condition`` holds."""

    item: Item
    condition: Condition | None = None

    @property
    def key(self) -> tuple[str, str]:
        return item_key(self.item)


@dataclass(frozen=True, slots=True)
class Delete:
    pk: str
    sk: str
    condition: Condition | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.pk, self.sk)


@dataclass(frozen=True, slots=True)
class Check:
    """Only a condition: the transaction fails unless it holds. Writes nothing."""

    pk: str
    sk: str
    condition: Condition

    @property
    def key(self) -> tuple[str, str]:
        return (self.pk, self.sk)


Write = Put | Delete | Check


class MetadataStore(Protocol):
    def get(self, pk: str, sk: str) -> Item | None:
        """The item at (pk, sk), read strongly consistent, or None."""
        ...

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        """The items at ``keys`` that exist, read strongly consistent, by key (DynamoDB's
        BatchGetItem: one call per hundred keys)."""
        ...

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
        """Items under ``pk`` in sort-key order, with ``lo <= sk <= hi`` or sk starting with
        ``prefix`` (not both), at most ``limit`` of them."""
        ...

    def write(self, op: Put | Delete) -> None:
        """One conditional write; ConditionFailedError (failed=(0,)) if its condition fails."""
        ...

    def transact(self, ops: Sequence[Write]) -> None:
        """All of ``ops`` atomically, or none: ConditionFailedError names the ops that failed."""
        ...


def item_key(item: Item) -> tuple[str, str]:
    pk, sk = item.get("pk"), item.get("sk")
    if not isinstance(pk, str) or not isinstance(sk, str) or not pk or not sk:
        raise InvalidStorageRequestError("an item needs non-empty string attributes pk and sk")
    return pk, sk


def check_query(lo: str | None, hi: str | None, prefix: str | None, limit: int | None) -> None:
    if prefix is not None and (lo is not None or hi is not None):
        raise InvalidStorageRequestError("query takes a prefix or bounds, not both")
    if limit is not None and limit < 1:
        raise InvalidStorageRequestError("query limit must be at least 1")


def check_transaction(ops: Sequence[Write]) -> None:
    """DynamoDB's own limits, enforced alike by every adapter."""
    if not ops:
        raise InvalidStorageRequestError("a transaction needs at least one write")
    if len(ops) > MAX_TRANSACTION_WRITES:
        raise InvalidStorageRequestError(
            f"a transaction holds at most {MAX_TRANSACTION_WRITES} writes, got {len(ops)}"
        )
    keys = [op.key for op in ops]
    if len(set(keys)) != len(keys):
        raise InvalidStorageRequestError("a transaction may not touch one item twice")
    for op in ops:
        if isinstance(op, Put):
            check_item(op.item)


def check_item(item: Item) -> None:
    item_key(item)
    size = item_size(item)
    if size > MAX_ITEM_BYTES:
        raise InvalidStorageRequestError(
            f"item {item_key(item)} is {size} bytes; DynamoDB's limit is {MAX_ITEM_BYTES}"
        )


def item_size(item: Item) -> int:
    """DynamoDB's item size: attribute names plus values (numbers counted generously)."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: object) -> int:
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int):
        return 1 + (len(str(abs(value))) + 1) // 2 + 1
    if isinstance(value, list):
        return 3 + sum(1 + _value_size(v) for v in value)
    if isinstance(value, dict):
        return 3 + sum(1 + len(k.encode()) + _value_size(v) for k, v in value.items())
    raise InvalidStorageRequestError(f"unsupported attribute value of type {type(value).__name__}")
