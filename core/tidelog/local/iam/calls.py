"""What an HTTP request to the emulator asks of IAM: the :class:`Call` s AWS would authorize.

Each service names actions and resources its own way, and only the services tidelog's roles use
are read closely:

- DynamoDB: one call per table the request touches, with ``dynamodb:LeadingKeys`` (the partition
  key values it reads or writes). A transaction is authorized item by item, as DynamoDB does:
  ``dynamodb:PutItem`` for a ``Put``, ``dynamodb:ConditionCheckItem`` for a ``ConditionCheck``.
- S3: the object or bucket ARN, ``s3:prefix`` for a listing, one ``s3:DeleteObject`` per key of
  a multi-object delete, ``s3:GetObject`` on a copy's source.
- Step Functions and the query-protocol services (STS, CloudFormation, ...): the action with the
  ARN the request names, else ``*``.

STS's GetCallerIdentity needs no permission on AWS, and none here. A request this module cannot
name an action for is refused by the caller (:data:`UNNAMED`), never waved through.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree

from tidelog.local.iam.policy import Call

UNNAMED = "unnamed"  # the action of a request no rule here names
_TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}
_LISTING_PARAMETERS = {
    "list-type",
    "prefix",
    "delimiter",
    "max-keys",
    "continuation-token",
    "start-after",
    "encoding-type",
    "fetch-owner",
    "marker",
}
_CONDITION = re.compile(r"([#\w.]+)\s*=\s*(:\w+)")


@dataclass(frozen=True)
class Table:
    """What naming a table's calls needs: its ARN and the partition key of it and its indexes."""

    arn: str
    partition_key: str
    index_keys: Mapping[str, str]


@dataclass(frozen=True)
class Account:
    """The local stack's names: its account, region, tables by name and buckets."""

    account: str
    region: str
    tables: Mapping[str, Table]
    buckets: frozenset[str]

    def table(self, name: str) -> Table:
        known = self.tables.get(name)
        if known is not None:
            return known
        return Table(f"arn:aws:dynamodb:{self.region}:{self.account}:table/{name}", "", {})


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # decoded, as WSGI's PATH_INFO
    query: str
    headers: Mapping[str, str]  # lower-case names
    body: bytes

    @property
    def service(self) -> str:
        """The signing name the credential scope gives (``key/date/region/service/...``)."""
        scope = re.search(
            r"Credential=[^/,]+/[^/]+/[^/]+/([^/]+)/", self.headers.get("authorization", "")
        )
        return scope.group(1) if scope else ""


def needs_body(method: str, headers: Mapping[str, str], query: str) -> bool:
    """Whether naming the calls reads the body: all but S3's (objects can be large), except a
    multi-object delete's list of keys."""
    if "/s3/" in headers.get("authorization", ""):
        return method == "POST" and "delete" in urllib.parse.parse_qs(query, keep_blank_values=True)
    return True


def calls(request: Request, account: Account) -> list[Call]:
    target = request.headers.get("x-amz-target", "")
    if target.startswith("DynamoDB_"):
        return _dynamodb(target.partition(".")[2], json.loads(request.body or b"{}"), account)
    if target.startswith("AWSStepFunctions."):
        return _states(target.partition(".")[2], json.loads(request.body or b"{}"))
    service = request.service
    if service == "s3":
        return _s3(request, account)
    if service == "lambda":
        return _lambda(request, account)
    form = urllib.parse.parse_qs(request.query + "&" + request.body.decode("latin-1"))
    action = form.get("Action", [""])[0]
    if service == "sts" and action == "GetCallerIdentity":
        return []
    if service and action:
        return [Call(f"{service}:{action}", "*")]
    return [Call(UNNAMED, "*")]


# -- DynamoDB ------------------------------------------------------------------------------


def _value(attribute: Mapping[str, Any]) -> str:
    ((kind, value),) = attribute.items()
    if kind == "B":
        return base64.b64decode(value).decode("latin-1")
    return str(value)


def _item_call(action: str, table_name: str, item: Mapping[str, Any], account: Account) -> Call:
    table = account.table(table_name)
    leading = [_value(item[table.partition_key])] if table.partition_key in item else []
    return Call(f"dynamodb:{action}", table.arn, {"dynamodb:LeadingKeys": leading})


def _dynamodb(operation: str, body: Mapping[str, Any], account: Account) -> list[Call]:
    if operation in ("GetItem", "DeleteItem", "UpdateItem"):
        return [_item_call(operation, body["TableName"], body["Key"], account)]
    if operation == "PutItem":
        return [_item_call(operation, body["TableName"], body["Item"], account)]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        found = []
        for entry in body["TransactItems"]:
            ((kind, item),) = entry.items()
            found.append(
                _item_call(
                    _TRANSACT_ACTIONS[kind],
                    item["TableName"],
                    item.get("Key", item.get("Item", {})),
                    account,
                )
            )
        return found
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [
            _batch_call(operation, name, entries, account)
            for name, entries in body["RequestItems"].items()
        ]
    if operation == "Query":
        return [_query_call(body, account)]
    if "TableName" in body:
        return [Call(f"dynamodb:{operation}", account.table(body["TableName"]).arn)]
    return [Call(f"dynamodb:{operation}", "*")]


