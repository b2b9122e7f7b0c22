"""Roll, retention, compaction and garbage collection: the pure plans against Kafka's rules, and
the jobs over the in-memory stores."""

from __future__ import annotations

import dataclasses

import pytest
from tests.support.log import T0, housekeeping_configs, tiny_log

from tidelog.log import garbage, keys
from tidelog.log.entries import LogEntry, log_size, partition_entries, without_leftovers
from tidelog.log.head import sizes as head_sizes
from tidelog.log.lifecycle import compaction, retention, roll
from tidelog.log.lifecycle.housekeeping import next_due_ms
from tidelog.records import RecordBatch, RecordBatchBuilder
from tidelog.records.batch import control_record_bytes
from tidelog.storage import Delete, Put
from tidelog.txn.stable import AbortedTxn


def run(base, last, size=100, appended=T0, max_timestamp=T0):
    return LogEntry(
        base, last, f"data/flush/{base}", 0, size, 1, max_timestamp, appended_ms=appended
    )


def segment(base, last, size=100, max_timestamp=T0, appended=None):
    return LogEntry(
        base,
        last,
        f"segments/{base}.log",
        0,
        size,
        1,
        max_timestamp,
        index=f"segments/{base}.index",
        timeindex=f"segments/{base}.timeindex",
        appended_ms=appended,
    )


# -- roll ----------------------------------------------------------------------------------


def test_full_groups_roll_and_the_partial_one_waits_for_segment_ms():
    runs = [run(i, i, size=100, appended=T0 + i) for i in range(7)]
    plan = roll.plan(runs, segment_bytes=300, segment_ms=10_000, now_ms=T0 + 100, settle_ms=0)
    assert [[r.base_offset for r in g] for g in plan.groups] == [[0, 1, 2], [3, 4, 5]]
    plan = roll.plan(runs, segment_bytes=300, segment_ms=10_000, now_ms=T0 + 10_006, settle_ms=0)
    assert [[r.base_offset for r in g] for g in plan.groups] == [[0, 1, 2], [3, 4, 5], [6]]


def test_fresh_runs_settle_before_rolling():
    runs = [run(0, 0, appended=T0), run(1, 1, appended=T0 + 50)]
    plan = roll.plan(runs, segment_bytes=100, segment_ms=1, now_ms=T0 + 60, settle_ms=20)
    assert [[r.base_offset for r in g] for g in plan.groups] == [[0]]


def test_runs_inside_a_segment_are_leftovers():
    entries = [segment(0, 9), run(5, 9), run(10, 12)]
    plan = roll.plan(entries, segment_bytes=10**9, segment_ms=10**9, now_ms=T0, settle_ms=0)
    assert [e.base_offset for e in plan.leftovers] == [5]
    assert plan.groups == []


# -- retention -----------------------------------------------------------------------------


def test_retention_by_time_deletes_the_old_prefix_only():
    entries = [
        segment(0, 9, max_timestamp=T0),
        segment(10, 19, max_timestamp=T0 + 5_000),
        segment(20, 29, max_timestamp=T0),  # old again, but after one that stays
        run(30, 30, max_timestamp=T0),  # the active segment is never deleted
    ]
    doomed = retention.plan(entries, retention_ms=1_000, retention_bytes=-1, now_ms=T0 + 2_000)
    assert [e.base_offset for e in doomed] == [0]
    assert retention.plan(entries, retention_ms=-1, retention_bytes=-1, now_ms=T0 + 10**9) == []


