"""Exactly-once consume-transform-produce across three partitions with librdkafka's
transactions, its workers killed (SIGKILL) at random points and restarted: the output holds
each input record exactly once, and the group's offsets end at the input's end."""

from __future__ import annotations

import random
import subprocess
import sys
import time
import uuid
from collections import Counter

from confluent_kafka import Producer
from tests.functional.test_produce_api import call

from kafka import KafkaConsumer, TopicPartition

PARTITIONS = 3
PER_PARTITION = 200
KILLS = 12
SEED = random.randrange(2**32)


def start(dev, source, sink, partition, group):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.eos_worker",
            dev.bootstrap,
            source,
            sink,
            str(partition),
            group,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def committed(dev, group, source):
    observer = KafkaConsumer(bootstrap_servers=dev.bootstrap, group_id=group)
    try:
        return [observer.committed(TopicPartition(source, p)) for p in range(PARTITIONS)]
    finally:
        observer.close()


def test_killed_workers_never_lose_or_duplicate_a_record(dev):
    rng = random.Random(SEED)
    suffix = uuid.uuid4().hex[:8]
    source, sink, group = f"eos-in-{suffix}", f"eos-out-{suffix}", f"eos-{suffix}"
    for name in (source, sink):
        assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": PARTITIONS})[0] == 201
    feeder = Producer({"bootstrap.servers": dev.bootstrap, "linger.ms": 5})
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            feeder.produce(source, key=f"{p}-{i}".encode(), value=f"{p}-{i}".encode(), partition=p)
    assert feeder.flush(30) == 0
    workers = {p: start(dev, source, sink, p, group) for p in range(PARTITIONS)}
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.3, 1.2))
            victim = rng.randrange(PARTITIONS)
            workers[victim].kill()
            workers[victim].wait()
            workers[victim] = start(dev, source, sink, victim, group)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = committed(dev, group, source)
            if done == [PER_PARTITION] * PARTITIONS:
                break
            time.sleep(1)
        else:
            raise AssertionError(f"seed {SEED}: the group's offsets stopped at {done}")
    finally:
        for worker in workers.values():
            worker.kill()
            worker.wait()
    reader = KafkaConsumer(
        bootstrap_servers=dev.bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    reader.assign([TopicPartition(sink, p) for p in range(PARTITIONS)])
    out = Counter(m.value for m in reader)
    reader.close()
    wanted = Counter(f"{p}-{i}!".encode() for p in range(PARTITIONS) for i in range(PER_PARTITION))
    lost, doubled = wanted - out, {v: n for v, n in out.items() if n > 1}
    assert not lost, f"seed {SEED}: {len(lost)} records lost"
    assert not doubled, f"seed {SEED}: {len(doubled)} records duplicated"
    assert out == wanted
