"""Planning a commit (pure): offsets, runs of stored bytes, idempotent producers (Kafka's
ProducerStateManagerTest rules)."""

from __future__ import annotations

import dataclasses

import pytest

from tidelog.log.flushobject import Extent
from tidelog.log.head import Head
from tidelog.log.topics import TOPICS_PK, Topic
from tidelog.log.write.commit import Committer
from tidelog.log.write.plan import OffsetMismatchError, PartitionAppend, WithdrawnError, plan
from tidelog.log.write.producers import (
    BatchRecord,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    ProducerState,
    SequenceGapError,
    in_sequence,
)
from tidelog.log.write.validate import ProducedBatch
from tidelog.storage import Put, StorageUnavailableError
from tidelog.storage.memory import MemoryMetadataStore

TOPIC = Topic("t", "00000000-0000-0000-0000-000000000001", 1)


def produced(count, pid=-1, epoch=-1, seq=-1, size=100):
    last = seq + count - 1 if seq >= 0 else -1
    return ProducedBatch(b"x" * size, count, 0, pid, epoch, seq, last)


def append(*batches, expected=None, start=8, requests=()):
    end = start + sum(len(b.data) for b in batches)
    extent = Extent(TOPIC.topic_id, 0, start, end)
    return PartitionAppend(TOPIC, 0, batches, extent, expected, requests)


def refused(result, request=0):
    """The error ``request`` of the append was refused with (it planned nothing)."""
    assert not result.runs
    return result.refused[request]


def test_offsets_follow_the_head_and_runs_cover_the_bytes():
    result = plan(append(produced(3), produced(2)), Head(0, 10), {})
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
    head = Head(0, 7)
    assert plan(append(produced(1), expected=7), head, {}).offsets == [(7, 7)]
    with pytest.raises(OffsetMismatchError) as failure:
        plan(append(produced(1), expected=6), head, {})
    assert (failure.value.http_status, failure.value.high_watermark) == (412, 7)


def test_a_retried_batch_keeps_its_offsets_and_splits_the_runs():
    state = ProducerState(5, 0, (BatchRecord(0, 2, 40, 42, 0),), version=3)
    result = plan(
        append(produced(2), produced(3, 5, 0, 0), produced(1, 5, 0, 3)),
        Head(0, 50),
        {5: state},
    )
    assert result.offsets == [(50, 51), (40, 42), (52, 52)]
    # the retried batch's 100 bytes (108-208) stay out of every run
    assert [(r.base_offset, r.start, r.end) for r in result.runs] == [(50, 8, 108), (52, 208, 308)]
    old, new = result.states[5]
    assert old is state
    assert new.version == 4
    assert [b.first_sequence for b in new.batches] == [0, 3]


def test_a_gap_waits_for_the_batches_before_it():
    # Sequence 3 has not landed: 4 is answered "retry" (REQUEST_TIMED_OUT), not out of order,
    # since 3 may still be in flight in another agent (librdkafka would start a new epoch and
    # write it twice; see tidelog.log.write.producers).
    state = ProducerState(5, 0, (BatchRecord(0, 2, 0, 2, 0),))
    result = plan(append(produced(1, 5, 0, 4)), Head(0, 3), {5: state})
    assert isinstance(refused(result), SequenceGapError)
    assert refused(result).kafka_error.name == "REQUEST_TIMED_OUT"
    assert refused(result).retriable
    assert (result.next_offset, result.offsets, result.states) == (3, [(-1, -1)], {})


def test_a_batch_overlapping_what_was_written_is_out_of_order():
    state = ProducerState(5, 0, (BatchRecord(0, 2, 0, 2, 0),))
    result = plan(append(produced(2, 5, 0, 2)), Head(0, 3), {5: state})
    assert isinstance(refused(result), OutOfOrderSequenceError)


def test_new_producers_and_new_epochs_start_at_zero():
    assert "0 (expected)" in str(refused(plan(append(produced(1, 9, 0, 1)), None, {})))
    state = ProducerState(5, 0, (BatchRecord(0, 2, 0, 2, 0),))
    result = plan(append(produced(1, 5, 1, 0)), Head(0, 3), {5: state})
    assert result.states[5][1].epoch == 1
    result = plan(append(produced(1, 5, 1, 3)), Head(0, 3), {5: state})
    assert isinstance(refused(result), SequenceGapError)  # a new epoch starts at 0


