"""The thinnest S3-backed HTTP log a Lambda can be, the baseline of benchmarks/baselines.py: a body
in, one PUT, an answer out; a ranged GET out. What any such log must do and nothing more: no
validation, no staging, no index, no commit. It PUTs and GETs through tidelog's object store (the
same client, settings and checksum, and the same simulated latencies under TIDELOG_FAULTS) and
uses the same base64 library, so the comparison is of the work, not of the tools."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pybase64

from tidelog import runtime


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    objects = runtime.object_store()
    if event["httpMethod"] == "POST":
        body = bytes(pybase64.b64decode(event["body"] or "", validate=True))
        key = f"thin/{uuid.uuid4().hex}"
        objects.put(key, body)
        answer = {"key": key, "bytes": len(body)}
        return {"statusCode": 200, "body": json.dumps(answer), "isBase64Encoded": False}
    query = event["queryStringParameters"] or {}
    data = objects.get(query["key"], int(query["start"]), int(query["end"]))
    return {
        "statusCode": 200,
        "headers": {"Content-Type": "application/vnd.kafka.record-batch"},
        "body": pybase64.b64encode_as_string(data),
        "isBase64Encoded": True,
    }
