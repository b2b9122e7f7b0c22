"""A local API Gateway: HTTP requests in, REST API (v1) Lambda-proxy events to our handlers.

It answers as API Gateway does where a client can tell: routes from the template (literal
segments before ``{param}``, ``{proxy+}`` greedy); 403 ``Missing Authentication Token`` for an
unknown route or method; bodies whose Content-Type is a binary media type arrive base64-encoded;
a base64 response is decoded only when the request's Accept names a binary media type; a request
over 10 MiB, or whose event exceeds Lambda's 6 MB, gets 413; a handler that raises, returns a
malformed result or a response over 6 MB gets 502 ``Internal server error``.

IAM (SigV4) authorization only when given an authorizer (`tidelog dev --iam-auth`,
tidelog.local.sigv4). What it does not do: throttling, stage variables, custom domains.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, quote

import pybase64
from pydantic_core import to_json
from werkzeug.datastructures import Headers
from werkzeug.wrappers import Request

from tidelog.local.lambdas import FunctionRuntime
from tidelog.local.sigv4 import Refusal, SignedRequest
from tidelog.local.template import GatewayResponse, Route

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 10 * 1024 * 1024  # API Gateway REST API payload
MAX_LAMBDA_PAYLOAD = 6 * 1024 * 1024  # Lambda synchronous invocation, request and response


@dataclass(frozen=True)
class Match:
    route: Route
    path_parameters: dict[str, str]


class Router:
    """API Gateway's resource matching: literal segments win over parameters."""

    def __init__(self, routes: Iterable[Route]) -> None:
        self.routes = list(routes)

    def match(self, method: str, path: str) -> Match | None:
        segments = [s for s in path.split("/") if s]
        best: tuple[tuple[int, ...], Match] | None = None
        for route in self.routes:
            if route.method not in (method, "ANY"):
                continue
            scored = _match_segments(route.path, segments)
            if scored is None:
                continue
            rank, parameters = scored
            if best is None or rank > best[0]:
                best = (rank, Match(route, parameters))
        return best[1] if best else None


def _match_segments(
    template: str, segments: Sequence[str]
) -> tuple[tuple[int, ...], dict[str, str]] | None:
    parts = [s for s in template.split("/") if s]
    parameters: dict[str, str] = {}
    rank: list[int] = []
    for i, part in enumerate(parts):
        if part.startswith("{") and part.endswith("+}"):
            if i >= len(segments):
                return None
            parameters[part[1:-2]] = "/".join(segments[i:])
            return (*rank, 0), parameters
        if i >= len(segments):
            return None
        if part.startswith("{") and part.endswith("}"):
            parameters[part[1:-1]] = segments[i]
            rank.append(1)
        elif part == segments[i]:
            rank.append(2)
        else:
            return None
    if len(parts) != len(segments):
        return None
    return tuple(rank), parameters


def media_type_matches(content_type: str | None, patterns: Sequence[str]) -> bool:
    if not content_type:
        return False
    media_type = content_type.split(";", 1)[0].strip().lower()
    return any(fnmatch.fnmatchcase(media_type, p.lower()) for p in patterns)


def proxy_event(
    request: Request,
    body: bytes,
    match: Match,
    *,
    binary_media_types: Sequence[str],
    stage: str,
) -> dict[str, Any]:
    """The event API Gateway's REST API hands a Lambda proxy integration."""
    headers: dict[str, str] = {}
    multi_headers: dict[str, list[str]] = {}
    for name, value in request.headers.items():
        headers[name] = value
        multi_headers.setdefault(name, []).append(value)
    query = parse_qsl(request.query_string.decode("latin-1"), keep_blank_values=True)
    multi_query: dict[str, list[str]] = {}
    for name, value in query:
        multi_query.setdefault(name, []).append(value)
    binary = media_type_matches(request.content_type, binary_media_types)
    now = time.time()
    return {
        "resource": match.route.path,
        "path": request.path,
        "httpMethod": request.method,
        "headers": headers or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": match.path_parameters or None,
        "stageVariables": None,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": request.host,
            "httpMethod": request.method,
            "identity": {"sourceIp": request.remote_addr, "userAgent": request.user_agent.string},
            "path": f"/{stage}{request.path}",
            "protocol": request.environ.get("SERVER_PROTOCOL", "HTTP/1.1"),
            "requestId": str(uuid.uuid4()),
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "requestTimeEpoch": int(now * 1000),
            "resourceId": "local",
            "resourcePath": match.route.path,
            "stage": stage,
        },
        "body": (pybase64.b64encode(body).decode("ascii") if binary else body.decode("utf-8"))
        if body
        else None,
        "isBase64Encoded": bool(body) and binary,
    }


StartResponse = Callable[..., Any]


