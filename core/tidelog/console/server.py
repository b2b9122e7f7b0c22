"""`tidelog console`: the console's own files, and a same-origin proxy onto the HTTP API.

The browser never holds AWS keys: it calls ``/api/v1/...`` here, and the proxy sends the request
on to the API (signed with this machine's credentials when the endpoint needs it, exactly as the
Python client signs: it *is* the client's connection). It serves nothing else: the API's paths,
the console's files by name, and ``lag?group=G``, the lag history it samples
(``tidelog.console.lag``).

The proxy acts with the user's credentials, so no other web page may drive it:

- every API call must carry ``X-Tidelog-Console: 1``, a header a page of another origin cannot
  send without a CORS preflight, which is never granted;
- the ``Host`` must be the address it listens on (a name rebound to 127.0.0.1 by DNS is
  refused), and an ``Origin``, when sent, must be its own.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Callable, Iterable
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any
from urllib.parse import urlsplit

from werkzeug.wrappers import Request, Response

from tidelog.client.http import Http
from tidelog.console.lag import LagSampler
from tidelog.errors import KAFKA_ERRORS

API_PREFIX = "/api/"
LAG_PATH = "/lag"
CONSOLE_HEADER = "X-Tidelog-Console"
MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's own limit
METHODS = frozenset({"GET", "POST", "PATCH", "DELETE"})
# What the browser may say of its request, and what of the answer it may hear.
_REQUEST_HEADERS = ("Content-Type", "Accept")
_ANSWER_HEADERS = ("Content-Type", "X-High-Watermark", "X-Log-Start-Offset", "X-Next-Offset")

StartResponse = Callable[..., Any]


def static_files() -> dict[str, bytes]:
    """The console's files by URL path, read once from the package (``vendor/`` included)."""
    files: dict[str, bytes] = {}

    def add(folder: Traversable, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                add(entry, f"{prefix}{entry.name}/")
            else:
                files[f"{prefix}{entry.name}"] = entry.read_bytes()

    add(resources.files("tidelog.console") / "static", "/")
    files["/"] = files["/index.html"]
    return files


class Console:
    """The WSGI application: the console's files, ``/api/*`` passed on to ``http``, and the lag
    history ``sampler`` keeps (none without one)."""

    def __init__(
        self,
        http: Http,
        *,
        sampler: LagSampler | None = None,
        files: dict[str, bytes] | None = None,
    ) -> None:
        self.http = http
        self.sampler = sampler
        self.files = static_files() if files is None else files

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Mounted anywhere (``tidelog dev`` serves it under /console): paths are the console's
        own, after its mount point. The API's path goes on as the browser encoded it."""
        request = Request(environ)
        mount = environ.get("SCRIPT_NAME", "")
        raw = (environ.get("RAW_URI") or environ.get("REQUEST_URI") or "").split("?", 1)[0]
        raw = raw[len(mount) :] if raw.startswith(mount) else request.path
        if raw.startswith(API_PREFIX):
            response = self._proxy(request, raw[len(API_PREFIX) - 1 :])
        elif raw == LAG_PATH:
            response = self._lag(request)
        elif mount and request.path == "/" and not environ.get("PATH_INFO"):
            response = Response(status=308, headers={"Location": f"{mount}/"})
        else:
            response = self._file(request)
        if self.sampler is not None and response.status_code < 400:
            self.sampler.touch()  # in use: lag is sampled while the console is
        return response(environ, start_response)

    def _file(self, request: Request) -> Response:
        body = self.files.get(request.path)
        if body is None or request.method not in ("GET", "HEAD"):
            return _refusal(404, "not a file of the console")
        kind = mimetypes.guess_type(request.path if request.path != "/" else "/index.html")[0]
        response = Response(body, content_type=kind or "application/octet-stream")
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'"
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    def _proxy(self, request: Request, path: str) -> Response:
        refusal = self._refused(request, path)
        if refusal is not None:
            return refusal
        body = request.get_data(cache=False)
        answer = self.http.send(
            request.method,
            path + (f"?{request.query_string.decode()}" if request.query_string else ""),
            content=body or None,
            headers={k: request.headers[k] for k in _REQUEST_HEADERS if k in request.headers},
        )
        response = Response(answer.content, status=answer.status_code)
        for name in _ANSWER_HEADERS:
            if name in answer.headers:
                response.headers[name] = answer.headers[name]
        response.headers["Cache-Control"] = "no-store"
        return response

    def _lag(self, request: Request) -> Response:
        refusal = self._foreign(request)
        if refusal is not None:
            return refusal
        if request.method != "GET":
            return _refusal(405, "the lag history is read with GET")
        group = request.args.get("group", "")
        if not group:
            return _refusal(400, "name the group: lag?group=G")
        sampler = self.sampler
        body = {
            "group": group,
            "interval_ms": None if sampler is None else int(sampler.interval_s * 1000),
            "samples": [] if sampler is None else sampler.history.of(group),
            "error": "this console samples no lag" if sampler is None else sampler.error,
        }
        response = Response(json.dumps(body), content_type="application/json")
        response.headers["Cache-Control"] = "no-store"
        return response

    def _refused(self, request: Request, path: str) -> Response | None:
        if request.method not in METHODS:
            return _refusal(405, f"{request.method} is not a method of the API")
        if not path.startswith("/v1/") or any(
            part in (".", "..") or part.lower() in ("%2e", "%2e%2e", ".%2e", "%2e.")
            for part in path.split("/")
        ):
            return _refusal(404, "only the API's /v1/ paths are passed on")
        refusal = self._foreign(request)
        if refusal is not None:
            return refusal
        if (request.content_length or 0) > MAX_BODY_BYTES:
            return _refusal(413, "the request is over the API's 10 MB")
        return None

    @staticmethod
    def _foreign(request: Request) -> Response | None:
        """A refusal unless the request comes from the console's own pages."""
        if request.headers.get(CONSOLE_HEADER) != "1":
            return _refusal(
                403,
                f"API calls come from the console's pages ({CONSOLE_HEADER})",
                "CLUSTER_AUTHORIZATION_FAILED",
            )
        host = request.host
        origin = request.headers.get("Origin")
        if not _local_host(host) or (origin is not None and urlsplit(origin).netloc != host):
            return _refusal(
                403, "this console answers its own pages only", "CLUSTER_AUTHORIZATION_FAILED"
            )
        return None


def _local_host(host: str) -> bool:
    name = urlsplit(f"//{host}").hostname or ""
    return name in ("127.0.0.1", "localhost", "::1")


def _refusal(status: int, message: str, error: str = "INVALID_REQUEST") -> Response:
    """An answer in the API's error shape, Kafka's name on it."""
    kafka = KAFKA_ERRORS[error]
    body = {"error": kafka.name, "error_code": kafka.code, "message": message, "retriable": False}
    return Response(json.dumps(body), status=status, content_type="application/json")
