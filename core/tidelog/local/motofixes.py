"""Two costs moto's DynamoDB pays per call in proportion to the whole table, which DynamoDB
never does; on ``tidelog dev`` they made every request slower as the log grew.

- **Transactions** deep-copy the whole table once per operation, as the backup they restore if
  cancelled. Measured on ``tidelog dev``'s own table: a 4-operation transaction took 14 ms on a
  small table and 945 ms after 5,000 unrelated items were added, and every produce commits one.
  Behind the emulator's global lock nothing else runs during a transaction, so the items it
  names are all a rollback can need: they are copied before it runs and put back if it fails,
  and the whole-table copy is made an identity.
- **Queries** on the table's key list and sort every item of the table, then keep those of the
  partition asked for. A query here reads only that partition's items (DynamoDB's own model);
  index queries keep moto's path.

And one cost per call that is moto's alone: **DynamoDB answers are serialized shape by shape**
through botocore's service model, about 2 ms an item: a 16-item Query took 37 ms, two thirds of
it in the serializer, and a consumer's fetches spent most of their time there. Data-plane answers
are DynamoDB JSON already (``{"S": ...}`` values, strings for numbers, base64 strings for
binaries), so they are written with ``json.dumps``; errors and control-plane answers keep moto's
path.

And one cost per call that grows forever: **moto keeps every model object it ever made** (each
DynamoDB item version, each S3 key with its buffer) in a list on its class, for its dashboard
and for a reset that a long-running emulator never does. Measured on ``tidelog dev``: about
6 dead items and every deleted flush object kept per produce, 70 MB per 8,000 requests. The
emulator tracks nothing; what moto deletes is freed as Python frees anything (a deleted S3 key
closes its buffer when collected).

And one cost per call that is pure waste: **finding a request's service** lists moto's package
directory (an ``isdir`` for each of its ~150 services) on every request, a quarter of a small
PutObject's time in the emulator. The listing cannot change while the process runs: it is read
once.

Installed once per process by the emulator (``install()``); the contract and atomicity suites
run against it, so a moto upgrade that changes this code fails them, not users.
"""

from __future__ import annotations

import base64
import bisect
import copy
import decimal
import json
import threading
from collections.abc import Callable
from typing import Any

from moto import backends as moto_backends
from moto.core import model_instances
from moto.core.common_models import BaseModel
from moto.dynamodb import models
from moto.dynamodb.exceptions import MockValidationException
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoResult

_installed = threading.Lock()
_Backup = list[tuple[Table, DynamoType, DynamoType | None, Any]]


class _TablesAreNotCopied:
    """Stands in for the ``copy`` module inside moto's DynamoDB models: a Table "copy" is the
    table itself (its items are backed up one by one instead); everything else is copied."""

    @staticmethod
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)


def install() -> None:
    with _installed:
        backend = models.DynamoDBBackend
        if getattr(backend.transact_write_items, "tidelog_fixed", False):
            return
        services = tuple(moto_backends.list_of_moto_modules())
        setattr(moto_backends, "list_of_moto_modules", lambda: services)  # noqa: B010 - moto's
        setattr(BaseModel, "__new__", staticmethod(_untracked_new))  # noqa: B010 - moto's class
        model_instances.reset_model_data()  # drops what was tracked before
        setattr(models, "copy", _TablesAreNotCopied)  # noqa: B010 - moto's module global
        setattr(  # noqa: B010 - a method replaced on moto's class
            backend, "transact_write_items", _with_item_rollback(backend.transact_write_items)
        )
        setattr(Table, "query", _one_partition(Table.query))  # noqa: B010 - likewise
        setattr(  # noqa: B010 - likewise
            DynamoResult, "execute_result", _as_json(MOTO_EXECUTE_RESULT)
        )


_DATA_PLANE = frozenset(
    {
        "GetItem",
        "BatchGetItem",
        "Query",
        "Scan",
        "PutItem",
        "DeleteItem",
        "UpdateItem",
        "TransactWriteItems",
        "TransactGetItems",
        "BatchWriteItem",
    }
)


MOTO_EXECUTE_RESULT = DynamoResult.execute_result
"""moto's own serializer, as imported (before ``install``): what the fast path must match."""


def _as_json(original: Callable[..., Any]) -> Any:
    def execute_result(self: DynamoResult, context: Any) -> Any:
        if context.operation_model.name not in _DATA_PLANE:
            return original(self, context)
        body = json.dumps(_without_nulls(self.result), separators=(",", ":"), default=_blob)
        return 200, {"Content-Type": "application/x-amz-json-1.0"}, body

    return execute_result


def _blob(value: Any) -> Any:
    """What JSON has no type for, as the serializer writes it: blobs in base64, numbers (moto's
    capacity units are Decimals) as numbers."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"no JSON for {type(value).__name__}")


def _without_nulls(value: Any) -> Any:
    """As the serializer leaves them out: members that are None are absent from the answer."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _untracked_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``BaseModel.__new__`` without appending the instance to ``cls.instances_tracked``."""
    return object.__new__(cls)