def test_an_old_epoch_is_fenced():
    state = ProducerState(5, 3, (BatchRecord(0, 0, 0, 0, 0),))
    result = plan(append(produced(1, 5, 2, 1)), Head(0, 1), {5: state})
    assert isinstance(refused(result), InvalidProducerEpochError)


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


HEAD = Head(0, 20)


def test_a_refused_request_is_its_own_the_others_in_the_flush_commit():
    # Three producers' requests share a flush; producer 6's sequence jumps (4 where 1 is next).
    states = {6: ProducerState(6, 0, (BatchRecord(0, 0, 10, 10, 0),))}
    result = plan(
        append(
            produced(2, 5, 0, 0),
            produced(1, 6, 0, 4),
            produced(3, 7, 0, 0),
            requests=(1, 2, 3),
        ),
        HEAD,
        states,
    )
    assert set(result.refused) == {1}
    assert isinstance(result.refused[1], SequenceGapError)
    assert result.offsets == [(20, 21), (-1, -1), (22, 24)]
    assert result.next_offset == 25
    # the refused batch's bytes (108-208) are in no run; the others' are
    assert [(r.base_offset, r.last_offset, r.start, r.end) for r in result.runs] == [
        (20, 21, 8, 108),
        (22, 24, 208, 308),
    ]
    assert set(result.states) == {5, 7}


def test_a_request_is_refused_whole_and_what_it_planned_is_undone():
    # One request of two batches of producer 5: the first fits, the second skips a sequence.
    # The request before it keeps its run open across the refused one's bytes: it must close.
    result = plan(
        append(
            produced(1),
            produced(1, 5, 0, 0),
            produced(1, 5, 0, 5),
            produced(1),
            requests=(1, 3, 4),
        ),
        HEAD,
        {},
    )
    assert set(result.refused) == {1}
    assert result.offsets == [(20, 20), (-1, -1), (-1, -1), (21, 21)]
    assert [(r.base_offset, r.start, r.end) for r in result.runs] == [(20, 8, 108), (21, 308, 408)]
    assert result.states == {}


def test_a_retry_inside_a_refused_request_leaves_earlier_runs_alone():
    # The first request's run is closed by a retried batch of the second, which is then
    # refused: the first request's run stays, exactly once.
    state = ProducerState(5, 0, (BatchRecord(0, 0, 3, 3, 0),))
    result = plan(
        append(produced(2), produced(1, 5, 0, 0), produced(1, 5, 0, 7), requests=(1, 3)),
        HEAD,
        {5: state},
    )
    assert set(result.refused) == {1}
    assert [(r.base_offset, r.last_offset, r.start, r.end) for r in result.runs] == [
        (20, 21, 8, 108)
    ]
    assert result.offsets == [(20, 21), (-1, -1), (-1, -1)]


def test_later_requests_of_a_refused_producer_are_refused_too():
    # In order, two requests of producer 5 in one flush both land; with sequence 2 missing,
    # the request at 3 is refused and so is the one at 4 after it, as Kafka would.
    result = plan(
        append(produced(1, 5, 0, 1), produced(1, 5, 0, 2), requests=(1, 2)),
        HEAD,
        {5: ProducerState(5, 0, (BatchRecord(0, 0, 3, 3, 0),))},
    )
    assert (result.refused, result.offsets) == ({}, [(20, 20), (21, 21)])
    result = plan(
        append(produced(1, 5, 0, 3), produced(1, 5, 0, 4), requests=(1, 2)),
        HEAD,
        {5: ProducerState(5, 0, (BatchRecord(0, 0, 3, 3, 0),))},
    )
    assert set(result.refused) == {0, 1}
    assert result.runs == []


def kept(*ranges, epoch=0):
    """A producer state (id 5) keeping these (first, last) sequence ranges."""
    state = ProducerState(5, epoch)
    for i, (first, last) in enumerate(ranges):
        state = state.appended(epoch, BatchRecord(first, last, 100 + i, 100 + i, 0))
    return {5: state}


