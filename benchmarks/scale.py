"""Sustained use and many topics: what a `tidelog dev` left running for an afternoon meets.

- Produce latency on a stack holding 1,000 topics while housekeeping runs (sped up to every
  second), against the same stack holding only the topic under test (target: p99 within 2x).
- Topics created per second, each with one produce, as a user fills a stack.
- Metadata reads per maintenance run over 1,000 idle partitions (target: O(1)).
- Soaks: RSS of `tidelog dev` over 20,000 produce requests from 4 clients, and of the produce
  handler in-process over 20,000 requests (target: within 1.2x of RSS after 1,000).

Each stack is a `tidelog dev` subprocess of its own, so its memory is its own.
"""

from __future__ import annotations

import json
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.support import devserver
from tests.support.counting import CountingStore
from tests.support.log import tiny_log

from benchmarks.inprocess import rss_mb
from benchmarks.report import Section, driven
from tidelog.local.stack import aws_client
from tidelog.log import due
from tidelog.log.lifecycle.housekeeping import MAINTENANCE_JOBS
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.memory import MemoryMetadataStore

TOPICS = 1000
LATENCY_REQUESTS = 1500
SOAK_REQUESTS = 20_000
SPEEDUP = "6"  # maintenance every 10 s, collection every 50 s
SETTLE = {"TIDELOG_ROLL_SETTLE_MS": "0"}  # a filled topic has nothing due after one pass
SOAK_GRACE = {"TIDELOG_GC_GRACE_MS": "10000"}