def _one_partition(original: Callable[..., Any]) -> Any:
    """``Table.query`` with ``all_items`` cut down, for this call, to the partition asked for
    (moto's key-query path filters ``all_items`` by hash key; its index path needs them all),
    and within it to the sort keys the key condition can match, found by bisection: moto
    sizes every item it passes before comparing its key, so a query of the newest entries of
    a long partition (a consumer's fetch) cost the whole partition, and a soak's latency grew
    with its log."""

    def query(self: Table, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
        if index_name is not None or hash_key is None:
            return original(self, hash_key, *args, **kwargs)
        found = self.items.get(hash_key)
        if found is None:
            partition: list[Any] = []
        elif self.range_key_attr and self.range_key_type in _BY_CAST_VALUE:
            # moto refuses an item whose key is not of the table's declared type
            partition = sorted(found.values(), key=_sort_key)
            comparison = kwargs.get("range_comparison", args[0] if args else None)
            bounds = kwargs.get("range_objs", args[1] if len(args) > 1 else [])
            partition = _in_range(partition, self.range_key_type, comparison, bounds)
        elif self.range_key_attr:
            partition = sorted(found.values(), key=lambda item: item.range_key)
        else:
            partition = [found]
        self.all_items = lambda: partition  # type: ignore[method-assign]
        try:
            return original(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    query.tidelog_fixed = True  # type: ignore[attr-defined]
    query.__wrapped__ = original  # type: ignore[attr-defined]
    return query


_BY_CAST_VALUE = frozenset({"S", "N"})  # binary's cast value is base64: not in byte order


def _sort_key(item: Any) -> Any:
    """An item's place in its partition: DynamoDB orders numbers by value and strings by
    their code points, as their cast values compare (and far faster than DynamoType)."""
    return item.range_key.cast_value


def _in_range(
    partition: list[Any], key_type: str, comparison: str | None, bounds: list[Any]
) -> list[Any]:
    """The run of ``partition`` (sorted) whose sort keys ``comparison`` can match, and its
    neighbours; moto still applies the comparison itself, so a run too wide is only slower,
    never wrong."""
    if not comparison or not partition or not bounds:
        return partition
    if any(b.type != key_type for b in bounds):
        return partition  # DynamoDB refuses a key of another type; leave it to moto
    low = bounds[0].cast_value
    high = bounds[-1].cast_value
    start, end = 0, len(partition)
    if comparison in ("EQ", "GE", "BETWEEN", "BEGINS_WITH"):
        start = bisect.bisect_left(partition, low, key=_sort_key)
    elif comparison == "GT":
        start = bisect.bisect_right(partition, low, key=_sort_key)
    if comparison in ("EQ", "LE", "BETWEEN"):
        end = bisect.bisect_right(partition, high, key=_sort_key)
    elif comparison == "LT":
        end = bisect.bisect_left(partition, high, key=_sort_key)
    if comparison == "BEGINS_WITH" and isinstance(low, str):
        end = start
        while end < len(partition) and _sort_key(partition[end])[: len(low)] == low:
            end += 1
    # With a neighbour each side: moto checks its limits on the item after the last match,
    # before comparing it, and answers a LastEvaluatedKey for it (as DynamoDB does, which
    # stops at the limit without looking further).
    return partition[max(start - 1, 0) : end + 1]


def _with_item_rollback(original: Callable[[Any, list[dict[str, Any]]], None]) -> Any:
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        backup = _backup(self, transact_items)
        try:
            original(self, transact_items)
        except BaseException:
            _restore(backup)
            raise

    transact_write_items.tidelog_fixed = True  # type: ignore[attr-defined]
    return transact_write_items


def _backup(backend: Any, transact_items: list[dict[str, Any]]) -> _Backup:
    """A copy of every item the transaction names (None where there is none), in order."""
    backup: _Backup = []
    for entry in transact_items:
        if not isinstance(entry, dict) or len(entry) != 1:
            continue  # moto refuses it before writing anything
        ((op_type, op),) = entry.items()
        table = backend.tables.get(op.get("TableName")) if isinstance(op, dict) else None
        if table is None:
            continue
        key = _item_key(table, op_type, op)
        if key is None:
            continue
        try:
            hash_key, range_key = backend.get_keys_value(table, key)
            current = table.get_item(hash_key, range_key)
        except MockValidationException:
            continue  # an invalid key: moto refuses the transaction before writing anything
        backup.append((table, hash_key, range_key, copy.deepcopy(current)))
    return backup


def _item_key(table: Table, op_type: str, op: dict[str, Any]) -> dict[str, Any] | None:
    if op_type != "Put":
        key = op.get("Key")
        return key if isinstance(key, dict) else None
    attrs = op.get("Item")
    if not isinstance(attrs, dict):
        return None
    names = [table.hash_key_attr, *([table.range_key_attr] if table.range_key_attr else [])]
    return {n: attrs[n] for n in names if n in attrs}


def _restore(backup: _Backup) -> None:
    # Backwards, so that a key named twice (which moto refuses) ends as it was first found.
    for table, hash_key, range_key, item in reversed(backup):
        if item is None:
            table.delete_item(hash_key, range_key)
        elif range_key is not None:
            table.items[hash_key][range_key] = item
        else:
            table.items[hash_key] = item
