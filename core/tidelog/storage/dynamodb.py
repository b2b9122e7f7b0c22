"""DynamoMetadataStore: the metadata store port on one DynamoDB table keyed (pk, sk)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from tidelog.storage.boto import error_code, translate
from tidelog.storage.errors import ConditionFailedError, StorageUnavailableError
from tidelog.storage.metadata import (
    MAX_BATCH_GET,
    All,
    AttrAbsent,
    Check,
    Compare,
    Condition,
    Delete,
    Item,
    ItemAbsent,
    ItemExists,
    Put,
    Write,
    check_item,
    check_query,
    check_transaction,
)

_BATCH_ATTEMPTS = 6  # UnprocessedKeys (throttling) asked again, with backoff
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


class DynamoMetadataStore:
    def __init__(self, client: Any, table: str) -> None:
        self._ddb = client
        self.table = table

    def get(self, pk: str, sk: str) -> Item | None:
        try:
            response = self._ddb.get_item(
                TableName=self.table, Key=_key(pk, sk), ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise translate(exc, f"GetItem {self.table} {pk}/{sk}") from exc
        return _decode(response["Item"]) if "Item" in response else None

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        found: dict[tuple[str, str], Item] = {}
        wanted = list(dict.fromkeys(keys))
        for start in range(0, len(wanted), MAX_BATCH_GET):
            pending: list[dict[str, Any]] = [
                _key(pk, sk) for pk, sk in wanted[start : start + MAX_BATCH_GET]
            ]
            for attempt in range(_BATCH_ATTEMPTS):
                if not pending:
                    break
                if attempt:
                    time.sleep(min(1.0, 0.05 * 2**attempt))  # throttled: back off, ask again
                request = {self.table: {"Keys": pending, "ConsistentRead": True}}
                try:
                    response = self._ddb.batch_get_item(RequestItems=request)
                except (ClientError, BotoCoreError) as exc:
                    raise translate(exc, f"BatchGetItem {self.table}") from exc
                for raw in response.get("Responses", {}).get(self.table, []):
                    item = _decode(raw)
                    found[(str(item["pk"]), str(item["sk"]))] = item
                pending = response.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", [])
            if pending:
                raise StorageUnavailableError(
                    f"BatchGetItem {self.table}: {len(pending)} keys left unprocessed; retry"
                )
        return found

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
        expr = _Expression()
        key_condition = f"{expr.name('pk')} = {expr.value(pk)}"
        if prefix is not None:
            key_condition += f" AND begins_with({expr.name('sk')}, {expr.value(prefix)})"
        elif lo is not None and hi is not None:
            key_condition += f" AND {expr.name('sk')} BETWEEN {expr.value(lo)} AND {expr.value(hi)}"
        elif lo is not None:
            key_condition += f" AND {expr.name('sk')} >= {expr.value(lo)}"
        elif hi is not None:
            key_condition += f" AND {expr.name('sk')} <= {expr.value(hi)}"
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": key_condition,
            "ScanIndexForward": not descending,
            "ConsistentRead": True,
            **expr.arguments(),
        }
        remaining = limit
        while True:
            if remaining is not None:
                request["Limit"] = remaining
            try:
                page = self._ddb.query(**request)
            except (ClientError, BotoCoreError) as exc:
                raise translate(exc, f"Query {self.table} {pk}") from exc
            for raw in page.get("Items", ()):
                yield _decode(raw)
            if remaining is not None:
                remaining -= len(page.get("Items", ()))
                if remaining <= 0:
                    return
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def write(self, op: Put | Delete) -> None:
        if isinstance(op, Put):
            check_item(op.item)
        call = self._ddb.put_item if isinstance(op, Put) else self._ddb.delete_item
        try:
            call(**self._request(op))
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                old = exc.response.get("Item")
                raise ConditionFailedError(
                    "condition failed", failed=(0,), current={0: _decode(old) if old else None}
                ) from exc
            raise translate(exc, f"{type(op).__name__} {self.table} {op.key}") from exc
        except BotoCoreError as exc:
            raise translate(exc, f"{type(op).__name__} {self.table} {op.key}") from exc

    def transact(self, ops: Sequence[Write]) -> None:
        check_transaction(ops)
        try:
            self._ddb.transact_write_items(TransactItems=[self._transact_item(op) for op in ops])
        except ClientError as exc:
            if error_code(exc) != "TransactionCanceledException":
                raise translate(exc, f"TransactWriteItems {self.table}") from exc
            reasons = exc.response.get("CancellationReasons") or []
            failed = [i for i, r in enumerate(reasons) if r.get("Code") == "ConditionalCheckFailed"]
            if not failed:
                codes = sorted({r.get("Code") for r in reasons} - {"None"})
                raise StorageUnavailableError(
                    f"TransactWriteItems {self.table} cancelled ({', '.join(map(str, codes))})"
                ) from exc
            current = {
                i: _decode(reasons[i]["Item"]) if reasons[i].get("Item") else None for i in failed
            }
            raise ConditionFailedError(
                "transaction condition failed", failed=failed, current=current
            ) from exc
        except BotoCoreError as exc:
            raise translate(exc, f"TransactWriteItems {self.table}") from exc

    def _transact_item(self, op: Write) -> dict[str, Any]:
        kind = {Put: "Put", Delete: "Delete", Check: "ConditionCheck"}[type(op)]
        return {kind: self._request(op)}

    def _request(self, op: Write) -> dict[str, Any]:
        """The request body of one write: PutItem, DeleteItem or a transaction's element."""
        request: dict[str, Any] = {"TableName": self.table}
        if isinstance(op, Put):
            request["Item"] = _encode(op.item)
        else:
            request["Key"] = _key(op.pk, op.sk)
        if op.condition is not None:
            expr = _Expression()
            request["ConditionExpression"] = expr.render(op.condition)
            request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
            request.update(expr.arguments())
        return request


