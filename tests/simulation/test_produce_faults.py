"""Seeded fault injection through the store ports, and crashes at every step of the write path.

An idempotent producer sends batches and retries each until it is acknowledged, restarting the
writer (and recovering its staging area) after every crash. Whatever the faults:
no acknowledged record is lost, none is duplicated, nothing uncommitted is visible, offsets are
contiguous, and every object no index item points to was recorded as an orphan.
"""

from __future__ import annotations

import random

import pytest
from tests.support import seeds
from tests.support.objects import object_sets

from tidelog.errors import TidelogError
from tidelog.log.head import high_watermark
from tidelog.log.read.reader import committed_records
from tidelog.log.topics import Topics
from tidelog.log.write.staging import StagingArea
from tidelog.log.write.validate import validate_batches
from tidelog.log.write.writer import AppendRequest, Writer, recover_staging
from tidelog.records import RecordBatchBuilder
from tidelog.storage.faults import FaultPlan, FaultyMetadataStore, FaultyObjectStore
from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore

T0 = 1_700_000_000_000


class Crash(BaseException):
    """The process dies here (nothing catches a BaseException on the write path)."""


class CrashingObjects(FaultyObjectStore):
    def __init__(self, inner, plan, rng, crash):
        super().__init__(inner, plan)
        self.rng, self.crash = rng, crash

    def put(self, key, body, *, if_absent=True):
        if self.rng.random() < self.crash:
            raise Crash("before the PUT (after staging)")
        super().put(key, body, if_absent=if_absent)
        if self.rng.random() < self.crash:
            raise Crash("after the PUT")


class CrashingMetadata(FaultyMetadataStore):
    def __init__(self, inner, plan, rng, crash):
        super().__init__(inner, plan)
        self.rng, self.crash = rng, crash

    def transact(self, ops):
        super().transact(ops)
        if self.rng.random() < self.crash:
            raise Crash("after the commit")


def batch(producer_id, sequence, count):
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=0, base_sequence=sequence)
    for i in range(count):
        builder.append(None, f"p{producer_id}-s{sequence + i}".encode(), (), T0)
    return builder.build()


def writers(meta, faulty_meta, faulty_objects, staging_dir, rng):
    """A new writer each call, as a restarted process makes one: its staging area recovered
    first."""

    def new_writer():
        recover_staging(staging_dir, meta, T0)
        return Writer(
            faulty_meta,
            faulty_objects,
            StagingArea(staging_dir),
            clock_ms=lambda: T0,
            sleep=lambda s: None,
            jitter=rng.random,
        )

    return new_writer


@pytest.mark.parametrize("seed", seeds.draw("produce faults", 6))
def test_faults_and_crashes_lose_nothing_and_duplicate_nothing(seed, tmp_path):
    rng = random.Random(seed)
    meta, objects = MemoryMetadataStore(), MemoryObjectStore(lambda: T0)
    plan = FaultPlan(seed, before=0.08, after=0.08, resent=0.05)
    faulty_meta = CrashingMetadata(meta, plan, rng, crash=0.05)
    faulty_objects = CrashingObjects(objects, plan, rng, crash=0.05)
    topic = Topics(meta, lambda: T0).create("faulty", 2, {})
    staging_dir = tmp_path / "staging"
    new_writer = writers(meta, faulty_meta, faulty_objects, staging_dir, rng)
    writer = new_writer()
    acknowledged = {}  # (partition, offset) -> value
    crashes = 0
    for producer_id in (11, 12):
        sequence = {0: 0, 1: 0}
        for _ in range(25):
            partition = rng.randrange(2)
            count = rng.randint(1, 3)
            body = batch(producer_id, sequence[partition], count)
            request = AppendRequest(
                topic,
                partition,
                validate_batches(body, max_message_bytes=10**6, log_append_time=None),
            )
            for _attempt in range(100):
                try:
                    (result,) = writer.append([request])
                    if rng.random() < 0.05:
                        raise Crash("before the response")
                except Crash:
                    crashes += 1
                    writer = new_writer()
                    continue
                if result.error is None:
                    break
                assert result.error.retriable, f"seed {seed}: {result.error}"
            else:
                raise AssertionError(f"seed {seed}: never acknowledged")
            for i in range(count):
                acknowledged[(partition, result.base_offset + i)] = (
                    f"p{producer_id}-s{sequence[partition] + i}".encode()
                )
            sequence[partition] += count
    recover_staging(staging_dir, meta, T0)

    for partition in range(2):
        records = list(committed_records(meta, objects, topic.topic_id, partition))
        assert [r.offset for r in records] == list(range(len(records))), f"seed {seed}"
        assert high_watermark(meta, topic.topic_id, partition)[1] == len(records)
        values = [r.value for r in records]
        assert len(values) == len(set(values)), f"seed {seed}: a duplicate"
        for record in records:
            assert acknowledged[(partition, record.offset)] == record.value, f"seed {seed}"
    assert len(acknowledged) == sum(high_watermark(meta, topic.topic_id, p)[1] for p in range(2))

    referenced, orphans, stored = object_sets(meta, objects, topic.topic_id, 2)
    assert stored - referenced <= orphans, f"seed {seed}: unrecorded orphans"
    assert plan.injected > 0 or crashes > 0, f"seed {seed}: nothing was injected"


