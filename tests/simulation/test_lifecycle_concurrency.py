"""Fetch while produce, roll, retention, compaction and garbage collection run concurrently:
never a wrong record, a duplicate or a gap; orphans and replaced objects are collected; a
compacted partition ends with exactly the latest value per key.

Runs over the in-memory stores (with delays that widen every race window) and against the
locked emulator (S3 and DynamoDB)."""

from __future__ import annotations

import random
import threading
import time

import pytest
from tests.support.log import tiny_log
from tests.support.resources import new_bucket, new_table

from tidelog.log.head import OffsetOutOfRangeError
from tidelog.log.lifecycle.collect import live_objects
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.memory import MemoryMetadataStore
from tidelog.storage.s3 import S3ObjectStore

SEED = random.randrange(2**32)


class SlowMetadata(MemoryMetadataStore):
    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = random.Random(seed)

    def get(self, pk, sk):
        time.sleep(self.rng.random() / 1000)
        return super().get(pk, sk)

    def transact(self, ops):
        time.sleep(self.rng.random() / 1000)
        super().transact(ops)


@pytest.fixture(params=["memory", "emulator"])
def stores(request, template):
    """The stores, and a grace period longer than any write-to-commit window on them (a roll
    under contention on the emulator takes a good part of a second; eight threads on two busy
    cores stretch the in-memory one past 50 ms, which once let a due entry be judged while its
    retention had yet to commit). Collection's design rests on it
    (tidelog.log.lifecycle.collect)."""
    if request.param == "memory":
        # Entries come due within the run, so collection runs while the readers read.
        return {"meta": SlowMetadata(SEED), "grace_ms": 500, "collects_during_run": True}
    dev_client = request.getfixturevalue("dev_client")
    ddb, s3 = dev_client("dynamodb"), dev_client("s3")
    return {
        "meta": DynamoMetadataStore(ddb, new_table(ddb, template)),
        "objects": S3ObjectStore(s3, new_bucket(s3)),
        "grace_ms": 2000,
        "collects_during_run": False,  # too few entries come due in the run to count on one
    }


def wall_clock(log):
    log.clock.now = int(time.time() * 1000)


def run_concurrently(log, jobs, seconds, produce):
    """``produce(i)`` in one thread, each housekeeping job list in its own, and two readers that
    walk the log from random offsets; returns what the readers saw."""
    stop = threading.Event()
    seen: list[tuple[int, bytes | None]] = []
    failures: list[str] = []
    rng = random.Random(SEED)
    lock = threading.Lock()

    def tick():
        while not stop.is_set():
            wall_clock(log)
            time.sleep(0.001)

    def producer():
        i = 0
        while not stop.is_set():
            produce(i)
            i += 1

    def keeper(names):
        while not stop.is_set():
            log.housekeep(*names)

    def reader():
        while not stop.is_set():
            start, end = log.reader.head(log.topic.topic_id, 0)
            if end == start:
                continue
            with lock:
                position = rng.randrange(start, end)
            try:
                expected_next = position
                while position < end:
                    data = log.reader.fetch(log.topic.topic_id, 0, position, rng.randrange(1, 3000))
                    records = [
                        r for b in data.batches for r in b.batch.records() if r.offset >= position
                    ]
                    for record in records:
                        if not log.compacting and record.offset != expected_next:
                            failures.append(
                                f"gap or duplicate: {record.offset} after {expected_next - 1}"
                            )
                        if record.offset < expected_next:
                            failures.append(f"offset {record.offset} went backwards")
                        expected_next = record.offset + 1
                        seen.append((record.offset, record.value))
                    if data.next_offset <= position:
                        failures.append(f"fetch at {position} made no progress")
                        return
                    position = data.next_offset
            except OffsetOutOfRangeError:
                continue  # retention moved the log start past us: start again, as a consumer does
            except Exception as exc:  # reported by the test, not lost in a thread
                failures.append(repr(exc))
                return

    threads = [threading.Thread(target=tick), threading.Thread(target=producer)]
    threads += [threading.Thread(target=keeper, args=(names,)) for names in jobs]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, f"seed {SEED}: {failures[:5]}"
    return seen


def test_fetch_during_roll_retention_and_collection(stores, tmp_path):
    configs = {"segment.bytes": 600, "segment.ms": 1, "retention.bytes": 3000}
    collects_during_run = stores.pop("collects_during_run")
    log = tiny_log(tmp_path, configs=configs, **stores)
    log.compacting = False
    wall_clock(log)
    values: dict[int, bytes] = {}

    def produce(i):
        value = b"value-%d" % i
        (offset,) = log.produce(0, [(None, value)])
        values[offset] = value

    deleted = []
    delete = log.objects.delete
    log.objects.delete = lambda key: (deleted.append(key), delete(key))[1]
    jobs = [("roll",), ("retention",), ("gc",), ("roll", "retention", "gc")]
    seen = run_concurrently(log, jobs, 3.0, produce)
    assert seen, f"seed {SEED}: the readers saw nothing"
    assert deleted or not collects_during_run, f"seed {SEED}: nothing collected during reads"
    for offset, value in seen:
        assert values[offset] == value, f"seed {SEED}: offset {offset}"
    start, end = log.reader.head(log.topic.topic_id, 0)
    assert end == len(values)
    assert [r.offset for r in log.fetch_all(0)] == list(range(start, end))
    # Everything still unreferenced after the grace period goes; everything referenced stays.
    log.clock.now = int(time.time() * 1000) + stores["grace_ms"] + 2000
    log.housekeep("gc")
    live = live_objects(log.meta, [log.topic])
    assert {info.key for info in log.objects.list("")} == live, f"seed {SEED}"
    assert [r.value for r in log.fetch_all(0)] == [values[o] for o in range(start, end)]


def test_compaction_during_fetch_keeps_the_latest_value_per_key(stores, tmp_path):
    configs = {"cleanup.policy": "compact", "segment.bytes": 400, "segment.ms": 1}
    stores.pop("collects_during_run")
    log = tiny_log(tmp_path, configs=configs, **stores)
    log.compacting = True
    wall_clock(log)
    values: dict[int, tuple[bytes, bytes]] = {}
    latest: dict[bytes, bytes] = {}

    def produce(i):
        key, value = b"k%d" % (i % 7), b"value-%d" % i
        (offset,) = log.produce(0, [(key, value)])
        values[offset] = (key, value)
        latest[key] = value

    jobs = [("roll",), ("compaction",), ("roll", "compaction", "gc")]
    seen = run_concurrently(log, jobs, 3.0, produce)
    for offset, value in seen:
        assert values[offset][1] == value, f"seed {SEED}: offset {offset}"
    time.sleep(0.01)
    wall_clock(log)
    log.housekeep("roll", "compaction")
    records = log.fetch_all(0)
    assert {r.key: r.value for r in records} == latest
    assert len(records) == len(latest), f"seed {SEED}: a superseded record survived"
