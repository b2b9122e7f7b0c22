"""Fault-injecting wrappers for both storage ports, driven by one seeded random source.

A fault strikes either *before* the call (nothing happened, the caller sees a retriable error)
or *after* it (the write landed, yet the caller sees an ambiguous error, as after a timeout on a
response that never arrived). An object PUT may also be *resent*: it landed, its reply was lost,
and the SDK's own retry sent it again, so the caller sees the second reply (412 for a conditional
PUT). DynamoDB transactions need no such fault: botocore fills in their ClientRequestToken once
for all its retries, and DynamoDB answers a resend as it answered the first.
Simulation tests print the seed so any failure can be replayed.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from tidelog.storage.errors import StorageUnavailableError
from tidelog.storage.metadata import Delete, Item, MetadataStore, Put, Write
from tidelog.storage.objects import ObjectInfo, ObjectStore

T = TypeVar("T")


@dataclass
class FaultPlan:
    """How often calls fail. ``before``, ``after`` and ``resent`` are probabilities per call."""

    seed: int
    before: float = 0.0
    after: float = 0.0
    resent: float = 0.0

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)  # noqa: S311 - replayable, not secret
        self._lock = threading.Lock()
        self.injected = 0

    def run(
        self, what: str, call: Callable[[], T], *, mutates: bool, resendable: bool = False
    ) -> T:
        with self._lock:
            roll = self._random.random()
        if roll < self.before:
            self.injected += 1
            raise StorageUnavailableError(f"injected fault before {what} (seed {self.seed})")
        result = call()
        if mutates and roll < self.before + self.after:
            self.injected += 1
            raise StorageUnavailableError(
                f"injected fault after {what} (seed {self.seed})", ambiguous=True
            )
        if resendable and roll < self.before + self.after + self.resent:
            self.injected += 1
            return call()
        return result


class FaultyObjectStore:
    def __init__(self, inner: ObjectStore, plan: FaultPlan) -> None:
        self.inner = inner
        self.plan = plan

    def put(self, key: str, body: bytes, *, if_absent: bool = True) -> None:
        self.plan.run(
            f"PUT {key}",
            lambda: self.inner.put(key, body, if_absent=if_absent),
            mutates=True,
            resendable=True,
        )

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        return self.plan.run(f"GET {key}", lambda: self.inner.get(key, start, end), mutates=False)

    def head(self, key: str) -> ObjectInfo | None:
        return self.plan.run(f"HEAD {key}", lambda: self.inner.head(key), mutates=False)

    def delete(self, key: str) -> None:
        self.plan.run(f"DELETE {key}", lambda: self.inner.delete(key), mutates=True)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self.plan.run(
            f"LIST {prefix}", lambda: iter(list(self.inner.list(prefix))), mutates=False
        )


class FaultyMetadataStore:
    def __init__(self, inner: MetadataStore, plan: FaultPlan) -> None:
        self.inner = inner
        self.plan = plan

    def get(self, pk: str, sk: str) -> Item | None:
        return self.plan.run(f"GetItem {pk}/{sk}", lambda: self.inner.get(pk, sk), mutates=False)

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        return self.plan.run(
            f"BatchGetItem {len(keys)} keys", lambda: self.inner.get_many(keys), mutates=False
        )

    def query(
        self,
        pk: str,
        *,
        lo: str | None = None,
        hi: str | None = None,
        prefix: str | None = None,
        descending: bool = False,
        limit: int | None = None,
    ) -> Iterator[Item]:
        def call() -> Iterator[Item]:
            return iter(
                list(
                    self.inner.query(
                        pk, lo=lo, hi=hi, prefix=prefix, descending=descending, limit=limit
                    )
                )
            )

        return self.plan.run(f"Query {pk}", call, mutates=False)

    def write(self, op: Put | Delete) -> None:
        self.plan.run(f"{type(op).__name__} {op.key}", lambda: self.inner.write(op), mutates=True)

    def transact(self, ops: Sequence[Write]) -> None:
        self.plan.run(
            f"TransactWriteItems x{len(ops)}", lambda: self.inner.transact(ops), mutates=True
        )
