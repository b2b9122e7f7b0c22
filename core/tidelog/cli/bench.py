"""`tidelog bench produce|consume`: throughput and latency through the Python client, against
any tidelog API, with live progress on a terminal.

``produce`` sends records of a given size and reports records/s, MB/s and the latency from
``produce`` to the delivery callback (the record committed: acks=all) at p50, p95, p99 and the
maximum. ``consume`` reads a topic from its start, every partition assigned, and reports
records/s, MB/s and how long each fetch that brought records took.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from tidelog.cli.progress import progress
from tidelog.cli.topics import UsageError, connection, connection_options, guarded, render


def add_commands(commands: Any) -> None:
    bench = commands.add_parser("bench", help="throughput and latency of produce or consume")
    actions = bench.add_subparsers(dest="action", required=True)

    produce = actions.add_parser("produce", help="send records; rate and delivery latency")
    produce.add_argument("topic")
    produce.add_argument("-n", "--num", type=int, default=100_000, help="records (100,000)")
    produce.add_argument("-s", "--size", type=int, default=1024, help="value bytes (1024)")
    produce.add_argument(
        "--keys", type=int, default=0, help="spread over this many keys (default: no keys)"
    )
    produce.add_argument("-z", "--compression", default="lz4", help="codec (lz4)")
    produce.add_argument("--linger-ms", type=int, default=5)
    produce.add_argument("--batch-size", type=int, default=65_536)
    connection_options(produce, read=True)

    consume = actions.add_parser("consume", help="read a topic from its start; rate and fetches")
    consume.add_argument("topic")
    consume.add_argument("-n", "--num", type=int, help="records (default: all there are)")
    connection_options(consume, read=True)


def run(args: argparse.Namespace, out: Any = None, err: Any = None) -> int:
    stderr = err or sys.stderr

    def body(say: Callable[[str], None]) -> None:
        if args.num is not None and args.num < 1:
            raise UsageError("-n must be at least 1")
        measure = _produce if args.action == "produce" else _consume
        result = measure(args, connection(args), stderr)
        rows = [(k, v) for k, v in result.items()]
        say(render(args.output, result, ("MEASURE", "VALUE"), rows))

    return guarded("bench", body, out, err)


def _produce(args: argparse.Namespace, api: dict[str, Any], err: IO[str]) -> dict[str, Any]:
    from tidelog.client import Producer  # noqa: PLC0415 - the client extra, on demand

    if args.size < 0 or args.keys < 0:
        raise UsageError("--size and --keys are counts: 0 or more")
    value = os.urandom(args.size // 2 + 1).hex()[: args.size].encode()
    config = {
        **api,
        "compression.type": args.compression,
        "linger.ms": args.linger_ms,
        "batch.size": args.batch_size,
    }
    latencies: list[float] = []
    failures: list[Exception] = []
    with progress(err, "producing", args.num) as advance, Producer(config) as producer:

        def delivered(sent: float) -> Callable[[Exception | None, Any], None]:
            def callback(error: Exception | None, metadata: Any) -> None:
                del metadata
                if error is not None:
                    failures.append(error)
                latencies.append(time.perf_counter() - sent)
                advance(1)  # on the producer's thread: rich's progress takes a lock

            return callback

        start = time.perf_counter()
        for i in range(args.num):
            key = f"key-{i % args.keys}" if args.keys else None
            producer.produce(args.topic, value, key=key, on_delivery=delivered(time.perf_counter()))
        producer.flush()
        elapsed = time.perf_counter() - start
    if failures:
        raise failures[0]
    return {
        **_rates(args.num, args.num * args.size, elapsed),
        **_percentiles("latency", latencies),
    }


def _consume(args: argparse.Namespace, api: dict[str, Any], err: IO[str]) -> dict[str, Any]:
    from tidelog.client import (  # noqa: PLC0415 - the client extra, on demand
        OFFSET_BEGINNING,
        Admin,
        Consumer,
        TopicPartition,
    )

    with Admin(**api) as admin:
        bounds = admin.describe_topic(args.topic).offsets
    total = sum(b.records for b in bounds)
    wanted = min(args.num, total) if args.num is not None else total
    fetches: list[float] = []
    seen = size = 0
    config = {**api, "enable.auto.commit": False}
    with progress(err, "consuming", wanted) as advance, Consumer(config) as consumer:
        consumer.assign([TopicPartition(args.topic, b.partition, OFFSET_BEGINNING) for b in bounds])
        start = time.perf_counter()
        while seen < wanted:
            asked = time.perf_counter()
            records = consumer.consume(min(1000, wanted - seen), 1.0)
            if records:
                fetches.append(time.perf_counter() - asked)
            seen += len(records)
            size += sum(len(r.value or b"") for r in records)
            advance(len(records))
        elapsed = time.perf_counter() - start
    return {**_rates(seen, size, elapsed), **_percentiles("fetch", fetches)}


def _rates(records: int, size: int, elapsed: float) -> dict[str, Any]:
    return {
        "records": records,
        "seconds": round(elapsed, 3),
        "records_per_s": round(records / elapsed) if elapsed else 0,
        "mb_per_s": round(size / elapsed / 1e6, 2) if elapsed else 0,
    }


def _percentiles(name: str, seconds: list[float]) -> dict[str, Any]:
    if not seconds:
        return {}
    ms = sorted(s * 1000 for s in seconds)
    cuts = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
    return {
        f"{name}_p50_ms": round(cuts[49], 1),
        f"{name}_p95_ms": round(cuts[94], 1),
        f"{name}_p99_ms": round(cuts[98], 1),
        f"{name}_max_ms": round(ms[-1], 1),
    }
