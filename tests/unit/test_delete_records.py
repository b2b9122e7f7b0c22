"""Kafka's DeleteRecords over the log: the log start offset moves at once and durably, fetch and
ListOffsets see it, and housekeeping then drops the segments it passed (UnifiedLog's
deleteLogStartOffsetBreachedSegments)."""

from __future__ import annotations

import pytest
from tests.support.log import T0, housekeeping_configs, tiny_log

from tidelog.errors import ConflictError
from tidelog.log.entries import LogEntry, partition_entries
from tidelog.log.head import OffsetOutOfRangeError
from tidelog.log.lifecycle import retention
from tidelog.log.lifecycle.housekeeping import next_due_ms
from tidelog.log.read.serve import list_offset
from tidelog.storage import ConditionFailedError


def segment(base: int, last: int) -> LogEntry:
    return LogEntry(
        base,
        last,
        f"segments/{base}.log",
        0,
        100,
        1,
        T0,
        index=f"segments/{base}.index",
        timeindex=f"segments/{base}.timeindex",
    )


def test_the_plan_drops_segments_wholly_below_the_log_start_and_no_other():
    entries = [segment(0, 9), segment(10, 19), segment(20, 29)]
    plan = retention.plan(
        entries, retention_ms=-1, retention_bytes=-1, now_ms=T0, log_start_offset=15
    )
    assert plan == entries[:1]  # 10..19 holds 15..19, still readable
    plan = retention.plan(
        entries, retention_ms=-1, retention_bytes=-1, now_ms=T0, log_start_offset=20
    )
    assert plan == entries[:2]
    assert retention.plan(entries, retention_ms=-1, retention_bytes=-1, now_ms=T0) == []


def _log(tmp_path, **configs):
    log = tiny_log(tmp_path, configs={"segment.bytes": 200, "segment.ms": 10**9, **configs})
    for i in range(10):
        log.produce(0, [(None, f"v{i}".encode() * 10)])
    return log


def _delete(log, offset):
    return retention.delete_records(log.meta, log.topic, 0, offset, now_ms=log.clock.now)


def test_the_log_start_moves_and_reads_below_it_are_out_of_range(tmp_path):
    log = _log(tmp_path)
    assert _delete(log, 4) == 4
    assert log.reader.head(log.topic.topic_id, 0) == (4, 10)
    with pytest.raises(OffsetOutOfRangeError):
        log.reader.fetch(log.topic.topic_id, 0, 3, 1 << 20)
    assert [r.value for r in log.fetch_all(0)] == [f"v{i}".encode() * 10 for i in range(4, 10)]
    assert list_offset(log.reader, log.topic, 0, "earliest") == (4, -1)


def test_minus_one_means_the_high_watermark_and_an_earlier_offset_changes_nothing(tmp_path):
    log = _log(tmp_path)
    assert _delete(log, 6) == 6
    assert _delete(log, 2) == 6  # below the start: Kafka answers the current low watermark
    assert _delete(log, retention.HIGH_WATERMARK) == 10
    assert log.reader.head(log.topic.topic_id, 0) == (10, 10)
    assert log.fetch_all(0) == []
    assert log.produce(0, [(None, b"after")]) == [10]  # the log goes on from its end


@pytest.mark.parametrize("offset", [11, -2])
def test_an_offset_beyond_the_high_watermark_or_negative_is_out_of_range(tmp_path, offset):
    log = _log(tmp_path)
    with pytest.raises(OffsetOutOfRangeError):
        _delete(log, offset)
    assert log.reader.head(log.topic.topic_id, 0) == (0, 10)


def test_a_compacted_topic_refuses_it_as_kafka_does(tmp_path):
    log = _log(tmp_path, **{"cleanup.policy": "compact"})
    with pytest.raises(retention.PolicyViolationError) as refused:
        _delete(log, 3)
    assert refused.value.kafka_error.name == "POLICY_VIOLATION"
    assert log.reader.head(log.topic.topic_id, 0) == (0, 10)


def test_housekeeping_then_drops_the_segments_it_passed_and_keeps_the_start(tmp_path):
    log = _log(tmp_path)
    log.housekeep("roll")
    segments = [e for e in partition_entries(log.meta, log.topic.topic_id, 0) if e.is_segment]
    assert len(segments) > 2
    start = segments[1].base_offset + 1  # inside the second segment
    _delete(log, start)
    log.housekeep()
    left = partition_entries(log.meta, log.topic.topic_id, 0)
    assert left[0].base_offset == segments[1].base_offset  # the one holding the start stays
    assert log.reader.head(log.topic.topic_id, 0) == (start, 10)  # not moved back to 5
    assert [r.offset for r in log.fetch_all(0)] == list(range(start, 10))


def test_the_partition_is_due_at_once_and_stays_due_while_segments_lie_below_the_start():
    entries = [segment(0, 9), segment(10, 19)]
    configs = housekeeping_configs()
    assert next_due_ms(entries, configs, now_ms=T0, settle_ms=0, log_start_offset=12) == T0
    assert next_due_ms(entries, configs, now_ms=T0, settle_ms=0, log_start_offset=5) is None


def test_a_commit_racing_it_makes_it_read_the_head_again(tmp_path):
    """The head is compare-and-set: a commit between the read and the write is not undone."""
    log = _log(tmp_path)
    store = log.meta
    original_transact = store.transact
    raced = []

    def transact(writes):
        if not raced:
            raced.append(True)
            log.produce(0, [(None, b"racing")])  # moves the high watermark first
        return original_transact(writes)

    store.transact = transact  # type: ignore[method-assign]
    assert _delete(log, retention.HIGH_WATERMARK) == 11
    assert log.reader.head(log.topic.topic_id, 0) == (11, 11)


def test_a_head_that_never_settles_is_a_conflict_and_changes_nothing(tmp_path):
    log = _log(tmp_path)

    def always_moved(writes):
        raise ConditionFailedError("a commit got there first")

    log.meta.transact = always_moved  # type: ignore[method-assign]
    with pytest.raises(ConflictError):
        _delete(log, 5)
    assert log.reader.head(log.topic.topic_id, 0) == (0, 10)


def test_many_partitions_at_once_each_answer_for_themselves_in_order(tmp_path):
    log = tiny_log(tmp_path, partitions=3)
    for partition in range(3):
        log.produce(partition, [(None, b"v")] * 4)
    outcomes = retention.delete_records_many(
        log.meta,
        [(log.topic, 0, 2), (log.topic, 7, 1), (log.topic, 1, 9), (log.topic, 2, -1)],
        now_ms=log.clock.now,
    )
    assert outcomes[0] == 2
    assert outcomes[1].kafka_error.name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert outcomes[2].kafka_error.name == "OFFSET_OUT_OF_RANGE"
    assert outcomes[3] == 4
    assert [log.reader.head(log.topic.topic_id, p)[0] for p in range(3)] == [2, 0, 4]
