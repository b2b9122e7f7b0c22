"""The delayed deletion queue (tidelog.log.garbage): a job hands over many objects in one item,
the same set in the same item, and the collector deletes each object once, whoever queued it
and however many times."""

from __future__ import annotations

import pytest
from tests.support.counting import CountingObjects
from tests.support.log import tiny_log

from tidelog.log import flushobject, garbage, keys
from tidelog.log.entries import partition_entries
from tidelog.log.lifecycle import collect
from tidelog.storage import Delete, Put, StorageUnavailableError
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


def test_the_collector_reads_an_objects_footer_not_its_batches(tmp_path):
    counting = CountingObjects(MemoryObjectStore(lambda: 0))
    log = tiny_log(tmp_path, objects=counting, grace_ms=10)
    tid = log.topic.topic_id
    big = flushobject.encode({(tid, 0): [b"x" * 2**20]})[0]  # a footer of one partition
    wide = flushobject.encode({(tid, p): [b"y"] for p in range(2000)})[0]  # one of 2,000
    assert len(wide) - 2000 > collect.FOOTER_READ
    for name, body in (("data/flush/2026010100/big", big), ("data/flush/2026010100/wide", wide)):
        counting.put(name, body)
        garbage.enqueue(log.meta, [name], 1)
    assert collect.collect(log.meta, counting, now_ms=100, grace_ms=10).deleted == 2
    read = {(key.rsplit("/", 1)[1], -start) for key, start, _ in counting.gets}
    wide_tail = flushobject.tail_size(wide)
    assert read == {
        ("big", collect.FOOTER_READ),
        ("wide", collect.FOOTER_READ),
        ("wide", wide_tail),
    }


def flush_objects(log, objects, count: int) -> list[str]:
    """``count`` flush objects of partition 0 that nothing points at, each queued on its own."""
    names = [f"data/flush/2026010100/o{i:03d}" for i in range(count)]
    for name in names:
        objects.put(name, a_flush_object(log))
        garbage.enqueue(log.meta, [name], 1)
    return names


def test_the_collector_keeps_at_once_footer_reads_and_deletes_out(tmp_path):
    counting = CountingObjects(MemoryObjectStore(lambda: 0))
    log = tiny_log(tmp_path, objects=counting, grace_ms=10)
    flush_objects(log, counting, 12)
    counting.meet(4)
    assert collect.collect(log.meta, counting, now_ms=100, grace_ms=10, at_once=4).deleted == 12
    assert counting.most_in_flight == 4
    assert flush_keys(log) == set()


def test_a_run_cut_short_keeps_the_batches_it_finished(tmp_path, monkeypatch):
    monkeypatch.setattr(collect, "BATCH", 5)
    objects = MemoryObjectStore(lambda: 0)
    log = tiny_log(tmp_path, objects=objects, grace_ms=10)
    names = flush_objects(log, objects, 12)
    inner_delete = objects.delete

    def delete_until_the_eighth(key: str) -> None:
        if key == names[7]:
            raise StorageUnavailableError("the run ends here")
        inner_delete(key)

    monkeypatch.setattr(objects, "delete", delete_until_the_eighth)
    with pytest.raises(StorageUnavailableError):
        collect.collect(log.meta, objects, now_ms=100, grace_ms=10, at_once=1)
    left = {k for item in log.meta.query(garbage.GC_PK) for k in garbage.queued(item)}
    assert len(left) == 7  # the first batch's five entries went with their objects
    assert names[7] in left
    assert flush_keys(log) <= left
    monkeypatch.setattr(objects, "delete", inner_delete)
    stored = flush_keys(log)
    assert collect.collect(log.meta, objects, now_ms=100, grace_ms=10).deleted == len(stored)
    assert flush_keys(log) == set()
    assert list(log.meta.query(garbage.GC_PK)) == []


def test_an_object_let_go_of_during_the_run_is_deleted_in_the_same_run(tmp_path, monkeypatch):
    """Its partition's first read still pointed at it; a roll lands before the run ends. The
    second read, once every object is judged, finds it free."""
    monkeypatch.setattr(collect, "BATCH", 1)
    objects = MemoryObjectStore(lambda: 0)
    log = tiny_log(tmp_path, objects=objects, grace_ms=10)
    (unused,) = flush_objects(log, objects, 1)
    log.produce(0, [(b"k", b"v")])
    (entry,) = partition_entries(log.meta, log.topic.topic_id, 0)
    garbage.enqueue(log.meta, [entry.object_key], 2)
    inner_delete = objects.delete

    def delete_then_roll(key: str) -> None:
        inner_delete(key)
        if key == unused:  # as a roll would: the run's first read of partition 0 is now stale
            log.meta.write(Delete(keys.log_pk(log.topic.topic_id, 0), keys.index_sk(0)))

    monkeypatch.setattr(objects, "delete", delete_then_roll)
    result = collect.collect(log.meta, objects, now_ms=100, grace_ms=10, at_once=1)
    assert (result.deleted, result.kept) == (2, 0)
    assert flush_keys(log) == set()
    assert list(log.meta.query(garbage.GC_PK)) == []