def _post(api: str, path: str, body: dict[str, Any]) -> float:
    request = urllib.request.Request(
        api + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()
    return time.perf_counter() - start


def _records(i: int, count: int = 1) -> dict[str, Any]:
    return {"records": [{"key": f"user-{i % 97}", "value": f"click {i}.{n}"} for n in range(count)]}


def _fill(api: str, topics: int) -> float:
    """Create ``topics`` topics of 3 partitions, each given one produce of 6 records; topics
    per second."""
    start = time.perf_counter()
    for t in range(topics):
        _post(api, "/v1/topics", {"name": f"filler-{t:04d}", "partitions": 3})
        _post(api, f"/v1/topics/filler-{t:04d}/records", _records(t, 6))
    return topics / (time.perf_counter() - start)


def _latencies(api: str) -> tuple[float, float]:
    _post(api, "/v1/topics", {"name": "probe", "partitions": 3})
    times = sorted(
        _post(api, "/v1/topics/probe/records", _records(i)) for i in range(LATENCY_REQUESTS)
    )
    return times[len(times) // 2] * 1000, times[int(len(times) * 0.99)] * 1000


def _wait_until_idle(dev: devserver.DevProcess, timeout_s: float = 300) -> float:
    """Wait for housekeeping to finish the work the filling made due; seconds it took."""
    table = aws_client("dynamodb", dev.aws_url, "us-east-1").list_tables()["TableNames"][0]
    meta = DynamoMetadataStore(aws_client("dynamodb", dev.aws_url, "us-east-1"), table)
    start = time.perf_counter()
    while due.due_marks(meta, time.time_ns() // 1_000_000 + 60_000):
        if time.perf_counter() - start > timeout_s:
            raise RuntimeError("housekeeping never caught up with the filled topics")
        time.sleep(1)
    return time.perf_counter() - start


def _stack(topics: int, progress: Any) -> dict[str, float]:
    dev = devserver.start("--schedule-speedup", SPEEDUP, env=SETTLE)
    try:
        rate = _fill(dev.api_url, topics) if topics else 0.0
        if topics:
            progress(f"    {topics} topics at {rate:.1f}/s")
            caught_up = _wait_until_idle(dev)
            progress(f"    housekeeping caught up with them in {caught_up:.0f} s")
        p50, p99 = _latencies(dev.api_url)
        return {"p50": p50, "p99": p99, "rate": rate, "rss": rss_mb(dev.process.pid)}
    finally:
        dev.stop()


def _reads_per_run(partitions: int) -> int:
    counting = CountingStore(MemoryMetadataStore())
    with tempfile.TemporaryDirectory() as tmp:
        log = tiny_log(Path(tmp), partitions=partitions, meta=counting, settle_ms=0)
        for p in range(partitions):
            log.produce(p, [(b"k", b"v")])
        log.housekeep(*MAINTENANCE_JOBS)  # the pass their writes called for; then they idle
        counting.reads = 0
        log.housekeep(*MAINTENANCE_JOBS)
    return counting.reads


def _soak_dev(progress: Any) -> list[tuple[int, float]]:
    # Rolled-away objects are collected after 10 s, not an hour: the soak looks for memory
    # that is never given back, not at data waiting out its grace period.
    dev = devserver.start("--schedule-speedup", SPEEDUP, env={**SETTLE, **SOAK_GRACE})
    try:
        _post(dev.api_url, "/v1/topics", {"name": "soak", "partitions": 3})
        samples = []
        with ThreadPoolExecutor(4) as pool:
            for done in range(1000, SOAK_REQUESTS + 1, 1000):
                list(
                    pool.map(
                        lambda i: _post(dev.api_url, "/v1/topics/soak/records", _records(i)),
                        range(done - 1000, done),
                    )
                )
                samples.append((done, rss_mb(dev.process.pid)))
                if done % 5000 == 0:
                    progress(f"    {done} requests, RSS {samples[-1][1]:.0f} MB")
        return samples
    finally:
        dev.stop()


def _soak_handler() -> list[tuple[int, float]]:
    soaked = driven("benchmarks.inprocess", "soak", str(SOAK_REQUESTS))
    return [(int(n), float(mb)) for n, mb in soaked]


def _curve(samples: list[tuple[int, float]]) -> str:
    return ", ".join(
        f"{n // 1000}k: {mb:.0f}" for n, mb in samples if n in (1000, 5000, 10000, 15000, 20000)
    )


def run(progress: Any = print) -> Section:
    section = Section(
        "Housekeeping at scale and sustained use",
        "A `tidelog dev` per measurement (a subprocess: its memory is its own), housekeeping "
        f"sped up {SPEEDUP}x (maintenance every 10 s) with runs rolling at once. Latencies are "
        f"of single-record JSON produces, {LATENCY_REQUESTS} in a row from one client, "
        "measured once housekeeping has done what filling the stack made due.",
        ("measurement", "baseline", "tidelog", "ratio / target"),
    )
    progress("  produce latency, one topic")
    empty = _stack(0, progress)
    progress(f"  produce latency, {TOPICS} topics")
    full = _stack(TOPICS, progress)
    section.rows += [
        (
            f"produce p50, {TOPICS} topics vs one",
            f"{empty['p50']:.0f} ms",
            f"{full['p50']:.0f} ms",
            f"{full['p50'] / empty['p50']:.2f}x",
        ),
        (
            f"produce p99, {TOPICS} topics vs one",
            f"{empty['p99']:.0f} ms",
            f"{full['p99']:.0f} ms",
            f"{full['p99'] / empty['p99']:.2f}x (target <= 2x)",
        ),
        ("topics created per second (each with one produce)", "", f"{full['rate']:.1f}", ""),
        (
            f"RSS after the latency run, {TOPICS} topics vs one",
            f"{empty['rss']:.0f} MB",
            f"{full['rss']:.0f} MB",
            f"{full['rss'] / empty['rss']:.2f}x",
        ),
    ]
    progress("  reads per maintenance run")
    reads = {n: _reads_per_run(n) for n in (10, 1000)}
    section.rows.append(
        (
            "metadata reads per maintenance run, 1,000 idle partitions vs 10",
            str(reads[10]),
            str(reads[1000]),
            f"{reads[1000] / reads[10]:.2f}x (target: O(1))",
        )
    )
    progress(f"  soak: tidelog dev, {SOAK_REQUESTS} produces")
    dev_curve = _soak_dev(progress)
    progress(f"  soak: the produce handler in-process, {SOAK_REQUESTS} requests")
    handler_curve = _soak_handler()
    for label, curve in (
        ("tidelog dev", dev_curve),
        ("produce handler, in-process", handler_curve),
    ):
        first, last = curve[0][1], curve[-1][1]
        section.rows.append(
            (
                f"RSS, {label}: after 1,000 vs after {SOAK_REQUESTS:,} requests",
                f"{first:.0f} MB",
                f"{last:.0f} MB",
                f"{last / first:.2f}x (target <= 1.2x)",
            )
        )
        section.notes.append(f"RSS curve, {label} (requests: MB): {_curve(curve)}")
    section.notes += [
        "Before issue 12, the same stack with 300 topics gave produce p99 of 8.9-10 s (every "
        "maintenance run read every partition, and moto copied the whole table per "
        "transaction), and `tidelog dev` reached 4.3 GB after 2,000 produces.",
        "The handler soak deletes the records it wrote from the in-memory stores at every "
        "sample: in Lambda they live in S3 and DynamoDB, not in the process.",
        "The dev soak collects rolled-away objects after 10 s instead of the default hour: the "
        "emulator keeps about 5 KB per S3 object and 2 KB per DynamoDB item in memory, so a "
        "grace period's worth of single-record flush objects is data, not a leak.",
    ]
    section.notes += [
        "RSS curve with glibc's arenas capped at two (`tidelog.malloc`, what `tidelog dev` and "
        "`tidelog agent` now do), on a3fd86c's housekeeping (gc judges what it finds in use on "
        "one more read per partition), run of 2026-11-23 alone but for a short test run from 16k "
        "(requests: MB): 1k: 291, 2k: 287, 5k: 287, 10k: 290, 15k: 295, 16k: 298, 17k: 315, 18k: "
        "306, 20k: 306; 7 min 41 s for the 20,000 requests. An earlier run, beside another soak "
        "and the test suite and before the gc fix: 1k: 291, 5k: 288, 10k: 291, 15k: 319, 18k: "
        "331. Flat to 10k, then smaller steps than before. With `malloc_trim(0)` after every "
        "scheduled run as well: 1k: 265, 10k: 270, 15k: 299, 20k: 308 (1.16x); with the trim "
        "alone and no cap: 1k: 265, 10k: 307, 14k: 328 (1.24x at 14k), so the trim is not kept. "
        "glibc gives threads that allocate at once arenas of their own, up to eight per core, and "
        "returns little of a fragmented one; tidelog's request threads hold the GIL while they "
        "allocate, so two arenas cost nothing measurable.",
        "RSS curve, tidelog dev, grace 10 s (requests: MB), run of 2026-11-23 after moto's "
        "instance tracking was turned off, before the cap: 1k: 264, 5k: 276, 10k: 284, 15k: 301, "
        "20k: 322. It grows in steps (+13 MB at 12k, +15 MB at 16k) between flat stretches of "
        "about 1 MB per 1,000 requests. The steps fall where rolls run (an active segment rolls "
        "at 1,000 runs: every 3,000 requests over 3 partitions). A second run with a full "
        "`gc.collect()` every 30 s in `tidelog dev` grew the same way (276 to 338 MB, 1.22x), so "
        "it is not uncollected cyclic garbage. In-process, with a 12 s pause after every 1,000 "
        "requests, RSS stayed between 285 and 291 MB from 2,000 to 9,000 requests.",
        "Before that fix, moto kept every model object it ever made on its class for its "
        "dashboard: about 6 dead DynamoDB item versions and every deleted flush object per "
        "produce. The same soak was at 339 MB after 8,000 requests, and with the default 1 h "
        "grace 464 MB after 20,000 (1.81x).",
    ]
    return section
