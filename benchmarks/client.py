"""The Python client's Producer and Consumer, each against a plain loop of raw HTTP requests
doing the same work.

Both run against one `tidelog dev` (in a process of its own, as a user runs it) and produce the
same records: 1 KiB values with keys over 6 partitions, batched to ``batch.size`` (64 KiB),
idempotent, lz4-compressed. The produce loop builds each batch with tidelog.records, numbers
it, and posts it with httpx2, one request at a time: the least any client must do. The consume
loop posts one multi-partition fetch after another for all six partitions, base64-decodes each
key and value and resumes from ``next_offset``; the Consumer reads the same topic, assigned
all six partitions from the start. Runs alternate, three each; medians are reported.
"""

from __future__ import annotations

import base64
import os
import statistics
import time
import uuid
from typing import Any

import httpx2
from tests.support import devserver

from benchmarks import client_soak
from benchmarks.report import Section
from tidelog.client import OFFSET_BEGINNING, Admin, Consumer, Producer, TopicPartition
from tidelog.partitioner import partition_for_key
from tidelog.records import RecordBatchBuilder

RECORDS = 20_000
VALUE_BYTES = 1024
PARTITIONS = 6
BATCH_BYTES = 65_536
RUNS = 3
SOAK_ROUNDS = 40


def run(progress: Any = print) -> Section:
    section = Section(
        "The Python client",
        f"{RECORDS:,} records of {VALUE_BYTES} bytes with keys, to {PARTITIONS} partitions, "
        f"idempotent, lz4, {BATCH_BYTES // 1024} KiB batches, against `tidelog dev`; the median "
        f"of {RUNS} alternating runs.",
        ("measurement", "raw HTTP loop", "tidelog.client", "ratio / target"),
    )
    server = devserver.start()
    try:
        value = os.urandom(VALUE_BYTES // 2).hex().encode()
        loops, clients = [], []
        for i in range(RUNS):
            loops.append(_raw_loop(server.api_url, _topic(server.api_url), value))
            written = _topic(server.api_url)
            clients.append(_producer(server.api_url, written, value))
            progress(f"    run {i + 1}: loop {loops[-1]:,.0f} records/s, client {clients[-1]:,.0f}")
        _raw_fetches(server.api_url, written)  # warms the read path for both
        fetch_loops, consumers = [], []
        for i in range(RUNS):
            fetch_loops.append(_raw_fetches(server.api_url, written))
            consumers.append(_consumer(server.api_url, written))
            progress(
                f"    consume run {i + 1}: loop {fetch_loops[-1]:,.0f} records/s, "
                f"client {consumers[-1]:,.0f}"
            )
        soaked = client_soak.soak(server.api_url, server.process.pid, SOAK_ROUNDS, progress)
    finally:
        server.stop()
    for name, baseline, measured in (
        ("produce records/s", loops, clients),
        ("consume records/s", fetch_loops, consumers),
    ):
        loop, client = statistics.median(baseline), statistics.median(measured)
        section.rows.append(
            (name, f"{loop:,.0f}", f"{client:,.0f}", f"{client / loop:.2f}x (target >= 0.9)")
        )
    section.notes.append(
        "The client sends each partition's batches one at a time and the partitions side by "
        "side; the loop sends every batch in turn."
    )
    section.notes.append(
        f"Soak (benchmarks/client_soak.py): a cooperative-sticky group of three Consumers, one "
        f"replaced every {client_soak.CHURN_S:.0f} s for {soaked['rounds']} rounds "
        f"({soaked['seconds']} s) while a Producer wrote {soaked['records']:,} records: "
        f"{soaked['twice']} processed twice, {soaked['missing']} missing; client RSS "
        f"{soaked['client_mb'][0]} -> {soaked['client_mb'][1]} MB (the check's own sets of "
        f"offsets included), `tidelog dev` {soaked['dev_mb'][0]} -> {soaked['dev_mb'][1]} MB, "
        f"median poll {soaked['poll_ms'][0]} -> {soaked['poll_ms'][1]} ms (a 200 ms poll)."
    )
    section.notes += [
        "Consume: the loop posts one multi-partition fetch after another for all six partitions "
        "(base64, each key and value decoded) and resumes each from `next_offset`; the Consumer, "
        "assigned the six partitions from the start, does the same work.",
    ]
    return section


def _topic(api: str) -> str:
    name = f"bench-client-{uuid.uuid4().hex[:8]}"
    with Admin(api) as admin:
        admin.create_topic(name, PARTITIONS)
    return name


def _producer(api: str, topic: str, value: bytes) -> float:
    config = {"url": api, "batch.size": BATCH_BYTES, "compression.type": "lz4", "linger.ms": 5}
    start = time.perf_counter()
    with Producer(config) as producer:
        for i in range(RECORDS):
            producer.produce(topic, value, key=f"key-{i}")
        producer.flush()
    return RECORDS / (time.perf_counter() - start)


def _raw_loop(api: str, topic: str, value: bytes) -> float:
    start = time.perf_counter()
    with httpx2.Client(base_url=api, timeout=30) as http:
        identity = http.post("/v1/producers").json()
        sequences = [0] * PARTITIONS
        pending: list[list[tuple[bytes, int]]] = [[] for _ in range(PARTITIONS)]
        sizes = [0] * PARTITIONS

        def send(partition: int) -> None:
            builder = RecordBatchBuilder(
                "lz4",
                producer_id=identity["producer_id"],
                producer_epoch=identity["producer_epoch"],
                base_sequence=sequences[partition],
            )
            for key, stamp in pending[partition]:
                builder.append(key, value, (), stamp)
            answer = http.post(
                f"/v1/topics/{topic}/partitions/{partition}/batches",
                content=builder.build(),
                headers={"Content-Type": "application/vnd.kafka.record-batch"},
            )
            answer.raise_for_status()
            sequences[partition] += len(pending[partition])
            pending[partition], sizes[partition] = [], 0

        for i in range(RECORDS):
            key = f"key-{i}".encode()
            partition = partition_for_key(key, PARTITIONS)
            pending[partition].append((key, time.time_ns() // 1_000_000))
            sizes[partition] += len(value) + len(key) + 21
            if sizes[partition] >= BATCH_BYTES:
                send(partition)
        for partition in range(PARTITIONS):
            if pending[partition]:
                send(partition)
    return RECORDS / (time.perf_counter() - start)


def _consumer(api: str, topic: str) -> float:
    config = {"url": api, "enable.auto.commit": False, "fetch.max.wait.ms": 100}
    start = time.perf_counter()
    seen = 0
    with Consumer(config) as consumer:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        while seen < RECORDS:
            seen += len(consumer.consume(1000, 5.0))
    return RECORDS / (time.perf_counter() - start)


def _raw_fetches(api: str, topic: str) -> float:
    start = time.perf_counter()
    positions = dict.fromkeys(range(PARTITIONS), 0)
    seen = 0
    with httpx2.Client(base_url=api, timeout=30) as http:
        while seen < RECORDS:
            body = {
                "partitions": [
                    {"topic": topic, "partition": p, "offset": o, "max_bytes": 1_048_576}
                    for p, o in positions.items()
                ],
                "max_wait_ms": 100,
                "max_bytes": 4 * 1_048_576,
                "encoding": "base64",
            }
            answer = http.post("/v1/fetch", json=body)
            answer.raise_for_status()
            for result in answer.json()["responses"]:
                for record in result["records"]:
                    base64.b64decode(record["key"])
                    base64.b64decode(record["value"])
                    seen += 1
                positions[result["partition"]] = result["next_offset"]
    return RECORDS / (time.perf_counter() - start)
