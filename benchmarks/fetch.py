"""The fetch path, measured whole and in parts, side by side in one run.

- Throughput of HTTP -> handler -> stores for raw-batch fetches (4 MiB per request), against raw
  ranged ``get_object`` of the same byte ranges from the same emulator (target: ratio >= 0.8),
  reading flush objects (before a roll) and Kafka segments (after one).
- S3 GETs per MiB served, with the read-through cache cold and warm, and its hit rate.
- End-to-end latency from a produce request to a tailing consumer's long poll returning it.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks.produce import _post, _topic, batch_bytes
from benchmarks.report import Section
from tidelog import aws, runtime
from tidelog.local import dev
from tidelog.local.stack import aws_client
from tidelog.log.entries import partition_entries, without_leftovers

RAW = "application/vnd.kafka.record-batch"
FETCH_BYTES = 4 * 1024 * 1024


def _fetch_all(api: str, topic: str, end: int) -> int:
    """Read partition 0 from 0 to ``end`` as raw batches; the bytes served."""
    offset, served = 0, 0
    while offset < end:
        request = urllib.request.Request(
            f"{api}/v1/topics/{topic}/partitions/0/records?offset={offset}&max_bytes={FETCH_BYTES}",
            headers={"Accept": RAW},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            served += len(response.read())
            offset = int(response.headers["X-Next-Offset"])
    return served


def _raw_gets(server: dev.DevServer, topic_id: str) -> int:
    s3 = aws_client("s3", server.emulator.url, "us-east-1")
    served = 0
    for entry in without_leftovers(partition_entries(runtime.metadata_store(), topic_id, 0)):
        # The same bytes in requests of the same size a fetch makes.
        for start in range(entry.start, entry.end, FETCH_BYTES):
            end = min(entry.end, start + FETCH_BYTES)
            body = s3.get_object(
                Bucket=server.stack.bucket, Key=entry.object_key, Range=f"bytes={start}-{end - 1}"
            )["Body"].read()
            served += len(body)
    return served


@contextmanager
def _counting_gets() -> Iterator[list[int]]:
    """Counts GetObject calls of the functions' S3 client while open."""
    counter = [0]

    def count(**_: Any) -> None:
        counter[0] += 1

    runtime.object_store()
    events = aws.client("s3").meta.events  # the client the functions' object store uses
    events.register("before-call.s3.GetObject", count)
    try:
        yield counter
    finally:
        events.unregister("before-call.s3.GetObject", count)


def _compare(server: dev.DevServer, topic: str, topic_id: str, end: int, rounds: int = 3):
    """(MB/s through the API with the cache off, MB/s of raw GETs), interleaved."""
    ours = raw = 0.0
    served = 0
    for _ in range(rounds):
        _reset_cache(enabled=False)
        start = time.perf_counter()
        served = _fetch_all(server.api_url, topic, end)
        ours += time.perf_counter() - start
        start = time.perf_counter()
        raw_served = _raw_gets(server, topic_id)
        raw += time.perf_counter() - start
        assert raw_served == served, (raw_served, served)
    return served * rounds / 1e6 / ours, served * rounds / 1e6 / raw


def _reset_cache(*, enabled: bool) -> None:
    os.environ["TIDELOG_CACHE_BYTES"] = str(256 * 1024 * 1024 if enabled else 0)
    runtime.settings.cache_clear()
    runtime.log_reader.cache_clear()


def _cache_pass(server: dev.DevServer, topic: str, end: int) -> tuple[float, float, float]:
    """(GETs per MiB cold, GETs per MiB warm, hit rate of the warm pass)."""
    _reset_cache(enabled=True)
    with _counting_gets() as cold:
        served = _fetch_all(server.api_url, topic, end)
    cache = runtime.log_reader().cache
    assert cache is not None
    hits, misses = cache.hits, cache.misses
    with _counting_gets() as warm:
        _fetch_all(server.api_url, topic, end)
    mib = served / 2**20
    hit_rate = (cache.hits - hits) / max(1, cache.hits - hits + cache.misses - misses)
    return cold[0] / mib, warm[0] / mib, hit_rate


