"""moto's server, made atomic by one global lock, on a port of our choosing.

moto applies conditional writes and transactions without locking: measured here, 8 threads x 50
``ADD`` lost updates, conditional read-then-write claims handed out duplicates, and
``TransactWriteItems`` let two conditional writers both win. Real DynamoDB and S3 never do. Serving
every request under one lock makes each API call atomic, which is all the real services promise.

It is served over HTTP/1.1 with kept connections (:mod:`tidelog.local.serving`), as AWS's
endpoints are: a call pays no TCP connection of its own.

Lambda ``Invoke`` is the one call served outside the lock: the function it runs calls back into
the emulator, and would wait forever for the lock its own invocation holds.

moto's server finds a request's service by its Authorization header, which a presigned request
(SigV4 in the query) has none of: it took the agents' OAUTHBEARER tokens, presigned STS
GetCallerIdentity requests, for S3's ListBuckets. Such a request is routed by the credential
scope its query names.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

from tidelog.local import motofixes
from tidelog.local.iam import Enforcer, access_denied
from tidelog.local.serving import Server

log = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# Step Functions that really execute. Lambda keeps moto's default (Docker) backend on purpose:
# its invoke is the one tidelog.local.lambdas hooks to run our handlers in-process, whereas
# ``use_docker: False`` swaps in a backend that only echoes the event back.
MOTO_CONFIG = {"stepfunctions": {"execute_state_machine": True}}


class LockedApp:
    """A WSGI app that serves one request at a time, bodies included; with an ``enforcer``,
    only the requests its roles allow (checked outside the lock: it reads no state)."""

    def __init__(self, app: WSGIApp) -> None:
        self._app = app
        self.lock = threading.Lock()
        self.enforcer: Enforcer | None = None

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        _route_presigned(environ)
        if self.enforcer is not None:
            refusal = self.enforcer.check(environ)
            if refusal is not None:
                log.warning("AccessDenied: %s", refusal.message)
                return access_denied(refusal, environ, start_response)
        if _is_lambda_invoke(environ):
            return list(self._app(environ, start_response))
        with self.lock:
            body = self._app(environ, start_response)
            try:
                return [b"".join(body)]
            finally:
                close = getattr(body, "close", None)
                if close is not None:
                    close()


def _route_presigned(environ: dict[str, Any]) -> None:
    """A presigned request's service for moto's dispatcher, from its query's credential scope
    (the signature is not checked here, as moto checks none)."""
    raw = str(environ.get("QUERY_STRING", ""))
    if environ.get("HTTP_AUTHORIZATION") or "X-Amz-Credential=" not in raw:
        return  # every call but a presigned one: no parsing on the emulator's hot path
    query = urllib.parse.parse_qs(raw)
    credential = query.get("X-Amz-Credential", [""])[0]
    if credential.count("/") == 4:  # key/date/region/service/aws4_request
        environ["HTTP_AUTHORIZATION"] = f"AWS4-HMAC-SHA256 Credential={credential}, Signature=-"


def _is_lambda_invoke(environ: dict[str, Any]) -> bool:
    path = str(environ.get("PATH_INFO", ""))
    return path.startswith("/2015-03-31/functions/") and path.endswith("/invocations")


class Emulator:
    """moto on ``host:port`` (port 0 picks a free one), in a thread of this process.

    moto's state is process-global: run one emulator per process, and never ``mock_aws`` in a
    process that runs one (it resets every backend).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 4566) -> None:
        self.host = host
        self._requested_port = port
        self._server: Server | None = None
        self._app: LockedApp | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the emulator is not running")
        return self._server.port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        motofixes.install()  # transactions and queries cost what they touch, not the table
        self._app = LockedApp(DomainDispatcherApplication(create_backend_app))
        self._server = Server(
            self._app, self.host, self._requested_port, name="tidelog-aws-emulator"
        )
        # moto's Step Functions tasks call back to localhost:$MOTO_PORT; DynamoDB Streams need
        # account-id endpoints off with recent botocore.
        os.environ["MOTO_PORT"] = str(self.port)
        os.environ.setdefault("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")
        self._post("/moto-api/config", MOTO_CONFIG)

    def enforce(self, enforcer: Enforcer | None) -> None:
        """Check every call that names its roles against ``enforcer`` (None: check none)."""
        if self._app is None:
            raise RuntimeError("the emulator is not running")
        self._app.enforcer = enforcer

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        self._server = None

    def _post(self, path: str, payload: object) -> None:
        """Not with urllib, which asks the server to close the connection: the server would
        then close first and hold the port in TIME_WAIT for a minute after the emulator
        stops. Here the client closes, so the wait is on its side."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            body = json.dumps(payload).encode()
            connection.request("POST", path, body, {"Content-Type": "application/json"})
            connection.getresponse().read()
        finally:
            connection.close()