def test_records_without_timestamps_are_retained_from_when_they_were_appended():
    """Kafka's segment falls back to its file's last modification when no record has a
    timestamp (-1); tidelog's to when its newest run was committed, and one that knows
    neither is never deleted by time."""
    entries = [
        segment(0, 9, max_timestamp=-1, appended=T0),
        segment(10, 19, max_timestamp=-1, appended=T0 + 5_000),
        segment(20, 29, max_timestamp=-1),  # rolled before segments kept their time
        run(30, 30),
    ]
    doomed = retention.plan(entries, retention_ms=1_000, retention_bytes=-1, now_ms=T0 + 2_000)
    assert [e.base_offset for e in doomed] == [0]
    later = retention.plan(entries, retention_ms=1_000, retention_bytes=-1, now_ms=T0 + 10**9)
    assert [e.base_offset for e in later] == [0, 10]
    configs = housekeeping_configs(segment_ms=str(10**12), retention_ms="1000")
    assert next_due_ms(entries, configs, now_ms=T0, settle_ms=0) == T0 + 1_001
    # Nothing to count retention from: only the active run's roll is due.
    assert next_due_ms(entries[2:], configs, now_ms=T0, settle_ms=0) == T0 + 10**12


def test_records_without_timestamps_roll_and_age_by_their_append_time(tmp_path):
    log = tiny_log(tmp_path, configs={"segment.bytes": 300, "segment.ms": 10**9})
    for i in range(20):
        log.produce(0, [(None, b"v%d" % i)], timestamp=-1)
        log.clock.now += 1
    log.housekeep("roll")
    rolled = [e for e in partition_entries(log.meta, log.topic.topic_id, 0) if e.is_segment]
    assert rolled
    assert all(e.max_timestamp == -1 and e.appended_ms is not None for e in rolled)
    log.topics.alter_configs("tiny", {"retention.ms": 1000})
    assert log.housekeep("retention").segments_deleted == 0  # appended just now: kept
    log.clock.now += 1000 + 30
    assert log.housekeep("retention").segments_deleted >= 1
    start, end = log.reader.head(log.topic.topic_id, 0)
    assert (start > 0, end) == (True, 20)


def test_retention_by_size_follows_kafkas_arithmetic():
    entries = [segment(0, 9, size=100), segment(10, 19, size=100), run(20, 20, size=50)]
    # size 250: excess over 120 is 130 -> the first segment (130 - 100 >= 0), not the second.
    plan = retention.plan(entries, retention_ms=-1, retention_bytes=120, now_ms=T0)
    assert [e.base_offset for e in plan] == [0]
    plan = retention.plan(entries, retention_ms=-1, retention_bytes=50, now_ms=T0)
    assert [e.base_offset for e in plan] == [0, 10]
    assert retention.plan(entries, retention_ms=-1, retention_bytes=0, now_ms=T0) == entries[:2]


def test_retention_moves_the_log_start_and_fetch_follows(tmp_path):
    log = tiny_log(tmp_path, configs={"segment.bytes": 300, "segment.ms": 10**9})
    for i in range(20):
        log.produce(0, [(None, b"v%d" % i)], timestamp=T0 + i)
    log.housekeep("roll")
    log.topics.alter_configs("tiny", {"retention.ms": 1000})
    log.clock.now += 1000 + 8  # segments whose newest record is older than 1 s go
    report = log.housekeep("retention")
    assert report.segments_deleted >= 1
    start, end = log.reader.head(log.topic.topic_id, 0)
    assert 0 < start <= 9
    assert end == 20
    assert [r.offset for r in log.fetch_all(0)] == list(range(start, 20))


# -- compaction ----------------------------------------------------------------------------


def built(base, records, **producer):
    builder = RecordBatchBuilder(base_offset=base, **producer)
    for delta, (key, value) in enumerate(records):
        builder.append(key, value, (), T0 + delta)
    return RecordBatch(builder.build())


