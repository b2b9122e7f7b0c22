"""What every HTTP handler shares: the resolver, and the one mapping of errors to responses.

Handlers under ``functions/`` build their app with :func:`resolver`, declare routes with
Powertools' decorators (typed, so requests are validated and the OpenAPI spec is generated from
the code) and raise :class:`~tidelog.errors.TidelogError` subclasses; the response shape of an
error is always ``{"error", "error_code", "message", "retriable"}`` with Kafka's error name.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import pybase64
from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIRequestValidationMiddleware,
    OpenAPIResponseValidationMiddleware,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Path
from pydantic import BaseModel, BeforeValidator, ConfigDict, WithJsonSchema
from pydantic_core import to_json

from tidelog.errors import KAFKA_ERRORS, InvalidRequestError, TidelogError

logger = Logger(service="tidelog")


def _integral(value: object) -> object:
    """JSON has one number type, and JSON Schema calls 7.0 an integer: so does tidelog. 7.5,
    "7" and true are not integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("Input should be a valid integer")
    return value


INTEGRAL = BeforeValidator(_integral)
Integer = Annotated[int, INTEGRAL]
"""An integer in a request body: an int, or a float with no fraction (nothing else). With
constraints, write ``Annotated[int, Field(ge=0), api.INTEGRAL]``: constraints before the
validator, or pydantic cannot document them as JSON Schema's minimum and maximum."""

# Path parameters, documented and checked as their values can be: a topic name is Kafka's; a
# group or member id is what the router takes in a path segment (over HTTP; the characters a
# Kafka group id may hold beyond these are not reachable by path).
# Kafka's Topic.validate: 1-249 of [a-zA-Z0-9._-], not "." or ".." (no look-ahead: pydantic's
# regex engine has none).
TOPIC_PATTERN = (
    r"^([a-zA-Z0-9_-][a-zA-Z0-9._-]{0,248}"
    r"|\.[a-zA-Z0-9_-][a-zA-Z0-9._-]{0,247}"
    r"|\.\.[a-zA-Z0-9._-]{1,247})$"
)
ID_PATTERN = r"^[A-Za-z0-9._~()'!*:@,;=+&$-]{1,255}$"
TopicName = Annotated[str, Path(pattern=TOPIC_PATTERN, description="the topic's name")]
# In a body a topic name is documented with Kafka's rule but checked by the handler, so a bad
# one is answered with Kafka's INVALID_TOPIC_EXCEPTION rather than a generic error.
TopicField = Annotated[str, WithJsonSchema({"type": "string", "pattern": TOPIC_PATTERN})]
GroupId = Annotated[str, Path(pattern=ID_PATTERN, description="the group id")]
MemberId = Annotated[str, Path(pattern=ID_PATTERN, description="the member id join answered")]
TransactionalId = Annotated[str, Path(pattern=ID_PATTERN, description="the transactional id")]
UserName = Annotated[str, Path(pattern=ID_PATTERN, description="the Kafka user's name")]


class RequestModel(BaseModel):
    """Base of request bodies: an unknown field is a mistake to report, not to ignore."""

    model_config = ConfigDict(extra="forbid")

    def __repr__(self) -> str:
        # Powertools logs every route's arguments with an f-string, evaluated at any log level:
        # pydantic's repr of a produce body walked every record (a fifth of the handler's CPU
        # for 1,000 records), and would put users' data in a debug log. Names only.
        return f"{type(self).__name__}({', '.join(type(self).model_fields)})"

    __str__ = __repr__


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


class _RequestValidation(OpenAPIRequestValidationMiddleware):
    """A route that takes a body takes JSON: a form or multipart body is refused (415) before
    anything parses it. (Routes of raw batches take no body model; their handler reads it.)"""

    def _get_body(self, app: Any) -> dict[str, Any]:
        content_type = app.current_event.headers.get("content-type", "").strip()
        if content_type and not content_type.lower().startswith("application/json"):
            raise UnsupportedMediaTypeError(
                f"send a JSON body (Content-Type: application/json), not {content_type}"
            )
        body: dict[str, Any] = super()._get_body(app)
        return body


