"""Planning a commit (pure): offsets, runs of stored bytes, idempotent producers (Kafka's
ProducerStateManagerTest rules)."""

from __future__ import annotations

import pytest

from tidelog.log.commit import OffsetMismatchError, PartitionAppend, plan
from tidelog.log.flushobject import Extent
from tidelog.log.producers import (
    BatchRecord,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    ProducerState,
    in_sequence,
)
from tidelog.log.topics import Topic
from tidelog.log.validate import ProducedBatch

TOPIC = Topic("t", "00000000-0000-0000-0000-000000000001", 1)


def produced(count, pid=-1, epoch=-1, seq=-1, size=100):
    last = seq + count - 1 if seq >= 0 else -1
    return ProducedBatch(b"x" * size, count, 0, pid, epoch, seq, last)


def append(*batches, expected=None, start=8):
    end = start + sum(len(b.data) for b in batches)
    return PartitionAppend(TOPIC, 0, batches, Extent(TOPIC.topic_id, 0, start, end), expected)


def test_offsets_follow_the_head_and_runs_cover_the_bytes():
    result = plan(append(produced(3), produced(2)), {"next_offset": 10, "log_start_offset": 0}, {})
    assert result.offsets == [(10, 12), (13, 14)]
    assert result.next_offset == 15
    (run,) = result.runs
    assert (run.base_offset, run.last_offset, run.start, run.end, run.batches) == (
        10,
        14,
        8,
        208,
        2,
    )


def test_an_empty_partition_starts_at_zero():
    assert plan(append(produced(1)), None, {}).offsets == [(0, 0)]


def test_conditional_append():
    head = {"next_offset": 7, "log_start_offset": 0}
    assert plan(append(produced(1), expected=7), head, {}).offsets == [(7, 7)]
    with pytest.raises(OffsetMismatchError) as failure:
        plan(append(produced(1), expected=6), head, {})
    assert (failure.value.http_status, failure.value.high_watermark) == (412, 7)


def test_a_retried_batch_keeps_its_offsets_and_splits_the_runs():
    state = ProducerState(5, 0, (BatchRecord(0, 2, 40, 42, 0),), version=3)
    result = plan(
        append(produced(2), produced(3, 5, 0, 0), produced(1, 5, 0, 3)),
        {"next_offset": 50, "log_start_offset": 0},
        {5: state},
    )
    assert result.offsets == [(50, 51), (40, 42), (52, 52)]
    # the retried batch's 100 bytes (108-208) stay out of every run
    assert [(r.base_offset, r.start, r.end) for r in result.runs] == [(50, 8, 108), (52, 208, 308)]
    old, new = result.states[5]
    assert old is state
    assert new.version == 4
    assert [b.first_sequence for b in new.batches] == [0, 3]


def test_sequences_must_continue():
    state = ProducerState(5, 0, (BatchRecord(0, 2, 0, 2, 0),))
    with pytest.raises(OutOfOrderSequenceError):
        plan(append(produced(1, 5, 0, 4)), {"next_offset": 3, "log_start_offset": 0}, {5: state})


def test_new_producers_and_new_epochs_start_at_zero():
    with pytest.raises(OutOfOrderSequenceError, match="expected 0"):
        plan(append(produced(1, 9, 0, 1)), None, {})
    state = ProducerState(5, 0, (BatchRecord(0, 2, 0, 2, 0),))
    result = plan(
        append(produced(1, 5, 1, 0)), {"next_offset": 3, "log_start_offset": 0}, {5: state}
    )
    assert result.states[5][1].epoch == 1
    with pytest.raises(OutOfOrderSequenceError):
        plan(append(produced(1, 5, 1, 3)), {"next_offset": 3, "log_start_offset": 0}, {5: state})


def test_an_old_epoch_is_fenced():
    state = ProducerState(5, 3, (BatchRecord(0, 0, 0, 0, 0),))
    with pytest.raises(InvalidProducerEpochError):
        plan(append(produced(1, 5, 2, 1)), {"next_offset": 1, "log_start_offset": 0}, {5: state})


def test_only_the_last_five_batches_are_kept():
    state = ProducerState(5, 0)
    for i in range(7):
        state = state.appended(0, BatchRecord(i, i, i, i, 0))
    assert [b.first_sequence for b in state.batches] == [2, 3, 4, 5, 6]
    assert state.duplicate_of(0, 1, 1) is None
    assert state.duplicate_of(0, 2, 2).base_offset == 2


def test_sequence_wraps_at_int_max():
    assert in_sequence(2**31 - 1, 0)
    assert in_sequence(4, 5)
    assert not in_sequence(4, 6)
