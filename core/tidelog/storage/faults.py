"""Fault-injecting wrappers for both storage ports, driven by one seeded random source.

A fault strikes either *before* the call (nothing happened, the caller sees a retriable error)
or *after* it (the write landed, yet the caller sees an ambiguous error, as after a timeout on a
response that never arrived). An object PUT may also be *resent*: it landed, its reply was lost,
and the SDK's own retry sent it again, so the caller sees the second reply (412 for a conditional
PUT). DynamoDB transactions need no such fault: botocore fills in their ClientRequestToken once
for all its retries, and DynamoDB answers a resend as it answered the first.
Simulation tests print the seed so any failure can be replayed.

A plan may also hold a *latency profile*: each call first waits as long as the same call takes
on AWS, drawn from a log-normal distribution fitted to a p50 and a p99 (plus transfer time by
size). ``AWS_LATENCY`` is S3 Standard and DynamoDB in one region, from published figures
(docs/cost.md cites them); ``TIDELOG_FAULTS=aws-latency`` puts `tidelog dev` under it.

A plan may be *controlled* by a small JSON file another process rewrites (``FaultFile``,
``TIDELOG_FAULTS=nemesis``): `tidelog chaos` turns faults on and off in running agents with it.
"""

from __future__ import annotations

import json
import math
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tidelog.storage.errors import StorageUnavailableError
from tidelog.storage.metadata import Delete, Item, MetadataStore, Put, Write
from tidelog.storage.objects import ObjectInfo, ObjectStore

T = TypeVar("T")


Z_99 = 2.3263  # the standard normal's 99th percentile


@dataclass(frozen=True)
class Latency:
    """A call's latency: log-normal with this median and 99th percentile, plus ``ms_per_mib``
    for each MiB sent or received."""

    p50_ms: float
    p99_ms: float
    ms_per_mib: float = 0.0

    def draw(self, rng: random.Random) -> float:
        """Seconds, before any transfer."""
        sigma = math.log(self.p99_ms / self.p50_ms) / Z_99
        return rng.lognormvariate(math.log(self.p50_ms), sigma) / 1000

    def transfer(self, size: int) -> float:
        """Seconds to move ``size`` bytes."""
        return self.ms_per_mib * size / 2**20 / 1000


# S3 Standard and DynamoDB, called from Lambda in the same region (sources: docs/cost.md).
AWS_LATENCY: Mapping[str, Latency] = {
    "s3.put": Latency(p50_ms=60, p99_ms=250, ms_per_mib=12),
    "s3.get": Latency(p50_ms=30, p99_ms=150, ms_per_mib=12),
    "s3.head": Latency(p50_ms=20, p99_ms=100),
    "s3.delete": Latency(p50_ms=25, p99_ms=120),
    "s3.list": Latency(p50_ms=40, p99_ms=200),
    "dynamodb.get": Latency(p50_ms=4, p99_ms=15),
    "dynamodb.query": Latency(p50_ms=6, p99_ms=25),
    "dynamodb.write": Latency(p50_ms=6, p99_ms=25),
    "dynamodb.transact": Latency(p50_ms=12, p99_ms=45),
}


@dataclass
class FaultPlan:
    """How often calls fail, and how long they take. ``before``, ``after`` and ``resent`` are
    probabilities per call; ``latency`` maps a call's kind (``s3.put``, ``dynamodb.query``...)
    to how long it waits first (``sleep``, injectable)."""

    seed: int
    before: float = 0.0
    after: float = 0.0
    resent: float = 0.0
    latency: Mapping[str, Latency] = field(default_factory=dict)
    sleep: Callable[[float], None] = time.sleep
    spike: float = 0.0  # the chance that a call also stalls for spike_s
    spike_s: float = 0.0
    only: str = ""  # faults strike only calls whose kind starts so ("s3.", "dynamodb.")
    control: FaultFile | None = None

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)  # noqa: S311 - replayable, not secret
        self._lock = threading.Lock()
        self.injected = 0

    @classmethod
    def aws_latency(cls, seed: int) -> FaultPlan:
        """Every call as slow as on AWS, and none failing."""
        return cls(seed, latency=AWS_LATENCY)

    @classmethod
    def controlled(cls, seed: int, control: FaultFile) -> FaultPlan:
        """Faults as ``control`` says at each moment; none while it says nothing."""
        return cls(seed, control=control)

    def run(
        self,
        what: str,
        call: Callable[[], T],
        *,
        mutates: bool,
        resendable: bool = False,
        kind: str = "",
        size: int | Callable[[T], int] = 0,
    ) -> T:
        """``size``: bytes sent, or how to count the bytes received from the result."""
        with self._lock:
            if self.control is not None:
                self.control.apply(self)
            roll = self._random.random() if kind.startswith(self.only) else 1.0
            latency = self.latency.get(kind)
            wait = latency.draw(self._random) if latency is not None else 0.0
            stall = self.spike_s if self._random.random() < self.spike else 0.0
        if stall:
            self.sleep(stall)
        if latency is not None and not callable(size):
            self.sleep(wait + latency.transfer(size))
        if roll < self.before:
            self.injected += 1
            raise StorageUnavailableError(f"injected fault before {what} (seed {self.seed})")
        result = call()
        if latency is not None and callable(size):
            self.sleep(wait + latency.transfer(size(result)))
        if mutates and roll < self.before + self.after:
            self.injected += 1
            raise StorageUnavailableError(
                f"injected fault after {what} (seed {self.seed})", ambiguous=True
            )
        if resendable and roll < self.before + self.after + self.resent:
            self.injected += 1
            return call()
        return result


