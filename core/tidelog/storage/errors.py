"""Errors raised by the storage ports, whatever adapter sits behind them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tidelog.errors import ConflictError, InvalidRequestError, NotFoundError, RetriableError


class ObjectExistsError(ConflictError):
    """A conditional PUT found an object at the key already (S3 answers 412)."""


class ObjectNotFoundError(NotFoundError):
    """No object is stored at the key."""

    default_kafka_error = "KAFKA_STORAGE_ERROR"


class ConditionFailedError(ConflictError):
    """A conditional write or a transaction was refused because a condition did not hold.

    ``failed`` lists the positions (in the writes given) whose condition failed, and ``current``
    maps each of them to the item stored at that key when the write was refused (None if absent),
    so the caller can re-read nothing and decide at once.
    """

    def __init__(
        self,
        message: str,
        *,
        failed: Sequence[int] = (),
        current: Mapping[int, Mapping[str, object] | None] | None = None,
    ) -> None:
        super().__init__(message)
        self.failed = tuple(failed)
        self.current = dict(current or {})


class StorageUnavailableError(RetriableError):
    """The store throttled, timed out or failed; the call may be retried.

    ``ambiguous`` is true when a write may have been applied even though it failed (a timeout
    after the request was sent): the caller must find out before acting as if it did not land.
    """

    def __init__(self, message: str, *, ambiguous: bool = False) -> None:
        super().__init__(message)
        self.ambiguous = ambiguous


class InvalidStorageRequestError(InvalidRequestError):
    """The request breaks a limit of the store (item size, transaction size, duplicate keys)."""
