"""Housekeeping follows activity: a run reads only the partitions that are due, an idle one
costs nothing, and no mark is ever lost (tidelog.log.due, Housekeeper)."""

from __future__ import annotations

from tests.support.counting import CountingStore
from tests.support.log import T0, tiny_log

from tidelog.log import configs, due, garbage, keys
from tidelog.log.entries import LogEntry
from tidelog.log.lifecycle import collect, roll
from tidelog.log.lifecycle.housekeeping import MAINTENANCE_JOBS, next_due_ms
from tidelog.storage.memory import MemoryMetadataStore

DAY = 86_400_000


def run(start, end, *, appended=None, segment=False, max_timestamp=T0, horizon=None):
    return LogEntry(
        base_offset=start,
        last_offset=end,
        object_key=f"o{start}",
        start=0,
        end=100,
        batches=1,
        max_timestamp=max_timestamp,
        index=f"i{start}" if segment else None,
        timeindex=f"t{start}" if segment else None,
        delete_horizon_ms=horizon,
        appended_ms=appended,
    )


def effective(**overrides):
    return configs.effective({k.replace("_", "."): str(v) for k, v in overrides.items()}, {})


# ------------------------------------------------------------------ next_due_ms (pure)


def test_an_empty_partition_is_never_due():
    assert next_due_ms([], effective(), now_ms=T0, settle_ms=0) is None


def test_an_unsettled_run_is_due_when_it_settles():
    entries = [run(0, 9, appended=T0)]
    assert next_due_ms(entries, effective(), now_ms=T0 + 10, settle_ms=1000) == T0 + 1000


def test_a_settled_partial_segment_is_due_at_segment_ms():
    entries = [run(0, 9, appended=T0), run(10, 19, appended=T0 + 5)]
    when = next_due_ms(entries, effective(segment_ms=DAY), now_ms=T0 + 5000, settle_ms=1000)
    assert when == T0 + DAY


def test_a_rollable_group_is_due_now():
    entries = [run(0, 9, appended=T0)]
    assert next_due_ms(entries, effective(segment_ms=1), now_ms=T0 + 10, settle_ms=0) == T0 + 10


def test_the_oldest_segment_is_due_when_it_leaves_retention():
    entries = [run(0, 9, segment=True, max_timestamp=T0), run(10, 19, segment=True)]
    when = next_due_ms(entries, effective(retention_ms=DAY), now_ms=T0, settle_ms=0)
    assert when == T0 + DAY + 1  # Kafka deletes once now - max timestamp > retention.ms


def test_retention_minus_one_and_compaction_only_schedule_nothing_for_segments():
    entries = [run(0, 9, segment=True)]
    assert next_due_ms(entries, effective(retention_ms=-1), now_ms=T0, settle_ms=0) is None
    compact = effective(cleanup_policy="compact")
    assert next_due_ms(entries, compact, now_ms=T0, settle_ms=0) is None


def test_a_tombstone_horizon_is_due_on_a_compacted_topic():
    entries = [run(0, 9, segment=True, horizon=T0 + 500), run(10, 19, segment=True)]
    compact = effective(cleanup_policy="compact")
    assert next_due_ms(entries, compact, now_ms=T0, settle_ms=0) == T0 + 500


def test_size_retention_left_undone_is_due_now():
    entries = [run(0, 9, segment=True), run(10, 19, segment=True)]
    when = next_due_ms(entries, effective(retention_bytes=100), now_ms=T0 + 7, settle_ms=0)
    assert when == T0 + 7


def test_small_runs_roll_in_segments_of_at_most_a_thousand_runs():
    runs = [run(i, i, appended=T0) for i in range(2500)]
    plan = roll.plan(runs, segment_bytes=2**30, segment_ms=DAY, now_ms=T0 + 1, settle_ms=0)
    assert [len(g) for g in plan.groups] == [roll.MAX_ACTIVE_RUNS, roll.MAX_ACTIVE_RUNS]
    assert plan.groups[1][0].base_offset == 1000  # the last 500 wait for more, or segment.ms
    when = next_due_ms(runs[2000:], effective(segment_ms=DAY), now_ms=T0 + 1, settle_ms=0)
    assert when == T0 + DAY


# ------------------------------------------------------------------ the housekeeper


def test_a_run_over_idle_partitions_reads_a_constant_number_of_items(tmp_path):
    counting = CountingStore(MemoryMetadataStore())
    log = tiny_log(tmp_path, partitions=1000, meta=counting, settle_ms=0)
    for p in range(0, 1000, 100):
        log.produce(p, [(b"k", b"v")])
    log.housekeep(*MAINTENANCE_JOBS)  # visits the ten written partitions, then they are idle
    counting.reads = 0
    report = log.housekeep(*MAINTENANCE_JOBS, "gc")
    assert report.partitions_visited == 0
    assert counting.reads == keys.DUE_SHARDS + 2  # the due shards, the queue, the orphans


def test_only_partitions_with_activity_are_visited(tmp_path):
    log = tiny_log(tmp_path, partitions=50, settle_ms=0)
    log.produce(7, [(b"k", b"v")])
    log.produce(9, [(b"k", b"v")])
    assert log.housekeep(*MAINTENANCE_JOBS).partitions_visited == 2
    assert log.housekeep(*MAINTENANCE_JOBS).partitions_visited == 0
    log.produce(9, [(b"k", b"w")])
    assert log.housekeep(*MAINTENANCE_JOBS).partitions_visited == 1


