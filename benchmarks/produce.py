"""The produce path, measured whole and in parts, side by side in one run.

- Throughput of HTTP -> handler -> stores for 1 KiB records in ~1 MiB requests, against raw
  ``put_object`` of the same bytes to the same emulator (target: ratio >= 0.7).
- S3 PUTs per GiB ingested: a flush per request (Lambda) and group commit (a long-running host).
- Handler CPU per request with the stores in memory (no AWS calls). Cold starts are measured in
  benchmarks/coldstart.py.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks.inprocess import fresh_cpu_ms
from benchmarks.report import Section
from tidelog.local import dev
from tidelog.local.stack import aws_client
from tidelog.records import RecordBatchBuilder

RECORD = 1024
T0 = 1_700_000_000_000


def batch_bytes(records: int, size: int = RECORD) -> bytes:
    builder = RecordBatchBuilder("none")
    payload = os.urandom(size)
    for _ in range(records):
        builder.append(None, payload, (), T0)
    return builder.build()


def _post(url: str, body: bytes, content_type: str) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        result: dict[str, Any] = json.loads(response.read())
        return result


def _topic(api: str, partitions: int = 4) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    _post(
        f"{api}/v1/topics",
        json.dumps(
            {
                "name": name,
                "partitions": partitions,
                "configs": {"max.message.bytes": 8 * 1024 * 1024},
            }
        ).encode(),
        "application/json",
    )
    return name


def _throughput(server: dev.DevServer, body: bytes, requests: int) -> tuple[float, float]:
    """(MB/s through the API, MB/s of raw put_object), interleaved so drift hits both."""
    s3 = aws_client("s3", server.emulator.url, "us-east-1")
    bucket = server.stack.bucket
    topic = _topic(server.api_url)
    url = f"{server.api_url}/v1/topics/{topic}/partitions/0/batches"
    ours = raw = 0.0
    for i in range(requests):
        start = time.perf_counter()
        _post(url, body, "application/vnd.kafka.record-batch")
        ours += time.perf_counter() - start
        start = time.perf_counter()
        s3.put_object(Bucket=bucket, Key=f"bench/raw-{uuid.uuid4().hex}-{i}", Body=body)
        raw += time.perf_counter() - start
    megabytes = len(body) * requests / 1e6
    return megabytes / ours, megabytes / raw


def _concurrent_throughput(
    server: dev.DevServer, body: bytes, clients: int, requests: int
) -> tuple[float, float]:
    """(MB/s through the API, MB/s of raw put_object), each with ``clients`` at once."""
    s3 = aws_client("s3", server.emulator.url, "us-east-1")
    topic = _topic(server.api_url)

    def ours(i: int) -> None:
        _post(
            f"{server.api_url}/v1/topics/{topic}/partitions/{i % 4}/batches",
            body,
            "application/vnd.kafka.record-batch",
        )

    def raw(i: int) -> None:
        s3.put_object(Bucket=server.stack.bucket, Key=f"bench/c-{uuid.uuid4().hex}", Body=body)

    rates = []
    for action in (ours, raw):
        start = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(action, range(requests)))
        rates.append(len(body) * requests / 1e6 / (time.perf_counter() - start))
    return rates[0], rates[1]


def _puts_per_gib(server: dev.DevServer, body: bytes, clients: int, requests: int) -> float:
    s3 = aws_client("s3", server.emulator.url, "us-east-1")
    bucket = server.stack.bucket

    def count() -> int:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="data/flush/")
        return sum(len(page.get("Contents", ())) for page in pages)

    topic = _topic(server.api_url)
    before = count()

    def send(i: int) -> None:
        _post(
            f"{server.api_url}/v1/topics/{topic}/partitions/{i % 4}/batches",
            body,
            "application/vnd.kafka.record-batch",
        )

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(send, range(requests)))
    gib = len(body) * requests / 2**30
    return (count() - before) / gib


def run(progress: Any = print) -> Section:
    section = Section(
        "The produce path",
        "Whole-path throughput over HTTP against raw `put_object` of the same bytes to the same "
        "emulator, interleaved in one run; S3 PUTs per GiB; handler CPU.",
        ("measurement", "baseline", "tidelog", "ratio / target"),
    )
    body = batch_bytes(1000)  # 1,000 records of 1 KiB: a ~1 MiB request
    lambda_mode = dev.start("127.0.0.1", 0, 0, group_commit=False, kafka_port=0)
    try:
        progress("  throughput, a flush per request")
        ours, raw = _throughput(lambda_mode, body, 20)
        section.rows.append(
            (
                "produce 1 MiB requests (1 KiB records), one client",
                f"put_object {raw:.1f} MB/s",
                f"{ours:.1f} MB/s",
                f"{ours / raw:.2f} (target >= 0.7)",
            )
        )
        progress("  PUTs per GiB, a flush per request")
        small = batch_bytes(128)
        lambda_puts = _puts_per_gib(lambda_mode, small, 8, 96)
    finally:
        lambda_mode.stop()
    grouped = dev.start("127.0.0.1", 0, 0, flush_ms=10, kafka_port=0)
    try:
        progress("  PUTs per GiB, group commit")
        group_puts = _puts_per_gib(grouped, small, 8, 96)
        progress("  throughput, 8 clients, group commit")
        ours, raw = _concurrent_throughput(grouped, body, 8, 32)
        section.rows.append(
            (
                "produce 1 MiB requests, 8 clients, group commit (10 ms)",
                f"put_object x8 {raw:.1f} MB/s",
                f"{ours:.1f} MB/s",
                f"{ours / raw:.2f} (target >= 0.7)",
            )
        )
    finally:
        grouped.stop()
    section.rows.append(
        (
            "S3 PUTs per GiB, 8 clients x 128 KiB requests",
            f"flush per request: {lambda_puts:,.0f}",
            f"group commit (10 ms): {group_puts:,.0f}",
            f"{lambda_puts / group_puts:.1f}x fewer PUTs",
        )
    )
    progress("  handler CPU")
    cpu = fresh_cpu_ms(body)
    section.rows.append(
        (
            "handler CPU per 1 MiB request, stores in memory",
            "-",
            f"{cpu:.1f} ms",
            "validation, staging, object, plan",
        )
    )
    section.notes += [
        "Both throughput columns go through the same locked emulator; a produce request adds "
        "the API Gateway event (base64), validation of every record, the staging file, the "
        "head read and the commit transaction to the one PUT the baseline makes.",
        "boto3 is imported on the first AWS call, not at import: it adds about 100 ms to the "
        "first request instead.",
    ]
    return section
