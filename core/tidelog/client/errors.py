"""The API's answers, turned back into tidelog's error tree with their Kafka names.

Every error body the API gives (its own and API Gateway's, through the template's
GatewayResponses) is ``{"error", "error_code", "message", "retriable"}``. An answer without it
(a proxy, a gateway without those responses) is judged by its status alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tidelog.errors import (
    KAFKA_ERRORS,
    ConflictError,
    InternalError,
    InvalidRequestError,
    NotFoundError,
    RetriableError,
    TidelogError,
)

_BY_STATUS: dict[int, type[TidelogError]] = {
    400: InvalidRequestError,
    404: NotFoundError,
    409: ConflictError,
    412: ConflictError,
    416: InvalidRequestError,
    429: RetriableError,
    502: RetriableError,
    503: RetriableError,
    504: RetriableError,
}


class AuthorizationError(TidelogError):
    """The API refused the caller: no signature, an unknown key, a wrong or stale signature,
    or a key without permission. ``error_type`` is API Gateway's ``x-amzn-ErrorType``."""

    http_status = 403
    default_kafka_error = "SASL_AUTHENTICATION_FAILED"

    def __init__(self, message: str, *, kafka_error: str | None = None, error_type: str = ""):
        super().__init__(message, kafka_error=kafka_error)
        self.error_type = error_type


def from_item(fields: Mapping[str, Any], context: str = "") -> TidelogError:
    """The error one item of a successful answer names (a partition's or a record's own
    ``{"error", "message"}``); a name tidelog does not know is kept in the message."""
    name = str(fields.get("error"))
    message = str(fields.get("message") or name)
    known = name if name in KAFKA_ERRORS else None
    if known is None:
        message = f"{name}: {message}"
    return TidelogError(f"{context}{message}", kafka_error=known)


def from_response(status: int, body: bytes, headers: dict[str, str]) -> TidelogError:
    """The error an answer of ``status`` (>= 400) stands for."""
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        parsed = None
    fields = parsed if isinstance(parsed, dict) else {}
    message = str(fields.get("message") or body[:200].decode("utf-8", "replace") or status)
    name = fields.get("error")
    known = name if isinstance(name, str) and name in KAFKA_ERRORS else None
    if status == 403:
        error: TidelogError = AuthorizationError(
            message,
            kafka_error=known,
            error_type=headers.get("x-amzn-errortype", "").split(":")[0],
        )
    else:
        kind = _BY_STATUS.get(status, InternalError)
        if isinstance(name, str) and known is None:
            message = f"{name}: {message}"
        error = kind(message, kafka_error=known)
    error.http_status = status
    error.details = fields
    return error
