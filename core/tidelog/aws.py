"""boto3 clients for the functions: created once per process, shared by every invocation.

Nothing here names an endpoint. botocore reads ``AWS_ENDPOINT_URL`` and its per-service variants
(``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL_DYNAMODB``, ...) itself, so the same code talks to
AWS, to LocalStack or to the embedded emulator of ``tidelog dev``.

In ``tidelog dev`` every function shares one process and these clients, where on AWS each runs
with its own role. There (``TIDELOG_LOCAL_IAM=on``) each call names the roles it is made for,
from the caller's context (:mod:`tidelog.principals`), and the emulator checks it against their
policies (:mod:`tidelog.local.iam`). On AWS the variable is unset and nothing is added.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from tidelog.principals import acting_for

_clients: dict[str, Any] = {}
_lock = threading.Lock()

PRINCIPAL_HEADER = "x-tidelog-principal"
# From this size an S3 PUT asks to be confirmed before its body, as the Go SDK v2 does.
CONTINUE_FROM_BYTES = 2 * 1024 * 1024


def _name_principals(request: Any, **_: Any) -> None:
    roles = acting_for.get()
    if roles:
        request.headers[PRINCIPAL_HEADER] = ",".join(sorted(roles))


def _continue_only_for_large_bodies(params: dict[str, Any], **_: Any) -> None:
    """botocore sends every S3 PUT with ``Expect: 100-continue``: a round trip to S3 before the
    body's first byte, on the produce path's latency. A flush object is small, and S3 refuses
    one (a conditional PUT's 412) too rarely to save its bytes."""
    from botocore.utils import determine_content_length  # noqa: PLC0415 - see client()

    headers = params.get("headers", {})
    if "Expect" in headers and (determine_content_length(params["body"]) or 0) < (
        CONTINUE_FROM_BYTES
    ):
        del headers["Expect"]


def client(service: str) -> Any:
    """The process's shared client for ``service`` (boto3 clients are thread-safe; sessions
    are not, hence one short-lived session per client under a lock).

    boto3 is imported here, on first use, not when a handler module loads: it is a third of
    a cold start, and a request that fails validation never needs it.
    """
    with _lock:
        if service not in _clients:
            import boto3  # noqa: PLC0415 - deferred on purpose (cold start)
            from botocore.config import Config  # noqa: PLC0415

            config = Config(
                retries={"mode": "standard", "max_attempts": 3},
                connect_timeout=2,
                read_timeout=10,
                max_pool_connections=32,
                tcp_keepalive=True,
                # Every PUT carries its body's CRC-32C (S3ObjectStore.put) in a signed header,
                # which is how botocore already sends over HTTPS; said outright, a plain-HTTP
                # endpoint (the embedded emulator, LocalStack) is spared a SHA-256 of each body.
                s3={"payload_signing_enabled": False},
            )
            built = boto3.session.Session().client(service, config=config)
            if service == "s3":  # after botocore's own handler, which adds the header
                built.meta.events.register_last("before-call.s3", _continue_only_for_large_bodies)
            if os.environ.get("TIDELOG_LOCAL_IAM") == "on":
                built.meta.events.register("before-sign", _name_principals)
            _clients[service] = built
        return _clients[service]


def close_connections() -> None:
    """Close the clients' pooled connections; each opens new ones when next used (a restored
    SnapStart copy must not reuse the sockets of the snapshot's moment)."""
    with _lock:
        for built in _clients.values():
            built.close()


def reset() -> None:
    with _lock:
        _clients.clear()
