"""Housekeeping over many small runs: what a maintenance pass and a collector run cost when
requests of a few hundred bytes arrive in flushes that each hold a run of every partition.

Each job against what it must do at the least when it makes one call at a time:

- the roller against reading the same runs one ranged GET at a time (what it did until a pass
  shared its reads; it then also wrote a queue item per run);
- the collector against reading and deleting copies of the same objects one at a time (a GET
  for the footer that names an object's partitions, and the DELETE).

Both sides use the same stores: under ``aws-latency`` (every call as slow as on AWS, in-memory
stores, in-process), where calls overlap (``TIDELOG_HOUSEKEEPING_AT_ONCE``, 16); and on the
embedded emulator (in-process, behind its lock), where they do not (1, as in `tidelog dev`):
there only the calls saved count. Beside each rate: the calls made for each run rolled or
object collected. The secured soak (``benchmarks.soak_secured``) commits about 60 runs and 30
flush objects a second at 100 records a second.

Measured on 2026-11-28 by this module on the code before (not rerun by `make bench`: the code
is gone): the roller 21 runs/s under aws-latency (0.8x) and 188 on the emulator (0.4x), 2.1
calls a run (a GET and a queue write each); the collector 12 objects/s under aws-latency
(1.0x) and 141 on the emulator (0.7x), 3.1 calls an object.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.log import T0, TinyLog, tiny_log
from tests.support.resources import new_bucket, new_table

from benchmarks.report import Section
from tidelog.local.emulator import Emulator
from tidelog.local.paths import template_path
from tidelog.local.stack import aws_client
from tidelog.local.template import Template
from tidelog.log.entries import LogEntry, partition_entries
from tidelog.log.lifecycle.housekeeping import MAINTENANCE_JOBS, Housekeeper
from tidelog.log.topics import Topics
from tidelog.log.write.validate import validate_batches
from tidelog.log.write.writer import AppendRequest
from tidelog.records import RecordBatchBuilder
from tidelog.storage import MetadataStore, ObjectStore
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.faults import FaultPlan, FaultyMetadataStore, FaultyObjectStore
from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore
from tidelog.storage.s3 import S3ObjectStore

PARTITIONS = 6
GRACE_MS = 3_600_000
BEFORE = (
    "the roller 21 runs/s under aws-latency (0.8x) and 188 on the emulator (0.4x), 2.1 calls "
    "a run; the collector 12 objects/s under aws-latency (1.0x) and 141 on the emulator "
    "(0.7x), 3.1 calls an object"
)
VALUE = b"v" * 200


def run(progress: Any = print) -> Section:
    section = Section(
        "Housekeeping over many small runs: the roller and the collector",
        f"Flushes of {PARTITIONS} runs each, one record of {len(VALUE)} bytes a run; one "
        "maintenance pass rolls them all, and once their grace has passed one collector run "
        "deletes the flush objects. The roller's baseline reads the same runs one ranged GET "
        "at a time, as a roller reading run by run must at the least; the collector's baseline "
        "reads and deletes copies of the same objects one call at a time, as a collector that "
        "reads each object's footer must. Calls are counted per run rolled, per object "
        "collected.",
        ("where", "job", "items", "one call at a time, /s", "tidelog, /s", "ratio", "calls each"),
    )
    for where, flushes, stores, at_once in (
        ("aws-latency, 16 calls at once", 100, _latency_stores, 16),
        ("the emulator, one call at a time", 300, _emulator_stores, 1),
    ):
        with stores() as (meta, objects, counts):
            measured = _measure(meta, objects, counts, flushes, at_once=at_once)
        for job, items, (baseline, rate, calls) in (
            ("roll", flushes * PARTITIONS, measured[0]),
            ("collect", flushes, measured[1]),
        ):
            section.rows.append(
                (
                    where,
                    job,
                    f"{items:,}",
                    f"{baseline:,.0f}",
                    f"{rate:,.0f}",
                    f"{rate / baseline:.1f}x",
                    f"{calls:.2f}",
                )
            )
            progress(f"    {where}, {job}: {baseline:.0f} -> {rate:.0f}/s, {calls:.2f} calls each")
    section.notes.append(f"Before, over the same runs on 2026-11-28: {BEFORE}.")
    section.notes.append(
        "A flush object holds a run of each partition its requests named; a pass reads a small "
        "one once for all of them (tidelog.log.lifecycle.reads) and hands a roll's objects to "
        "the collector in one queue item (tidelog.log.garbage). The collector judges each "
        "object once however many partitions queued it, and reads footers and deletes "
        "objects 16 at a time (tidelog.log.lifecycle.collect)."
    )
    return section


Stores = tuple[MetadataStore, ObjectStore, Counter[str]]


@contextmanager
def _latency_stores() -> Iterator[Stores]:
    counts: Counter[str] = Counter()
    plan = FaultPlan.aws_latency(7)
    meta = _Counted(FaultyMetadataStore(MemoryMetadataStore(), plan), counts, "dynamodb")
    objects = _Counted(FaultyObjectStore(MemoryObjectStore(lambda: T0), plan), counts, "s3")
    yield meta, objects, counts  # type: ignore[misc]


@contextmanager
def _emulator_stores() -> Iterator[Stores]:
    emulator = Emulator(port=0)
    emulator.start()
    try:
        ddb = aws_client("dynamodb", emulator.url, "us-east-1")
        s3 = aws_client("s3", emulator.url, "us-east-1")
        counts: Counter[str] = Counter()
        meta = DynamoMetadataStore(ddb, new_table(ddb, Template(template_path())))
        objects = S3ObjectStore(s3, new_bucket(s3))
        yield (
            _Counted(meta, counts, "dynamodb"),  # type: ignore[misc]
            _Counted(objects, counts, "s3"),
            counts,
        )
    finally:
        emulator.stop()


Rates = tuple[float, float, float]  # one call at a time, /s; tidelog, /s; calls each


def _measure(
    meta: MetadataStore, objects: ObjectStore, counts: Counter[str], flushes: int, *, at_once: int
) -> tuple[Rates, Rates]:
    """The roll of every run, then the collection of every flush object."""
    with tempfile.TemporaryDirectory() as tmp:
        log = tiny_log(
            Path(tmp),
            partitions=PARTITIONS,
            meta=meta,
            objects=objects,
            configs={"segment.ms": 1},  # every run rolls in the pass
        )
        _fill(log, flushes)
        runs = [
            e for p in range(PARTITIONS) for e in partition_entries(meta, log.topic.topic_id, p)
        ]
        read_one_by_one = len(runs) / _seconds(lambda: _read_run_by_run(objects, runs))
        log.clock.now += 10
        keeper = Housekeeper(
            meta,
            objects,
            Topics(meta, log.clock),
            clock_ms=log.clock,
            grace_ms=GRACE_MS,
            settle_ms=0,
            at_once=at_once,
        )
        counts.clear()
        seconds = _seconds(lambda: keeper.run(MAINTENANCE_JOBS))
        left = sum(len(partition_entries(meta, log.topic.topic_id, p)) for p in range(PARTITIONS))
        if left != PARTITIONS:
            raise RuntimeError(f"the pass left {left} entries, not a segment a partition")
        rolled = (read_one_by_one, len(runs) / seconds, sum(counts.values()) / len(runs))

        flushed = sorted({run.object_key for run in runs})
        copies = [f"bench/{i}" for i in range(len(flushed))]
        for key, copy in zip(flushed, copies, strict=True):
            objects.put(copy, objects.get(key))
        collect_one_by_one = len(copies) / _seconds(lambda: _collect_one_by_one(objects, copies))
        log.clock.now += GRACE_MS
        counts.clear()
        seconds = _seconds(lambda: keeper.run(["gc"]))
        if list(objects.list("data/")):
            raise RuntimeError("the collector left flush objects behind")
        collected = (
            collect_one_by_one,
            len(flushed) / seconds,
            sum(counts.values()) / len(flushed),
        )
        return rolled, collected


def _fill(log: TinyLog, flushes: int) -> None:
    for _ in range(flushes):
        builder = RecordBatchBuilder()
        builder.append(b"key", VALUE, (), log.clock.now)
        batches = validate_batches(builder.build(), max_message_bytes=10**6, log_append_time=None)
        log.writer.append([AppendRequest(log.topic, p, batches) for p in range(PARTITIONS)])
        log.clock.now += 10


def _read_run_by_run(objects: ObjectStore, runs: list[LogEntry]) -> None:
    for entry in runs:
        objects.get(entry.object_key, entry.start, entry.end)


def _collect_one_by_one(objects: ObjectStore, keys: list[str]) -> None:
    for key in keys:
        objects.get(key)
        objects.delete(key)


def _seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


class _Counted:
    """Counts every call to the store it wraps, by the store's kind."""

    def __init__(self, inner: Any, counts: Counter[str], kind: str) -> None:
        self._inner = inner
        self._counts = counts
        self._kind = kind

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._counts[f"{self._kind}.{name}"] += 1
            return method(*args, **kwargs)

        return counted
