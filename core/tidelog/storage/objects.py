"""The object store port: immutable objects under string keys, as S3 keeps them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from tidelog.storage.errors import ObjectExistsError


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    key: str
    size: int
    last_modified_ms: int


class ObjectStore(Protocol):
    """What tidelog needs of S3.

    ``put`` is create-only by default (``If-None-Match: *``): objects are written once and never
    overwritten, so a retried upload can tell whether its first attempt landed.
    """

    def put(self, key: str, body: bytes, *, if_absent: bool = True) -> None:
        """Store ``body`` at ``key``; raise ObjectExistsError if ``if_absent`` and it exists."""
        ...

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of the object (to its end if ``end`` is None).

        A range past the end is cut short, as HTTP ranges are; ObjectNotFoundError if absent.
        """
        ...

    def tail(self, key: str, size: int) -> bytes:
        """The object's last ``size`` bytes (``size`` >= 1), all of it if it is shorter;
        ObjectNotFoundError if absent."""
        ...

    def head(self, key: str) -> ObjectInfo | None:
        """The object's size and age, or None if no object is stored at ``key``."""
        ...

    def delete(self, key: str) -> None:
        """Remove the object; removing an absent object is not an error."""
        ...

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        """Every object whose key starts with ``prefix``, in key order."""
        ...


def check_tail(size: int) -> None:
    if size < 1:
        raise ValueError(f"invalid tail size {size}: at least one byte")


def check_range(start: int, end: int | None) -> None:
    if start < 0 or (end is not None and end < start):
        raise ValueError(f"invalid byte range [{start}, {end})")


def put_new(objects: ObjectStore, key: str, body: bytes) -> None:
    """Create the object at ``key``, a key that holds a fresh id and so is ours alone.

    An object already there is one of our own sends that landed: the SDK resends a PUT whose
    reply was lost, and the resend gets 412. A size that differs is not ours: the error stands.
    """
    try:
        objects.put(key, body)
    except ObjectExistsError:
        existing = objects.head(key)
        if existing is None or existing.size != len(body):
            raise