def _consume(api: str, topic: str, offset: int, stamps: dict[str, float]) -> None:
    url = f"{api}/v1/topics/{topic}/partitions/0/records?offset={offset}&max_wait_ms=5000"
    with urllib.request.urlopen(url, timeout=30) as response:
        records = json.loads(response.read())["records"]
    stamps["fetched"] = time.perf_counter()
    if not records or records[0]["offset"] != offset:
        raise AssertionError(f"the poll at {offset} returned {records}")


def _latency(server: dev.DevServer, samples: int = 100) -> tuple[float, float]:
    """p50 and p99 (ms) from a produce request's start to a long-polling fetch returning it."""
    api = server.api_url
    topic = _topic(api, partitions=1)
    latencies = []
    for offset in range(samples):
        stamps: dict[str, float] = {}
        consumer = threading.Thread(target=_consume, args=(api, topic, offset, stamps))
        consumer.start()
        time.sleep(0.02)  # the poll is waiting before the record is produced
        stamps["produced"] = time.perf_counter()
        body = json.dumps({"records": [{"value": f"record {offset}"}]}).encode()
        _post(f"{api}/v1/topics/{topic}/records", body, "application/json")
        consumer.join(30)
        latencies.append((stamps["fetched"] - stamps["produced"]) * 1000)
    latencies.sort()
    return statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1]


def run(progress: Any = print) -> Section:
    section = Section(
        "The fetch path",
        "Raw-batch fetches over HTTP (4 MiB requests) against ranged `get_object` of the same "
        "byte ranges from the same emulator, interleaved in one run; S3 GETs per MiB and the "
        "read-through cache; produce-to-fetch latency with a long-polling consumer.",
        ("measurement", "baseline", "tidelog", "ratio / target"),
    )
    os.environ["TIDELOG_ROLL_SETTLE_MS"] = "0"
    server = dev.start("127.0.0.1", 0, 0, group_commit=False, kafka_port=0)
    try:
        api = server.api_url
        topic = _topic(api, partitions=1)
        found = runtime.topics().get(topic)
        body = batch_bytes(1000)
        progress("  producing 32 MiB")
        for _ in range(32):
            _post(f"{api}/v1/topics/{topic}/partitions/0/batches", body, RAW)
        end = 32 * 1000
        for label in ("flush objects (before a roll)", "Kafka segments (after a roll)"):
            if "segments" in label:
                runtime.topics().alter_configs(topic, {"segment.ms": 1})
                time.sleep(0.01)
                runtime.housekeeper().run(("roll",))
            progress(f"  throughput from {label}")
            ours, raw = _compare(server, topic, found.topic_id, end)
            section.rows.append(
                (
                    f"fetch raw batches from {label}, cache off",
                    f"ranged get_object {raw:.1f} MB/s",
                    f"{ours:.1f} MB/s",
                    f"{ours / raw:.2f} (target >= 0.8)",
                )
            )
        progress("  GETs per MiB and the cache")
        cold, warm, hit_rate = _cache_pass(server, topic, end)
        section.rows.append(
            (
                "S3 GETs per MiB served (segments, 1 MiB cache blocks)",
                f"cold cache: {cold:.2f}",
                f"warm cache: {warm:.2f}",
                f"hit rate {hit_rate:.0%}",
            )
        )
        progress("  produce -> fetch latency")
        p50, p99 = _latency(server)
        section.rows.append(
            (
                "produce -> long-poll fetch latency, 100 single records",
                "-",
                f"p50 {p50:.1f} ms, p99 {p99:.1f} ms",
                "Lambda mode: a flush per request",
            )
        )
    finally:
        server.stop()
        _reset_cache(enabled=True)
    section.notes += [
        "The API column pays for HTTP, the API Gateway event, the index lookup (head read and "
        "a query), base64 of the response and the gateway's decoding; the baseline is the GETs "
        "alone, in ranges of at most 4 MiB (what a fetch asks for). Each fetch GETs its ranges "
        "concurrently; with the cache off, a fetch from a segment also GETs its `.index`.",
        "Latency is from the produce request's start to the fetch response: the commit, then "
        "the consumer's next head poll (10 ms, growing to 100 ms while nothing arrives).",
    ]
    return section