def resolver() -> APIGatewayRestResolver:
    # An answer that fails its own model is a defect (500), not the client's bad request.
    app = APIGatewayRestResolver(enable_validation=True, response_validation_error_http_code=500)
    # Powertools has no public hook for its validation middlewares; tests cover the swaps.
    app._request_validation_middleware = _RequestValidation()  # type: ignore[no-untyped-call]
    app._response_validation_middleware = _ResponseValidation(has_response_validation_error=True)
    app.exception_handler(TidelogError)(_tidelog_error)
    app.exception_handler(RequestValidationError)(_invalid_request)
    app.not_found(_no_route)
    return app


@dataclass(frozen=True)
class Probe:
    """A request that fails validation: resolving it builds what a route's first request
    would (routing, the validators of its path, query and body, the error answer) and reaches
    no handler, so no storage."""

    method: str
    path: str
    body: object = None
    query: Mapping[str, str] = field(default_factory=dict)


_NO_INVOCATION: Any = None  # a snapshot's init has no Lambda context


def prime(app: APIGatewayRestResolver, probes: Sequence[Probe]) -> None:
    """Resolve each probe, as a SnapStart snapshot's init does (tidelog.snapstart). A probe
    answered anything but 400 is a defect of the probe: it may have reached storage."""
    for probe in probes:
        event = {
            "resource": probe.path,
            "path": probe.path,
            "httpMethod": probe.method,
            "headers": {"Content-Type": "application/json"},
            "multiValueHeaders": {"Content-Type": ["application/json"]},
            "queryStringParameters": dict(probe.query) or None,
            "multiValueQueryStringParameters": {k: [v] for k, v in probe.query.items()} or None,
            "pathParameters": None,
            "requestContext": {"httpMethod": probe.method, "path": probe.path, "stage": "prime"},
            "body": None if probe.body is None else json.dumps(probe.body),
            "isBase64Encoded": False,
        }
        status = app.resolve(event, _NO_INVOCATION)["statusCode"]
        if status != 400:
            raise RuntimeError(
                f"priming {probe.method} {probe.path} was answered {status}, not 400"
            )


def _no_route(exc: Exception) -> Response[str]:
    """The gateway routed the request here, but no route of the function matches it: a path
    parameter holds a character a route's parameter cannot ("/", "#", a quote...)."""
    invalid = KAFKA_ERRORS["INVALID_REQUEST"]
    return json_response(
        400,
        {
            "error": invalid.name,
            "error_code": invalid.code,
            "message": "the path matches no route: a path parameter holds a character no topic, "
            "group or member name can",
            "retriable": False,
        },
    )


def _tidelog_error(exc: TidelogError) -> Response[str]:
    if exc.http_status >= 500:
        logger.exception("request failed", extra={"error": exc.kafka_error.name})
    return json_response(exc.http_status, exc.to_dict())


def _invalid_request(exc: RequestValidationError) -> Response[str]:
    errors = list(exc.errors())
    problems = "; ".join(_describe(error) for error in errors)
    # A bad topic name in the path is Kafka's INVALID_TOPIC_EXCEPTION, as it is in a body.
    topic_only = all(tuple(e.get("loc", ()))[:2] == ("path", "topic") for e in errors)
    invalid = KAFKA_ERRORS["INVALID_TOPIC_EXCEPTION" if topic_only else "INVALID_REQUEST"]
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
    """A JSON answer: ``body`` serialized, or bytes that are JSON already."""
    text = body.decode() if isinstance(body, bytes) else json.dumps(body)
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=text)


def json_object(fields: Mapping[str, object], **rendered: bytes) -> bytes:
    """A JSON object of ``fields`` and of members already rendered as JSON: what was rendered
    once (records, measured against a response's limit) is not serialized again."""
    members = [to_json(fields)[1:-1]] if fields else []
    members += [b'"' + name.encode() + b'":' + value for name, value in rendered.items()]
    return b"{" + b",".join(members) + b"}"


class UnsupportedMediaTypeError(InvalidRequestError):
    http_status = 415


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
    return f"{where or 'body'}: {error.get('msg', 'invalid')}"