class _Expression:
    """Placeholders for one expression: every name and value goes through #n / :v."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._values: dict[str, Any] = {}

    def name(self, attr: str) -> str:
        for placeholder, known in self._names.items():
            if known == attr:
                return placeholder
        placeholder = f"#n{len(self._names)}"
        self._names[placeholder] = attr
        return placeholder

    def value(self, value: object) -> str:
        placeholder = f":v{len(self._values)}"
        self._values[placeholder] = _serializer.serialize(value)
        return placeholder

    def render(self, condition: Condition) -> str:
        if isinstance(condition, ItemAbsent):
            return f"attribute_not_exists({self.name('pk')})"
        if isinstance(condition, ItemExists):
            return f"attribute_exists({self.name('pk')})"
        if isinstance(condition, AttrAbsent):
            return f"attribute_not_exists({self.name(condition.name)})"
        if isinstance(condition, Compare):
            return f"{self.name(condition.name)} {condition.op} {self.value(condition.value)}"
        joiner = " AND " if isinstance(condition, All) else " OR "
        return "(" + joiner.join(self.render(c) for c in condition.conditions) + ")"

    def arguments(self) -> dict[str, Any]:
        args: dict[str, Any] = {"ExpressionAttributeNames": dict(self._names)}
        if self._values:
            args["ExpressionAttributeValues"] = dict(self._values)
        return args


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _encode(item: Item) -> dict[str, Any]:
    return {name: _serializer.serialize(value) for name, value in item.items()}


def _decode(raw: Mapping[str, Any]) -> dict[str, object]:
    return {name: _plain(_deserializer.deserialize(value)) for name, value in raw.items()}


def _plain(value: object) -> object:
    """DynamoDB's Decimal and Binary back to the int and bytes they were written as."""
    if isinstance(value, Decimal):
        if value != value.to_integral_value():
            raise ValueError(f"non-integer number {value} in a tidelog item")
        return int(value)
    if isinstance(value, Binary):
        return bytes(value.value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
