"""The roller over many small runs: what a pass costs when requests of a few hundred bytes
arrive in flushes that each hold a run of every partition.

The baseline is the reading a roller must do at the least if it reads run by run: one ranged
GET per run, one after another (what the roller did until a pass shared its reads; it then also
wrote a queue item per run). Both sides read the same runs through the same stores:

- under ``aws-latency`` (every call as slow as on AWS, in-memory stores, in-process), where a
  roll's GETs overlap (``TIDELOG_ROLL_READS_AT_ONCE``, 16);
- on the embedded emulator (in-process, behind its lock), where they do not (1, as in
  `tidelog dev`): there only the calls saved count.

Beside each rate: the calls the pass made for each run rolled. The secured soak
(``benchmarks.soak_secured``) commits about 60 runs a second at 100 records a second.

The roller before a pass shared its reads, measured on 2026-11-28 by this module on that code
(not rerun by `make bench`: the code is gone): 21 runs/s under aws-latency (0.8x reading run
by run) and 172 on the emulator (0.4x), 2.1 calls a run (a GET and a queue write each).
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
BEFORE = "21 runs/s under aws-latency (0.8x) and 172 on the emulator (0.4x), 2.1 calls a run"
VALUE = b"v" * 200


def run(progress: Any = print) -> Section:
    section = Section(
        "The roller over many small runs",
        f"Flushes of {PARTITIONS} runs each, one record of {len(VALUE)} bytes a run; one "
        "maintenance pass rolls them all. The baseline reads the same runs one ranged GET at a "
        "time, as a roller reading run by run must at the least. Calls are counted per run "
        "rolled.",
        ("where", "runs", "run by run, runs/s", "the roller, runs/s", "ratio", "calls a run"),
    )
    for where, flushes, stores, at_once in (
        ("aws-latency, 16 GETs at once", 100, _latency_stores, 16),
        ("the emulator, one GET at a time", 300, _emulator_stores, 1),
    ):
        with stores() as (meta, objects, counts):
            baseline, rolled, calls = _measure(meta, objects, counts, flushes, at_once=at_once)
        runs = flushes * PARTITIONS
        section.rows.append(
            (
                where,
                f"{runs:,}",
                f"{baseline:,.0f}",
                f"{rolled:,.0f}",
                f"{rolled / baseline:.1f}x",
                f"{calls:.2f}",
            )
        )
        progress(f"    {where}: {baseline:.0f} -> {rolled:.0f} runs/s, {calls:.2f} calls a run")
    section.notes.append(
        f"The roller before a pass shared its reads, over the same runs on 2026-11-28: {BEFORE}."
    )
    section.notes.append(
        "A flush object holds a run of each partition its requests named; a pass reads a small "
        "one once for all of them (tidelog.log.lifecycle.reads) and hands a roll's objects to "
        "the collector in one queue item (tidelog.log.garbage)."
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


def _measure(
    meta: MetadataStore, objects: ObjectStore, counts: Counter[str], flushes: int, *, at_once: int
) -> tuple[float, float, float]:
    """(runs/s read run by run, runs/s rolled, calls a run rolled)."""
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
        baseline = len(runs) / _seconds(lambda: _read_run_by_run(objects, runs))
        log.clock.now += 10
        keeper = Housekeeper(
            meta,
            objects,
            Topics(meta, log.clock),
            clock_ms=log.clock,
            grace_ms=3_600_000,
            settle_ms=0,
            reads_at_once=at_once,
        )
        counts.clear()
        seconds = _seconds(lambda: keeper.run(MAINTENANCE_JOBS))
        left = sum(len(partition_entries(meta, log.topic.topic_id, p)) for p in range(PARTITIONS))
        if left != PARTITIONS:
            raise RuntimeError(f"the pass left {left} entries, not a segment a partition")
        return baseline, len(runs) / seconds, sum(counts.values()) / len(runs)


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
