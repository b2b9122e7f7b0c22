"""The one place where botocore's errors become tidelog's."""

from __future__ import annotations

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ReadTimeoutError,
)

from tidelog.errors import InternalError, TidelogError
from tidelog.storage.errors import InvalidStorageRequestError, StorageUnavailableError

_TRANSIENT_CODES = frozenset(
    {
        "InternalError",
        "InternalServerError",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "ServiceUnavailable",
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "TransactionInProgressException",
        "ConditionalRequestConflict",
    }
)


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def translate(exc: Exception, doing: str) -> TidelogError:
    """What ``exc``, raised while ``doing`` something, means for the caller."""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
        if code in _TRANSIENT_CODES or status >= 500:
            return StorageUnavailableError(f"{doing}: {code or status}, retry")
        if code == "ValidationException":
            return InvalidStorageRequestError(f"{doing}: {exc}")
        return InternalError(f"{doing}: unexpected {code or status}: {exc}")
    if isinstance(exc, ReadTimeoutError | ConnectionClosedError):
        # The request was sent: a write may have landed.
        return StorageUnavailableError(f"{doing}: no answer ({exc})", ambiguous=True)
    if isinstance(exc, BotoCoreError):
        return StorageUnavailableError(f"{doing}: {exc}")
    return InternalError(f"{doing}: {exc!r}")
