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
            for operation in operations.values():
                _declare_errors(operation)
            merged["paths"].setdefault(path, {}).update(operations)
        schemas = document.get("components", {}).get("schemas", {})
        for name, definition in schemas.items():
            if name in _POWERTOOLS_VALIDATION:
                continue
            known = merged["components"]["schemas"].setdefault(name, definition)
            if known != definition:
                raise ValueError(f"two functions define different schemas named {name}")
    merged["components"]["schemas"]["Error"] = ERROR_SCHEMA
    merged["paths"] = dict(sorted(merged["paths"].items()))
    merged["components"]["schemas"] = dict(sorted(merged["components"]["schemas"].items()))
    return merged


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
_ERROR_RESPONSES = {
    "400": "The request is invalid (INVALID_REQUEST and Kafka's more specific errors)",
    "500": "An unexpected failure (UNKNOWN_SERVER_ERROR)",
    "503": "A transient failure of storage; retry (KAFKA_STORAGE_ERROR)",
}
_POWERTOOLS_VALIDATION = {"HTTPValidationError", "ValidationError"}


def _declare_errors(operation: dict[str, Any]) -> None:
    """Powertools documents a 422 it never sends here (tidelog.api answers 400): declare the
    error responses tidelog does send, with its error schema."""
    responses = operation.setdefault("responses", {})
    responses.pop("422", None)
    for status, description in _ERROR_RESPONSES.items():
        responses.setdefault(
            status,
            {
                "description": description,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            },
        )


def document() -> str:
    return json.dumps(schema(), indent=2, sort_keys=False) + "\n"