def test_a_retry_older_than_the_kept_batches_is_a_duplicate_not_out_of_order():
    # Sequences 0-9 written one a batch; five are kept (5-9). A retry of sequence 2 was
    # certainly written: answered out of order, librdkafka would write it again under a new
    # epoch (found by the chaos runs, seeds 3, 4 and 5).
    states = kept(*((i, i) for i in range(10)))
    result = plan(append(produced(1, 5, 0, 2)), HEAD, states)
    assert isinstance(refused(result), DuplicateSequenceError)
    assert refused(result).kafka_error.name == "DUPLICATE_SEQUENCE_NUMBER"
    assert (result.next_offset, result.states) == (20, {})


def test_a_request_of_old_and_kept_duplicates_is_a_duplicate():
    states = kept(*((i, i) for i in range(10)))
    result = plan(append(produced(1, 5, 0, 3), produced(1, 5, 0, 9), requests=(2,)), HEAD, states)
    assert isinstance(refused(result), DuplicateSequenceError)


def test_a_request_mixing_old_duplicates_and_new_batches_is_refused_whole():
    # Answered as a duplicate, the new batch would be taken for written and lost.
    states = kept(*((i, i) for i in range(10)))
    result = plan(append(produced(1, 5, 0, 3), produced(1, 5, 0, 10), requests=(2,)), HEAD, states)
    assert isinstance(refused(result), OutOfOrderSequenceError)
    assert result.states == {}


@pytest.mark.parametrize(
    ("epoch", "first", "last"),
    [
        (1, 2, 2),  # another epoch: its own sequence, from 0
        (0, 9, 11),  # reaches past what was written
        (0, 11, 11),  # a gap ahead
    ],
)
def test_only_what_was_certainly_written_counts_as_a_duplicate(epoch, first, last):
    states = kept(*((i, i) for i in range(10)))
    batch = produced(last - first + 1, 5, epoch, first)
    result = plan(append(batch), HEAD, states)
    assert not isinstance(result.refused.get(0), DuplicateSequenceError)


class LandsThenLosesTheAnswer(MemoryMetadataStore):
    """A transaction lands and its answer is lost; the read that would tell fails too."""

    def transact(self, ops):
        super().transact(ops)
        raise StorageUnavailableError("answer lost", ambiguous=True)

    def get(self, pk, sk):
        if sk.startswith("idx#"):
            raise StorageUnavailableError("read failed")
        return super().get(pk, sk)


@pytest.mark.parametrize(
    ("store", "answer"),
    [
        (LandsThenLosesTheAnswer, "REQUEST_TIMED_OUT"),  # maybe written: retry the same sequence
        (MemoryMetadataStore, None),
    ],
)
def test_a_commit_whose_outcome_is_unknown_is_answered_as_maybe_written(store, answer):
    # KAFKA_STORAGE_ERROR tells librdkafka "not written": after an epoch bump it would write
    # the batch again. REQUEST_TIMED_OUT is Kafka's "may have been written".
    meta = store()
    topic = Put({"pk": TOPICS_PK, "sk": TOPIC.name, "topic_id": TOPIC.topic_id})
    MemoryMetadataStore.transact(meta, [topic])  # landed, and answered
    committer = Committer(
        meta, clock_ms=lambda: 0, sleep=lambda _: None, jitter=lambda: 0.5, attempts=1
    )
    batch = produced(1, 5, 0, 0)
    results, _ = committer.commit([append(batch)], "data/flush/x")
    error = results[(TOPIC.topic_id, 0)].error
    assert (error.kafka_error.name if error else None) == answer


def test_a_withdrawn_request_is_left_out_and_the_others_commit():
    appending = dataclasses.replace(
        append(produced(1), produced(2), produced(1), requests=(1, 2, 3)), withdrawn=frozenset({1})
    )
    result = plan(appending, HEAD, {})
    assert isinstance(result.refused[1], WithdrawnError)
    assert result.offsets == [(20, 20), (-1, -1), (21, 21)]
    assert [(r.start, r.end) for r in result.runs] == [(8, 108), (208, 308)]