def test_compaction_keeps_the_latest_per_key_and_the_batch_shape():
    first = built(
        0,
        [(b"a", b"1"), (b"b", b"1"), (b"a", b"2")],
        producer_id=7,
        producer_epoch=1,
        base_sequence=40,
    )
    second = built(3, [(b"b", b"2"), (None, b"keyless")])
    entries = [segment(0, 2), segment(3, 4)]
    rewrites = compaction.plan(entries, [[first], [second]], delete_retention_ms=10, now_ms=T0)
    kept = RecordBatch(rewrites[0].batches[0])
    assert [(r.offset, r.key, r.value) for r in kept.records()] == [(2, b"a", b"2")]
    # Offsets, the last offset delta and the producer's sequence range stay as they were.
    assert (kept.base_offset, kept.last_offset, kept.record_count) == (0, 2, 1)
    assert (kept.producer_id, kept.producer_epoch, kept.base_sequence) == (7, 1, 40)
    assert kept.last_sequence == first.last_sequence
    assert kept.is_valid()
    again = RecordBatch(rewrites[1].batches[0])
    assert [(r.offset, r.key) for r in again.records()] == [(3, b"b")]
    assert again.last_offset == 4
    assert [r.removed for r in rewrites] == [2, 1]


def test_an_unchanged_segment_is_left_alone():
    only = built(0, [(b"a", b"1"), (b"b", b"1")])
    (rewrite,) = compaction.plan([segment(0, 1)], [[only]], delete_retention_ms=10, now_ms=T0)
    assert not rewrite.changed
    assert rewrite.batches == [bytes(only.buffer)]


def test_tombstones_live_for_delete_retention_ms_after_the_first_clean(tmp_path):
    log = tiny_log(
        tmp_path,
        configs={
            "cleanup.policy": "compact",
            "segment.ms": 1,
            "delete.retention.ms": 1000,
        },
    )
    log.produce(0, [(b"k", b"v1"), (b"gone", b"x")])
    log.produce(0, [(b"gone", None), (b"k", b"v2")])
    log.clock.now += 10
    log.housekeep("roll", "compaction")
    assert [(r.key, r.value) for r in log.fetch_all(0)] == [(b"gone", None), (b"k", b"v2")]
    log.clock.now += 500
    log.housekeep("compaction")
    assert [(r.key, r.value) for r in log.fetch_all(0)] == [(b"gone", None), (b"k", b"v2")]
    log.clock.now += 600
    log.housekeep("compaction")
    assert [(r.offset, r.key, r.value) for r in log.fetch_all(0)] == [(3, b"k", b"v2")]
    assert log.reader.head(log.topic.topic_id, 0) == (0, 4)


def test_compaction_leaves_delete_topics_and_the_active_segment_alone(tmp_path):
    log = tiny_log(tmp_path, configs={"cleanup.policy": "compact"})
    for i in range(3):
        log.produce(0, [(b"k", b"v%d" % i)])
    log.housekeep("roll", "compaction")  # nothing rolled: segment.ms has not passed
    assert len(log.fetch_all(0)) == 3


# -- garbage collection --------------------------------------------------------------------


def keys_of(log, prefix=""):
    return {info.key for info in log.objects.list(prefix)}


def test_objects_go_only_after_the_grace_period_and_never_while_referenced(tmp_path):
    log = tiny_log(tmp_path, configs={"segment.ms": 1}, grace_ms=1000)
    for i in range(5):
        log.produce(0, [(None, b"v%d" % i)])
    flushes = keys_of(log, "data/")
    log.clock.now += 10
    log.housekeep("roll")
    assert log.housekeep("gc").objects_deleted == 0  # unreferenced, but within the grace
    assert keys_of(log, "data/") == flushes
    log.clock.now += 1000
    assert log.housekeep("gc").objects_deleted == len(flushes)
    assert keys_of(log, "data/") == set()
    live = {k for e in partition_entries(log.meta, log.topic.topic_id, 0) for k in e.objects}
    assert keys_of(log) == live
    assert [r.value for r in log.fetch_all(0)] == [b"v%d" % i for i in range(5)]