class FaultFile:
    """A plan's rates as a JSON file says, re-read when it changes (looked at most every
    ``every_s``): ``{"before": p, "after": p, "resent": p, "only": "s3.", "latency": "aws" |
    "", "spike": p, "spike_s": s}``, any key left out meaning none. A missing or unreadable
    file means no faults, so a half-written file never stops a process.

    Whenever the rates change, a process first appends how many faults it has injected so far
    to ``<path>.injected`` (``{"pid": p, "injected": n}`` a line), so a run can show that its
    faults struck."""

    KEYS = ("before", "after", "resent", "spike", "spike_s")

    def __init__(self, path: Path, *, every_s: float = 0.2) -> None:
        self.path = path
        self._every_s = every_s
        self._looked = -math.inf
        self._seen: tuple[int, int] | None = None
        self._reported = 0

    def apply(self, plan: FaultPlan) -> None:
        now = time.monotonic()
        if now - self._looked < self._every_s:
            return
        self._looked = now
        try:
            stat = os.stat(self.path)
            changed: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_ino)
        except OSError:
            changed = None
        if changed == self._seen:
            return
        self._seen = changed
        if plan.injected != self._reported:
            self._reported = plan.injected
            line = json.dumps({"pid": os.getpid(), "injected": plan.injected})
            with self.path.with_name(self.path.name + ".injected").open("a") as out:
                out.write(line + "\n")
        rates = self.read(self.path)
        for key in self.KEYS:
            setattr(plan, key, float(rates.get(key, 0.0)))
        plan.only = str(rates.get("only", ""))
        plan.latency = AWS_LATENCY if rates.get("latency") == "aws" else {}

    @staticmethod
    def read(path: Path) -> dict[str, float | str]:
        try:
            rates = json.loads(path.read_text())
        except (OSError, ValueError):
            return {}
        return rates if isinstance(rates, dict) else {}

    @staticmethod
    def injected(path: Path) -> int:
        """The faults the processes under ``path`` reported injecting."""
        latest: dict[int, int] = {}
        try:
            lines = path.with_name(path.name + ".injected").read_text().splitlines()
        except OSError:
            return 0
        for line in lines:
            try:
                report = json.loads(line)
                latest[int(report["pid"])] = max(
                    latest.get(int(report["pid"]), 0), int(report["injected"])
                )
            except (ValueError, KeyError, TypeError):
                continue
        return sum(latest.values())

    @staticmethod
    def write(path: Path, rates: Mapping[str, float | str]) -> None:
        """Replace the file at once (a reader sees the old rates or the new, never half)."""
        staged = path.with_suffix(".next")
        staged.write_text(json.dumps(dict(rates)))
        os.replace(staged, path)


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
            kind="s3.put",
            size=len(body),
        )

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        return self.plan.run(
            f"GET {key}",
            lambda: self.inner.get(key, start, end),
            mutates=False,
            kind="s3.get",
            size=len,
        )

    def tail(self, key: str, size: int) -> bytes:
        return self.plan.run(
            f"GET {key} (last {size} bytes)",
            lambda: self.inner.tail(key, size),
            mutates=False,
            kind="s3.get",
            size=len,
        )

    def head(self, key: str) -> ObjectInfo | None:
        return self.plan.run(
            f"HEAD {key}", lambda: self.inner.head(key), mutates=False, kind="s3.head"
        )

    def delete(self, key: str) -> None:
        self.plan.run(
            f"DELETE {key}", lambda: self.inner.delete(key), mutates=True, kind="s3.delete"
        )

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self.plan.run(
            f"LIST {prefix}",
            lambda: iter(list(self.inner.list(prefix))),
            mutates=False,
            kind="s3.list",
        )


class FaultyMetadataStore:
    def __init__(self, inner: MetadataStore, plan: FaultPlan) -> None:
        self.inner = inner
        self.plan = plan

    def get(self, pk: str, sk: str) -> Item | None:
        return self.plan.run(
            f"GetItem {pk}/{sk}",
            lambda: self.inner.get(pk, sk),
            mutates=False,
            kind="dynamodb.get",
        )

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        return self.plan.run(
            f"BatchGetItem {len(keys)} keys",
            lambda: self.inner.get_many(keys),
            mutates=False,
            kind="dynamodb.get",
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

        return self.plan.run(f"Query {pk}", call, mutates=False, kind="dynamodb.query")

    def write(self, op: Put | Delete) -> None:
        self.plan.run(
            f"{type(op).__name__} {op.key}",
            lambda: self.inner.write(op),
            mutates=True,
            kind="dynamodb.write",
        )

    def transact(self, ops: Sequence[Write]) -> None:
        self.plan.run(
            f"TransactWriteItems x{len(ops)}",
            lambda: self.inner.transact(ops),
            mutates=True,
            kind="dynamodb.transact",
        )