def _batch_call(operation: str, name: str, entries: Any, account: Account) -> Call:
    table = account.table(name)
    if operation == "BatchGetItem":
        keys = entries["Keys"]
    else:
        keys = [
            (e.get("PutRequest") or {}).get("Item") or (e.get("DeleteRequest") or {}).get("Key")
            for e in entries
        ]
    leading = [_value(k[table.partition_key]) for k in keys if table.partition_key in k]
    return Call(f"dynamodb:{operation}", table.arn, {"dynamodb:LeadingKeys": leading})


def _query_call(body: Mapping[str, Any], account: Account) -> Call:
    table = account.table(body["TableName"])
    arn, key = table.arn, table.partition_key
    index = body.get("IndexName")
    if index:
        arn, key = f"{arn}/index/{index}", table.index_keys.get(index, "")
    names = body.get("ExpressionAttributeNames", {})
    values = body.get("ExpressionAttributeValues", {})
    leading = [
        _value(values[placeholder])
        for name, placeholder in _CONDITION.findall(body.get("KeyConditionExpression", ""))
        if names.get(name, name) == key and placeholder in values
    ]
    return Call("dynamodb:Query", arn, {"dynamodb:LeadingKeys": leading})


# -- S3 ------------------------------------------------------------------------------------


def _s3(request: Request, account: Account) -> list[Call]:
    bucket, key = _bucket_and_key(request, account)
    query = urllib.parse.parse_qs(request.query, keep_blank_values=True)
    if not bucket:
        return [Call("s3:ListAllMyBuckets", "*")]
    bucket_arn = f"arn:aws:s3:::{bucket}"
    if key:
        return _object_calls(request.method, query, request.headers, f"{bucket_arn}/{key}")
    if request.method == "POST" and "delete" in query:
        root = ElementTree.fromstring(request.body)  # noqa: S314 - our own clients' requests
        keys = [e.text or "" for e in root.iter() if e.tag.rpartition("}")[2] == "Key"]
        return [Call("s3:DeleteObject", f"{bucket_arn}/{k}") for k in keys]
    if request.method in ("GET", "HEAD") and not set(query) - _LISTING_PARAMETERS:
        context = {f"s3:{name}": query[name] for name in ("prefix", "delimiter") if name in query}
        return [Call("s3:ListBucket", bucket_arn, context)]
    verbs = {"GET": "GetBucket", "PUT": "PutBucket", "DELETE": "DeleteBucket"}
    subresource = next(iter(query), "")
    if request.method == "PUT" and not subresource:
        return [Call("s3:CreateBucket", bucket_arn)]
    if request.method == "DELETE" and not subresource:
        return [Call("s3:DeleteBucket", bucket_arn)]
    if request.method in verbs and subresource.isalpha():
        return [Call(f"s3:{verbs[request.method]}{subresource.capitalize()}", bucket_arn)]
    return [Call(UNNAMED, bucket_arn)]


def _bucket_and_key(request: Request, account: Account) -> tuple[str, str]:
    host = request.headers.get("host", "").partition(":")[0]
    label = host.partition(".")[0]
    path = request.path.lstrip("/")
    if label in account.buckets and host != label:  # virtual-hosted style
        return label, path
    bucket, _, key = path.partition("/")
    return bucket, key


def _object_calls(
    method: str, query: Mapping[str, Any], headers: Mapping[str, str], arn: str
) -> list[Call]:
    if "uploadId" in query or "uploads" in query:
        if method == "DELETE":
            return [Call("s3:AbortMultipartUpload", arn)]
        if method == "GET":
            return [Call("s3:ListMultipartUploadParts", arn)]
        return [Call("s3:PutObject", arn)]
    subresources = {"tagging": "Tagging", "acl": "Acl", "retention": "Retention"}
    suffix = next((name for q, name in subresources.items() if q in query), "")
    if method in ("GET", "HEAD"):
        return [Call(f"s3:GetObject{suffix}", arn)]
    if method == "PUT":
        found = [Call(f"s3:PutObject{suffix}", arn)]
        source = headers.get("x-amz-copy-source")
        if source:
            source = urllib.parse.unquote(source.lstrip("/").partition("?")[0])
            found.append(Call("s3:GetObject", f"arn:aws:s3:::{source}"))
        return found
    if method == "DELETE":
        return [Call(f"s3:DeleteObject{suffix}", arn)]
    return [Call(UNNAMED, arn)]


# -- Step Functions and Lambda -----------------------------------------------------------


def _states(operation: str, body: Mapping[str, Any]) -> list[Call]:
    for field in ("stateMachineArn", "executionArn", "activityArn"):
        if field in body:
            return [Call(f"states:{operation}", str(body[field]))]
    return [Call(f"states:{operation}", "*")]


def _lambda(request: Request, account: Account) -> list[Call]:
    match = re.fullmatch(r"/[\d-]+/functions/([^/]+)/invocations", request.path)
    if match is None:
        return [Call(UNNAMED, "*")]
    name = urllib.parse.unquote(match.group(1))
    arn = (
        name
        if name.startswith("arn:")
        else (f"arn:aws:lambda:{account.region}:{account.account}:function:{name}")
    )
    return [Call("lambda:InvokeFunction", arn)]