def test_unrecorded_orphans_are_reconciled_after_the_grace(tmp_path):
    log = tiny_log(tmp_path, grace_ms=1000)
    log.produce(0, [(None, b"kept")])
    log.objects.put("data/flush/2026010100/orphan", b"never committed")
    log.housekeep("reconcile")
    assert "data/flush/2026010100/orphan" in keys_of(log)
    log.clock.now += 1000  # the grace, but not S3's one-second resolution of LastModified
    log.housekeep("reconcile")
    assert "data/flush/2026010100/orphan" in keys_of(log)
    log.clock.now += 1000
    assert log.housekeep("gc").objects_deleted == 0  # nothing recorded it: only reconciliation
    assert log.housekeep("reconcile").objects_deleted == 1
    assert "data/flush/2026010100/orphan" not in keys_of(log)
    assert [r.value for r in log.fetch_all(0)] == [b"kept"]


def test_a_queued_object_still_in_use_is_kept(tmp_path):
    log = tiny_log(tmp_path, grace_ms=10)
    log.produce(0, [(None, b"kept")])
    (live,) = keys_of(log, "data/")
    garbage.enqueue(log.meta, [live], log.clock.now)  # a job that enqueued, then lost its race
    garbage.record_orphan(log.meta, live, log.clock.now - 100)
    log.clock.now += 100
    assert log.housekeep("gc").objects_deleted == 0
    assert keys_of(log, "data/") == {live}
    assert list(log.meta.query(garbage.GC_PK)) == []


# -- size (DescribeLogDirs' partition size) ------------------------------------------------


def test_the_size_counts_live_entries_and_a_half_done_rolls_leftovers_once():
    entries = [segment(0, 9, size=400), run(5, 9, size=150), run(10, 12, size=60)]
    assert log_size(entries) == 460
    assert log_size([]) == 0


def stored_bytes(log, partition):
    """What the partition's batches occupy where they lie: a differential oracle."""
    total = 0
    for entry in without_leftovers(partition_entries(log.meta, log.topic.topic_id, partition)):
        data = log.objects.get(entry.object_key)
        total += len(data[entry.start : entry.end])
    return total


def sizes(log):
    """Each partition's size as DescribeLogDirs reads it: from the heads."""
    wanted = [(log.topic.topic_id, p) for p in range(log.topic.partitions)]
    return {p: size for (_, p), size in head_sizes(log.meta, wanted).items()}


def compacting_log(tmp_path, partitions=1):
    log = tiny_log(
        tmp_path,
        partitions=partitions,
        configs={"segment.bytes": 300, "segment.ms": 10**9, "cleanup.policy": "compact,delete"},
    )
    for i in range(20):  # the first six keys unique: compaction leaves the old segments bytes
        key = b"u%d" % i if i < 6 else b"k%d" % (i % 2)
        log.produce(0, [(key, b"v%d" % i)], timestamp=T0 + i)
    return log


def test_the_size_follows_produce_roll_delete_records_retention_and_compaction(tmp_path):
    log = compacting_log(tmp_path, partitions=2)
    produced = sizes(log)
    assert produced[1] == 0
    assert produced[0] == stored_bytes(log, 0) > 0
    log.housekeep("roll")
    assert sizes(log) == produced  # rolling moves bytes, it does not change them
    log.housekeep("compaction")
    compacted = sizes(log)[0]
    assert compacted == stored_bytes(log, 0) < produced[0]
    first = partition_entries(log.meta, log.topic.topic_id, 0)[0]
    retention.delete_records(log.meta, log.topic, 0, first.last_offset + 1, now_ms=log.clock.now)
    assert sizes(log)[0] == compacted  # as Kafka: counted until retention deletes the segment
    assert log.housekeep("retention").segments_deleted == 1
    deleted = sizes(log)[0]
    assert deleted == stored_bytes(log, 0) == compacted - first.size
    log.topics.alter_configs("tiny", {"retention.ms": 1000})
    log.clock.now += 1000 + 8
    assert log.housekeep("retention").segments_deleted >= 1
    assert sizes(log)[0] == stored_bytes(log, 0) < deleted


