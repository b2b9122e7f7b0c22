"""The delayed deletion queue (tidelog.log.garbage): a job hands over many objects in one item,
the same set in the same item, and the collector deletes each object once, whoever queued it
and however many times."""

from __future__ import annotations

from tests.support.counting import CountingObjects
from tests.support.log import tiny_log

from tidelog.log import flushobject, garbage
from tidelog.log.lifecycle import collect
from tidelog.storage import Put
from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore


def flush_keys(log) -> set[str]:
    return {info.key for info in log.objects.list("data/")}


def a_flush_object(log) -> bytes:
    return flushobject.encode({(log.topic.topic_id, 0): [b"batch"]})[0]


def test_a_roll_hands_all_its_runs_over_in_one_item_and_they_go_after_the_grace(tmp_path):
    log = tiny_log(tmp_path, configs={"segment.ms": 1}, grace_ms=1000)
    for i in range(50):
        log.produce(0, [(None, b"v%d" % i)])
    flushes = flush_keys(log)
    log.clock.now += 10
    assert log.housekeep("roll").segments_rolled == 1
    (item,) = log.meta.query(garbage.GC_PK)
    assert sorted(garbage.queued(item)) == sorted(flushes)
    log.clock.now += 1000
    assert log.housekeep("gc").objects_deleted == 50
    assert flush_keys(log) == set()
    assert list(log.meta.query(garbage.GC_PK)) == []
    assert [r.value for r in log.fetch_all(0)] == [b"v%d" % i for i in range(50)]


def test_many_keys_are_split_within_an_items_bound_and_the_same_set_is_the_same_item():
    meta = MemoryMetadataStore()
    names = [f"segments/{i:04d}/" + "x" * 1000 for i in range(600)]  # 600 KB of keys
    garbage.enqueue(meta, names, 5)
    items = list(meta.query(garbage.GC_PK))
    assert len(items) == 3
    held = [garbage.queued(item) for item in items]
    assert all(sum(map(len, keys)) <= garbage.MAX_ITEM_KEY_BYTES for keys in held)
    assert sorted(k for keys in held for k in keys) == sorted(names)
    garbage.enqueue(meta, reversed(names + names[:10]), 5)  # a job that enqueues again
    assert list(meta.query(garbage.GC_PK)) == items


def test_an_item_queued_by_an_earlier_version_is_still_collected_and_waits(tmp_path):
    log = tiny_log(tmp_path, grace_ms=10)
    log.objects.put("data/flush/2026010100/old", a_flush_object(log))
    log.meta.write(
        Put(
            {
                "pk": garbage.GC_PK,
                "sk": "000000000000001#old",
                "object": "data/flush/2026010100/old",
            }
        )
    )
    log.clock.now += 10_000
    assert log.housekeep("reconcile").objects_deleted == 0  # waiting in the queue: not its own
    assert log.housekeep("gc").objects_deleted == 1
    assert flush_keys(log) == set()
    assert list(log.meta.query(garbage.GC_PK)) == []


def test_an_object_queued_by_every_partition_that_rolled_it_is_read_once(tmp_path):
    counting = CountingObjects(MemoryObjectStore(lambda: 0))
    log = tiny_log(tmp_path, objects=counting, grace_ms=10)
    counting.put("data/flush/2026010100/shared", a_flush_object(log))  # nothing points at it
    for due in (1, 2, 3):  # three partitions rolled it away, each at its own time
        garbage.enqueue(log.meta, ["data/flush/2026010100/shared"], due)
    result = collect.collect(log.meta, counting, now_ms=100, grace_ms=10)
    assert result.deleted == 1
    assert counting.gets_of("data/flush/2026010100/shared") == 1
    assert list(log.meta.query(garbage.GC_PK)) == []
