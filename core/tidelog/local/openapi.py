"""The API's OpenAPI document, generated from the handlers' own route declarations.

Each function's Powertools resolver knows its routes, parameters and response types; this merges
them into one document with the API's SigV4 security scheme. ``docs/openapi.json`` is its output,
and a test keeps the committed file equal to it.
"""

from __future__ import annotations

import json
from typing import Any

from tidelog import __version__
from tidelog.local.lambdas import load_module
from tidelog.local.paths import template_path
from tidelog.local.template import Template

SIGV4 = {
    "type": "apiKey",
    "name": "Authorization",
    "in": "header",
    "x-amazon-apigateway-authtype": "awsSigv4",
}


def schema() -> dict[str, Any]:
    template = Template(template_path())
    merged: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "tidelog",
            "version": __version__,
            "description": "Kafka's log, rebuilt serverless on AWS. Every route needs "
            "SigV4-signed requests (IAM) in a deployed stack; `tidelog dev` does not check them.",
        },
        "paths": {},
        "components": {"schemas": {}, "securitySchemes": {"sigv4": SIGV4}},
        "security": [{"sigv4": []}],
    }
    for fn in template.functions():
        if not fn.routes:
            continue  # scheduled, not behind the API
        app = load_module(fn).app
        document = json.loads(app.get_openapi_json_schema(title="tidelog", version=__version__))
        for path, operations in document.get("paths", {}).items():
            for method, operation in operations.items():
                _declare_errors(path, method, operation)
            merged["paths"].setdefault(path, {}).update(operations)
        schemas = document.get("components", {}).get("schemas", {})
        for name, definition in schemas.items():
            if name in _POWERTOOLS_VALIDATION:
                continue
            known = merged["components"]["schemas"].setdefault(name, definition)
            if known != definition:
                raise ValueError(f"two functions define different schemas named {name}")
    for (path, method), media_type in RAW_BODIES.items():
        merged["paths"][path][method]["requestBody"] = {
            "required": True,
            "description": "Kafka record batches (v2), as a producer builds them",
            "content": {
                t: {"schema": {"type": "string", "format": "binary"}}
                for t in (media_type, "application/octet-stream")
            },
        }
    merged["components"]["schemas"]["Error"] = ERROR_SCHEMA
    merged["paths"] = dict(sorted(merged["paths"].items()))
    merged["components"]["schemas"] = dict(sorted(merged["components"]["schemas"].items()))
    return merged


# Operations whose handler reads the raw body (no model, so Powertools cannot declare it).
RAW_BODIES = {
    ("/v1/topics/{topic}/partitions/{partition}/batches", "post"): (
        "application/vnd.kafka.record-batch"
    ),
}
ERROR_SCHEMA = {
    "title": "Error",
    "type": "object",
    "description": "Every error tidelog answers with: Kafka's error name and number.",
    "required": ["error", "error_code", "message", "retriable"],
    "properties": {
        "error": {"type": "string", "examples": ["INVALID_REQUEST"]},
        "error_code": {"type": "integer", "examples": [42]},
        "message": {"type": "string"},
        "retriable": {"type": "boolean"},
    },
}
# What every operation may answer: the API's own answers (auth, size, throttling, a function
# that failed; infra/template.yaml's GatewayResponses) and the errors any handler may raise.
_ALWAYS = {
    "400": "The request is invalid (INVALID_REQUEST and Kafka's more specific errors)",
    "403": "Not signed, badly signed, or not allowed (SASL_AUTHENTICATION_FAILED, "
    "CLUSTER_AUTHORIZATION_FAILED); also an unknown path, as API Gateway answers it",
    "413": "The request is over API Gateway's or Lambda's limits (MESSAGE_TOO_LARGE)",
    "429": "Throttled by the API's limits (THROTTLING_QUOTA_EXCEEDED); retry later",
    "500": "An unexpected failure (UNKNOWN_SERVER_ERROR)",
    "502": "The function failed (UNKNOWN_SERVER_ERROR)",
    "503": "A transient failure of storage; retry (KAFKA_STORAGE_ERROR)",
    "504": "The function did not answer in time (REQUEST_TIMED_OUT); retry",
}


def _statuses(path: str, method: str) -> dict[str, str]:
    """The error statuses an operation may answer: every operation's, and its own."""
    wanted = dict(_ALWAYS)
    if "{" in path:
        wanted["404"] = "The topic, partition, group or member does not exist"
    if path == "/v1/acls" and method == "delete":
        wanted["404"] = "No such ACL (RESOURCE_NOT_FOUND)"
    if method != "get":
        wanted["409"] = (
            "The state the request depends on moved on (TOPIC_ALREADY_EXISTS, "
            "REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, NON_EMPTY_GROUP, ...)"
        )
    if method == "post" and path.endswith(("/records", "/batches")):
        wanted["412"] = "expected_offset is not the partition's end (the answer has its end)"
    if path.endswith("/batches"):
        wanted["415"] = "The body is not of the media type the operation takes"
    if method == "get" and path.endswith("/records"):
        wanted["416"] = "The offset is outside the partition (OFFSET_OUT_OF_RANGE, both bounds)"
    return wanted


_POWERTOOLS_VALIDATION = {"HTTPValidationError", "ValidationError", "ResponseValidationError"}


def _declare_errors(path: str, method: str, operation: dict[str, Any]) -> None:
    """Powertools documents a 422 it never sends here (tidelog.api answers 400) and its own
    response-validation 500: declare instead the error responses tidelog does send, every one
    with its error schema."""
    responses = operation.setdefault("responses", {})
    responses.pop("422", None)
    for status, description in _statuses(path, method).items():
        responses[status] = {
            "description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    operation["responses"] = dict(sorted(responses.items()))


def document() -> str:
    return json.dumps(schema(), indent=2, sort_keys=False) + "\n"