def test_retention_fires_on_schedule_without_new_activity(tmp_path):
    log = tiny_log(tmp_path, configs={"segment.ms": 1, "retention.ms": 1000}, settle_ms=0)
    log.produce(0, [(b"k", b"old")])
    log.clock.now += 1
    log.housekeep(*MAINTENANCE_JOBS)  # rolls; schedules retention at max timestamp + 1001
    log.produce(0, [(b"k", b"new")])  # a run after the segment, never deleted by retention
    log.housekeep(*MAINTENANCE_JOBS)
    log.clock.now = T0 + 1000
    assert log.housekeep(*MAINTENANCE_JOBS).segments_deleted == 0
    log.clock.now = T0 + 1001
    report = log.housekeep(*MAINTENANCE_JOBS)
    assert (report.partitions_visited, report.segments_deleted) == (1, 1)
    assert [r.value for r in log.fetch_all(0)] == [b"new"]


def test_a_config_change_makes_every_partition_due(tmp_path):
    log = tiny_log(tmp_path, partitions=3, configs={"segment.ms": 1}, settle_ms=0)
    for p in range(3):
        log.produce(p, [(b"k", b"v")])
    log.clock.now += 1
    assert log.housekeep(*MAINTENANCE_JOBS).segments_rolled == 3
    log.clock.now += 10_000
    assert log.housekeep(*MAINTENANCE_JOBS).partitions_visited == 0  # retention is 7 days
    log.topics.alter_configs("tiny", {"retention.ms": 5000})
    report = log.housekeep(*MAINTENANCE_JOBS)
    assert (report.partitions_visited, report.segments_deleted) == (3, 3)


def test_a_partial_run_leaves_the_marks_for_a_full_one(tmp_path):
    log = tiny_log(tmp_path, settle_ms=0)
    log.produce(0, [(b"k", b"v")])
    assert log.housekeep("roll").partitions_visited == 1
    assert log.housekeep("roll").partitions_visited == 1
    assert log.housekeep(*MAINTENANCE_JOBS).partitions_visited == 1
    assert log.housekeep(*MAINTENANCE_JOBS).partitions_visited == 0


def test_a_commit_during_a_pass_keeps_its_mark(tmp_path):
    log = tiny_log(tmp_path, settle_ms=0)
    log.produce(0, [(b"k", b"v")])
    (marks,) = due.due_marks(log.meta, log.clock.now).values()
    log.clock.now += 5
    log.produce(0, [(b"k", b"w")])  # rewrites the active mark while the pass holds the old one
    due.consume(log.meta, marks)
    assert len(due.due_marks(log.meta, log.clock.now)) == 1


def test_marks_of_a_deleted_topic_are_dropped(tmp_path):
    log = tiny_log(tmp_path)
    log.produce(0, [(b"k", b"v")])
    log.topics.delete("tiny")
    assert log.housekeep(*MAINTENANCE_JOBS).partitions_visited == 0
    assert due.due_marks(log.meta, log.clock.now) == {}


# ------------------------------------------------------------------ collection


def test_a_flush_object_another_partition_still_reads_is_kept(tmp_path):
    log = tiny_log(tmp_path, partitions=2, configs={"segment.ms": 1}, grace_ms=10, settle_ms=0)
    log.produce(0, [(b"k", b"zero")])
    (shared,) = {info.key for info in log.objects.list("data/")}
    log.produce(1, [(b"k", b"one")])
    garbage.enqueue(log.meta, [shared], log.clock.now)  # as if partition 1 had rolled it away
    assert collect.in_use(log.meta, log.objects, shared) is True
    log.clock.now += 100
    assert log.housekeep("gc").objects_deleted == 0
    assert shared in {info.key for info in log.objects.list("data/")}


def test_objects_in_use_cost_two_reads_of_their_partition_a_run_not_one_each(tmp_path):
    """Flush objects a partition still reads, many of them due at once (another partition's
    roll let go of them): the run reads that partition's index twice, once to judge and once
    to judge again what it keeps, whatever their number."""
    counting = CountingStore(MemoryMetadataStore())
    log = tiny_log(tmp_path, partitions=2, meta=counting, grace_ms=10, settle_ms=0)
    for i in range(20):
        log.produce(1, [(b"k", b"v%d" % i)])
    shared = sorted(info.key for info in log.objects.list("data/"))
    garbage.enqueue(log.meta, shared, log.clock.now)
    log.clock.now += 100
    counting.reads = 0
    kept = collect.collect(log.meta, log.objects, now_ms=log.clock.now, grace_ms=10)
    assert (kept.kept, kept.deleted) == (20, 0)
    assert counting.reads == 2 + 2  # the queue and the orphans; the partition, twice


def test_reconciliation_collects_the_data_of_a_deleted_topic(tmp_path):
    log = tiny_log(tmp_path, grace_ms=10)
    log.produce(0, [(b"k", b"v")])
    log.topics.delete("tiny")
    log.clock.now += 2000
    assert log.housekeep("gc").objects_deleted == 0
    assert log.housekeep("reconcile").objects_deleted == 1
    assert list(log.objects.list("data/")) == []
