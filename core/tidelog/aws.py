"""boto3 clients for the functions: created once per process, shared by every invocation.

Nothing here names an endpoint. botocore reads ``AWS_ENDPOINT_URL`` and its per-service variants
(``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL_DYNAMODB``, ...) itself, so the same code talks to
AWS, to LocalStack or to the embedded emulator of ``tidelog dev``.
"""

from __future__ import annotations

import threading
from typing import Any

_clients: dict[str, Any] = {}
_lock = threading.Lock()


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
            _clients[service] = boto3.session.Session().client(service, config=config)
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
