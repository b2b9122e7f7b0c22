"""What every HTTP handler shares: the resolver, and the one mapping of errors to responses.

Handlers under ``functions/`` build their app with :func:`resolver`, declare routes with
Powertools' decorators (typed, so requests are validated and the OpenAPI spec is generated from
the code) and raise :class:`~tidelog.errors.TidelogError` subclasses; the response shape of an
error is always ``{"error", "error_code", "message", "retriable"}`` with Kafka's error name.
"""

from __future__ import annotations

import binascii
import json
from typing import Any

import pybase64
from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIResponseValidationMiddleware,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict

from tidelog.errors import KAFKA_ERRORS, InvalidRequestError, TidelogError

logger = Logger(service="tidelog")


class RequestModel(BaseModel):
    """Base of request bodies: an unknown field is a mistake to report, not to ignore."""

    model_config = ConfigDict(extra="forbid")


class _ResponseValidation(OpenAPIResponseValidationMiddleware):
    """Answers are checked against the route's declared model, except binary ones: raw record
    batches are bytes, not a model (their schema is declared in the route's ``responses``)."""

    def handler(self, app: Any, next_middleware: Any) -> Response[Any]:
        response: Response[Any] = next_middleware(app)
        if isinstance(response.body, bytes) or response.base64_encoded:
            return response
        checked: Response[Any] = self._handle_response(
            route=app.context["_route"], response=response
        )
        return checked


def resolver() -> APIGatewayRestResolver:
    # An answer that fails its own model is a defect (500), not the client's bad request.
    app = APIGatewayRestResolver(enable_validation=True, response_validation_error_http_code=500)
    # Powertools has no public hook for its response middleware; tests cover the swap.
    app._response_validation_middleware = _ResponseValidation(has_response_validation_error=True)
    app.exception_handler(TidelogError)(_tidelog_error)
    app.exception_handler(RequestValidationError)(_invalid_request)
    return app


def _tidelog_error(exc: TidelogError) -> Response[str]:
    if exc.http_status >= 500:
        logger.exception("request failed", extra={"error": exc.kafka_error.name})
    return json_response(exc.http_status, exc.to_dict())


def _invalid_request(exc: RequestValidationError) -> Response[str]:
    problems = "; ".join(_describe(error) for error in exc.errors())
    invalid = KAFKA_ERRORS["INVALID_REQUEST"]
    return json_response(
        400,
        {
            "error": invalid.name,
            "error_code": invalid.code,
            "message": f"invalid request: {problems}",
            "retriable": False,
        },
    )


def raw_body(app: APIGatewayRestResolver) -> bytes:
    """The request body as bytes. Binary bodies (a binary media type) arrive base64-encoded;
    anything else is refused rather than guessed at."""
    event = app.current_event
    if not event.is_base64_encoded:
        raise UnsupportedMediaTypeError(
            "send the batches with Content-Type: application/vnd.kafka.record-batch"
        )
    try:
        # API Gateway base64-encodes every binary body; pybase64 decodes it 50x faster.
        return bytes(pybase64.b64decode(event.body or "", validate=True))
    except binascii.Error as exc:
        raise InvalidRequestError("the request body is not valid base64") from exc


def binary_response(content_type: str, body: bytes, headers: dict[str, str]) -> Response[str]:
    """A binary answer, base64-encoded here with pybase64 (3x faster than the encoding
    Powertools would apply; API Gateway decodes it for clients that accept the type)."""
    response = Response(
        status_code=200,
        content_type=content_type,
        body=pybase64.b64encode(body).decode("ascii"),
        headers=headers,
    )
    response.base64_encoded = True
    return response


def json_response(status: int, body: object) -> Response[str]:
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=json.dumps(body)
    )


class UnsupportedMediaTypeError(InvalidRequestError):
    http_status = 415


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
    return f"{where or 'body'}: {error.get('msg', 'invalid')}"