class Gateway:
    """The WSGI application: route, build the event, invoke, shape the response."""

    def __init__(
        self,
        routes: Iterable[Route],
        runtimes: Mapping[str, FunctionRuntime],
        *,
        binary_media_types: Sequence[str],
        stage: str,
        responses: Mapping[str, GatewayResponse] | None = None,
        authorizer: Callable[[SignedRequest], Refusal | None] | None = None,
    ) -> None:
        """``responses``: the template's GatewayResponses, the gateway's own answers.
        ``authorizer``: IAM authorization, checked once a route matches (as API Gateway does:
        an unknown route is "Missing Authentication Token" whoever asks)."""
        self.authorizer = authorizer
        self.router = Router(routes)
        self.responses = dict(responses or {})
        self.runtimes = runtimes
        self.binary_media_types = list(binary_media_types)
        self.stage = stage

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        request = Request(environ)
        if (request.content_length or 0) > MAX_REQUEST_BYTES:
            return self._own(start_response, "REQUEST_TOO_LARGE", "Request Too Long")
        body = request.get_data(cache=False)
        if len(body) > MAX_REQUEST_BYTES:
            return self._own(start_response, "REQUEST_TOO_LARGE", "Request Too Long")
        match = self.router.match(request.method, request.path)
        if match is None:
            return self._own(
                start_response, "MISSING_AUTHENTICATION_TOKEN", "Missing Authentication Token"
            )
        if self.authorizer is not None:
            refusal = self.authorizer(_signed_request(environ, request, body))
            if refusal is not None:
                return self._own(
                    start_response, refusal.response_type, refusal.message, refusal.error_type
                )
        try:
            event = proxy_event(
                request, body, match, binary_media_types=self.binary_media_types, stage=self.stage
            )
        except UnicodeDecodeError:
            return self._own(
                start_response,
                "BAD_REQUEST_BODY",
                "Request body is not UTF-8 and its Content-Type is not a binary media type",
            )
        if _event_size(event) > MAX_LAMBDA_PAYLOAD:
            return self._own(start_response, "REQUEST_TOO_LARGE", "Request Too Long")
        try:
            result = self.runtimes[match.route.function].invoke(event)
            status, headers, payload = self._response(result, request)
        except Exception:
            log.exception("%s %s failed in %s", request.method, request.path, match.route.function)
            return self._own(start_response, "INTEGRATION_FAILURE", "Internal server error")
        start_response(f"{status} {_reason(status)}", headers.to_wsgi_list())
        return [payload]

    def _own(
        self, start_response: StartResponse, kind: str, message: str, error_type: str = ""
    ) -> list[bytes]:
        """An answer the gateway gives itself, from the template's GatewayResponses (the
        specific type, else DEFAULT_4XX or DEFAULT_5XX by API Gateway's default status)."""
        default_status = _DEFAULT_STATUS[kind]
        response = self.responses.get(kind) or self.responses.get(
            "DEFAULT_5XX" if default_status >= 500 else "DEFAULT_4XX"
        )
        status = response.status if response else default_status
        payload = (
            response.render(message) if response else json.dumps({"message": message}).encode()
        )
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
        if error_type:
            headers.append(("x-amzn-ErrorType", error_type))
        start_response(f"{status} {_reason(status)}", headers)
        return [payload]

    def _response(self, result: Any, request: Request) -> tuple[int, Headers, bytes]:
        if not isinstance(result, dict) or not isinstance(result.get("statusCode"), int):
            raise TypeError(f"malformed Lambda proxy response: {result!r:.200}")
        if _payload_size(result) > MAX_LAMBDA_PAYLOAD:
            raise ValueError("Lambda response over 6 MB")
        headers = Headers()
        for name, value in (result.get("headers") or {}).items():
            headers[name] = str(value)
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers.remove(name)
            for value in values:
                headers.add(name, str(value))
        headers.setdefault("Content-Type", "application/json")
        text = result.get("body") or ""
        accept = request.headers.get("Accept", "").split(",")[0]
        if result.get("isBase64Encoded") and media_type_matches(accept, self.binary_media_types):
            payload = pybase64.b64decode(text)
        else:
            payload = text.encode("utf-8")
        headers["Content-Length"] = str(len(payload))
        return int(result["statusCode"]), headers, payload


def _event_size(event: dict[str, Any]) -> int:
    """The event's JSON size, without serializing the body (which may be megabytes)."""
    body = event["body"] or ""
    size = len(body) if event["isBase64Encoded"] else len(body.encode())
    return len(json.dumps({**event, "body": None})) + size + 2


def _payload_size(result: dict[str, Any]) -> int:
    """The response's size as Lambda counts it (its JSON). A body of megabytes is measured
    apart from the rest: a base64 one needs no escaping, and a JSON one is escaped by
    pydantic-core rather than by the standard library (a sixth of a 1 MiB fetch's time)."""
    body = result.get("body")
    if not isinstance(body, str):
        return len(json.dumps(result))
    if result.get("isBase64Encoded"):
        return len(json.dumps({**result, "body": ""})) + len(body)
    return len(json.dumps({**result, "body": ""})) - 2 + json_string_size(body)


def json_string_size(text: str) -> int:
    """``len(json.dumps(text))``, fast: for ASCII text pydantic-core's encoder writes the very
    same escapes (``\\n``, ``\\"``, ``\\u001f``...) in a fraction of the time, but for DEL,
    which the standard library writes as ``\\u007f``."""
    if not text.isascii():
        return len(json.dumps(text))
    return len(to_json(text)) + 5 * text.count("\x7f")


# API Gateway's status for each response type it answers with when the template sets none.
_DEFAULT_STATUS = {
    "REQUEST_TOO_LARGE": 413,
    "MISSING_AUTHENTICATION_TOKEN": 403,
    "ACCESS_DENIED": 403,
    "INVALID_SIGNATURE": 403,
    "BAD_REQUEST_BODY": 400,
    "INTEGRATION_FAILURE": 502,
}


def _signed_request(environ: dict[str, Any], request: Request, body: bytes) -> SignedRequest:
    """What the client signed: the request line's path and query as sent, not as decoded."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if not raw:  # a server that keeps only the decoded path: encode it as clients do
        query = environ.get("QUERY_STRING")
        raw = quote(environ.get("PATH_INFO", "/")) + (f"?{query}" if query else "")
    url = f"{environ.get('wsgi.url_scheme', 'http')}://{request.host}{raw}"
    return SignedRequest(request.method, url, dict(request.headers.items()), body)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"