def test_a_retriable_error_is_never_a_4xx():
    error = TidelogError("x", kafka_error="KAFKA_STORAGE_ERROR")
    assert error.retriable


WIDE = 120  # partitions in one flush: 3 items each, so its commit spans several transactions


@pytest.mark.parametrize("seed", seeds.draw("wide flush faults", 3))
def test_a_flush_wider_than_a_transaction_commits_each_partition_once(seed, tmp_path):
    """One flush for 120 partitions needs several DynamoDB transactions (100 items each at
    most): under faults and crashes between them, each partition's records are still
    committed exactly once, in order, and never lost once acknowledged."""
    rng = random.Random(seed)
    meta, objects = MemoryMetadataStore(), MemoryObjectStore(lambda: T0)
    plan = FaultPlan(seed, before=0.05, after=0.05, resent=0.03)
    transactions = []  # the items of each transaction tried

    class Counting(CrashingMetadata):
        def transact(self, ops):
            transactions.append(len(ops))
            super().transact(ops)

    counting = Counting(meta, plan, rng, crash=0.03)
    faulty_objects = CrashingObjects(objects, plan, rng, crash=0.03)
    topic = Topics(meta, lambda: T0).create("wide", WIDE, {})
    staging_dir = tmp_path / "staging"
    new_writer = writers(meta, counting, faulty_objects, staging_dir, rng)
    writer = new_writer()
    acknowledged = {}  # (partition, offset) -> value
    sequence = dict.fromkeys(range(WIDE), 0)
    for _ in range(6):
        counts = {p: rng.randint(1, 2) for p in range(WIDE)}
        waiting = set(range(WIDE))
        for _attempt in range(100):
            if not waiting:
                break
            order = sorted(waiting)
            requests = [
                AppendRequest(
                    topic,
                    p,
                    validate_batches(
                        batch(7, sequence[p], counts[p]),
                        max_message_bytes=10**6,
                        log_append_time=None,
                    ),
                )
                for p in order
            ]
            try:
                results = writer.append(requests)
            except Crash:
                writer = new_writer()
                continue
            for p, result in zip(order, results, strict=True):
                if result.error is not None:
                    assert result.error.retriable, f"seed {seed}: {result.error}"
                    continue
                for i in range(counts[p]):
                    value = f"p7-s{sequence[p] + i}".encode()
                    acknowledged[(p, result.base_offset + i)] = value
                sequence[p] += counts[p]
                waiting.discard(p)
        assert not waiting, f"seed {seed}: partitions never acknowledged: {sorted(waiting)}"
    recover_staging(staging_dir, meta, T0)

    assert max(transactions) <= 100
    assert len(transactions) > 6 * 3, f"seed {seed}: flushes were not split"
    for partition in range(WIDE):
        records = list(committed_records(meta, objects, topic.topic_id, partition))
        assert [r.offset for r in records] == list(range(len(records))), f"seed {seed}"
        values = [r.value for r in records]
        assert len(values) == len(set(values)), f"seed {seed}: a duplicate"
        for record in records:
            assert acknowledged[(partition, record.offset)] == record.value, f"seed {seed}"
    assert len(acknowledged) == sum(sequence.values())