def _racing_commit(log, writes_of_the_job):
    """Make a commit land between the job's read of the head and its transaction."""
    original = log.meta.transact
    raced = []

    def transact(writes):
        if not raced and writes_of_the_job(writes):
            raced.append(True)
            log.produce(0, [(b"racer", b"r" * 50)], timestamp=T0 + 100)
        return original(writes)

    log.meta.transact = transact
    return raced


@pytest.mark.parametrize("job", ["compaction", "retention"])
def test_a_commit_racing_a_job_keeps_both_their_sizes(tmp_path, job):
    log = compacting_log(tmp_path)
    log.housekeep("roll")
    log.topics.alter_configs("tiny", {"retention.ms": 1000})
    log.clock.now += 1000 + 8 if job == "retention" else 0
    kind = Put if job == "compaction" else Delete
    raced = _racing_commit(
        log,
        lambda writes: any(isinstance(w, kind) and w.key[1].startswith("idx#") for w in writes),
    )
    log.housekeep(job)
    assert raced
    assert sizes(log)[0] == stored_bytes(log, 0)
    assert log.reader.head(log.topic.topic_id, 0)[1] == 21  # the racer's commit stands
    # The writer planned its next commit from the head it last wrote: stale in size only.
    log.produce(0, [(b"after", b"a")], timestamp=T0 + 200)
    assert sizes(log)[0] == stored_bytes(log, 0)


def test_a_head_from_before_sizes_were_kept_is_sized_by_its_index(tmp_path):
    log = compacting_log(tmp_path)
    pk = keys.log_pk(log.topic.topic_id, 0)
    head = log.meta.get(pk, keys.HEAD_SK)
    del head["size"]
    log.meta.write(Put(head))
    log.produce(0, [(b"k0", b"later")], timestamp=T0 + 50)
    log.housekeep("roll", "compaction")
    assert "size" not in log.meta.get(pk, keys.HEAD_SK)  # never guessed
    assert sizes(log)[0] == stored_bytes(log, 0) > 0


def marker(base, producer_id, kind):
    builder = RecordBatchBuilder(
        base_offset=base,
        producer_id=producer_id,
        producer_epoch=0,
        is_transactional=True,
        is_control_batch=True,
    )
    builder.append(*control_record_bytes(kind, 0), (), T0)
    return RecordBatch(builder.build())


def test_compaction_drops_aborted_transactions_and_keeps_markers_as_kafka_does():
    txn = {"producer_epoch": 0, "base_sequence": 0, "is_transactional": True}
    committed = built(0, [(b"k", b"committed")], producer_id=1, **txn)  # offset 0, marker at 2
    aborted = built(1, [(b"k", b"aborted")], producer_id=2, **txn)  # offset 1, marker at 3
    batches = [committed, aborted, marker(2, 1, "COMMIT"), marker(3, 2, "ABORT")]
    aborted_txns = [AbortedTxn(1, 3, 2, last_stable_offset=4)]
    (first,) = compaction.plan(
        [segment(0, 3)], [batches], delete_retention_ms=10, now_ms=T0, aborted=aborted_txns
    )
    kept = [RecordBatch(b) for b in first.batches]
    # The aborted record is gone and never shadowed the committed one; both markers stay, the
    # ABORT one for delete.retention.ms (nothing of its transaction is left before it).
    assert [(b.base_offset, b.is_control_batch) for b in kept] == [(0, False), (2, True), (3, True)]
    assert [r.value for r in kept[0].records()] == [b"committed"]
    assert (first.removed, first.delete_horizon_ms) == (1, T0 + 10)
    later = dataclasses.replace(segment(0, 3), delete_horizon_ms=T0 + 10)
    (second,) = compaction.plan(
        [later], [kept], delete_retention_ms=10, now_ms=T0 + 11, aborted=aborted_txns
    )
    # Past the horizon: the ABORT marker goes; the COMMIT marker stays while its data does.
    assert [RecordBatch(b).base_offset for b in second.batches] == [0, 2]
