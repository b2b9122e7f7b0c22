"""What produce refuses before anything is stored, with Kafka's error names."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.errors import TidelogError
from tidelog.log.write.validate import (
    TimestampBounds,
    TimestampOutOfRangeError,
    built_batch,
    validate_batches,
)
from tidelog.records import RecordBatch, RecordBatchBuilder
from tidelog.records.crc import crc32c

T0 = 1_700_000_000_000


def batch(n=3, **options):
    builder = RecordBatchBuilder(**options)
    for i in range(n):
        builder.append(b"k", b"v%d" % i, (), T0 + i)
    return builder.build()


def recrc(raw):
    raw = bytearray(raw)
    struct.pack_into(">I", raw, 17, crc32c(memoryview(raw)[21:]))
    return bytes(raw)


def check(body, error, max_bytes=1048588):
    with pytest.raises(TidelogError) as failure:
        validate_batches(body, max_message_bytes=max_bytes, log_append_time=None)
    assert failure.value.kafka_error.name == error, failure.value.message
    assert 400 <= failure.value.http_status < 500


def test_good_batches_pass_unchanged():
    body = batch() + batch(2, base_offset=0)
    out = validate_batches(body, max_message_bytes=1048588, log_append_time=None)
    assert b"".join(b.data for b in out) == body
    assert [b.record_count for b in out] == [3, 2]


def test_log_append_time_stamps_the_batch():
    (out,) = validate_batches(batch(), max_message_bytes=1048588, log_append_time=T0 + 99)
    stamped = RecordBatch(out.data)
    stamped.validate()
    assert {r.timestamp for r in stamped.records()} == {T0 + 99}
    assert out.max_timestamp == T0 + 99


def test_empty_request():
    check(b"", "CORRUPT_MESSAGE")


def test_truncated_request():
    check(batch() + batch()[:20], "CORRUPT_MESSAGE")


def test_bad_crc():
    raw = bytearray(batch())
    raw[-2] ^= 1
    check(bytes(raw), "CORRUPT_MESSAGE")


def test_too_large():
    check(batch(), "MESSAGE_TOO_LARGE", max_bytes=50)


def test_old_magic():
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(1, 0, 10**6)
    builder.append(0, T0, None, b"v")
    check(bytes(builder.build()), "INVALID_RECORD")


def test_control_and_transactional_batches():
    check(batch(1, is_control_batch=True), "INVALID_RECORD")
    check(batch(1, is_transactional=True), "INVALID_RECORD")  # no producer id
    (produced,) = validate_batches(
        batch(1, is_transactional=True, producer_id=1, producer_epoch=0, base_sequence=0),
        max_message_bytes=10**6,
        log_append_time=None,
    )
    assert produced.transactional
    assert produced.idempotent
    assert produced.marker is None


def test_offsets_must_run_from_zero():
    builder = RecordBatchBuilder()
    builder.append(None, b"a", (), T0, offset_delta=0)
    builder.append(None, b"b", (), T0, offset_delta=5)
    check(builder.build(), "INVALID_RECORD")


def test_a_wrong_max_timestamp_is_refused_and_a_negative_timestamp_taken_as_kafka_takes_it():
    """Kafka's validator bounds a timestamp only by message.timestamp.before.max.ms, whose
    default lets any through; a negative one counts as old for retention (tidelog.log.entries
    falls back on when it was appended)."""
    check(recrc(_with_max_timestamp(batch(), T0 - 5)), "INVALID_TIMESTAMP")
    builder = RecordBatchBuilder()
    builder.append(None, b"a", (), -5)
    (produced,) = validate_batches(builder.build(), max_message_bytes=1048588, log_append_time=None)
    assert (produced.record_count, produced.max_timestamp) == (1, -1)  # as Kafka's batch says


def test_a_record_without_a_timestamp_is_taken_as_kafka_takes_it():
    """-1 is Kafka's "no timestamp" (RecordBatch.NO_TIMESTAMP), which its validator accepts."""
    builder = RecordBatchBuilder()
    builder.append(b"k", b"a", (), -1)
    builder.append(b"k", b"b", (), T0)
    (produced,) = validate_batches(builder.build(), max_message_bytes=1048588, log_append_time=None)
    assert (produced.record_count, produced.max_timestamp) == (2, T0)
    alone = RecordBatchBuilder()
    alone.append(b"k", b"a", (), -1)
    (produced,) = validate_batches(alone.build(), max_message_bytes=1048588, log_append_time=None)
    assert produced.max_timestamp == -1


def _with_max_timestamp(raw, value):
    raw = bytearray(raw)
    struct.pack_into(">q", raw, 35, value)
    return raw


def test_idempotent_batches_need_epoch_and_sequence():
    check(batch(producer_id=4, producer_epoch=-1, base_sequence=0), "INVALID_RECORD")


HOUR = 3_600_000


def bounded(body, *, before=2**63 - 1, after=HOUR, now=T0, built=False):
    bounds = TimestampBounds(now, before, after)
    if built:
        return built_batch(body, max_message_bytes=1048588, log_append_time=None, bounds=bounds)
    (produced,) = validate_batches(
        body, max_message_bytes=1048588, log_append_time=None, bounds=bounds
    )
    return produced


def stamped(*timestamps):
    builder = RecordBatchBuilder()
    for i, timestamp in enumerate(timestamps):
        builder.append(b"k", b"v%d" % i, (), timestamp)
    return builder.build()


@pytest.mark.parametrize("built", [False, True])
def test_a_createtime_record_out_of_the_topics_bounds_is_named_as_kafka_names_it(built):
    """Kafka's LogValidator: within [now - before.max.ms, now + after.max.ms], else
    INVALID_TIMESTAMP with each record named (KIP-467); -1 (none) has nothing to check."""
    assert bounded(stamped(T0 + HOUR, -1, 0), built=built).record_count == 3
    with pytest.raises(TimestampOutOfRangeError) as refused:
        bounded(stamped(T0, T0 + HOUR + 1, T0 - 5, T0 + 2 * HOUR), built=built)
    assert refused.value.kafka_error.name == "INVALID_TIMESTAMP"
    assert [index for index, _ in refused.value.record_errors] == [1, 3]
    assert refused.value.record_errors[0][1] == (
        f"Timestamp {T0 + HOUR + 1} of message with offset 1 is out of range. "
        f"The timestamp should be within [{T0 - 2**63 + 1}, {T0 + HOUR}]"
    )
    with pytest.raises(TimestampOutOfRangeError) as past:
        bounded(stamped(T0 - 61_000, -1, T0 - 60_000), before=60_000, built=built)
    assert [index for index, _ in past.value.record_errors] == [0]


@given(
    timestamps=st.lists(st.integers(-1, T0 + 3 * HOUR), min_size=1, max_size=8),
    before=st.integers(0, 2 * T0),
    after=st.integers(0, 2 * HOUR),
)
def test_a_batch_is_refused_exactly_when_one_of_its_records_is_out_of_bounds(
    timestamps, before, after
):
    out = [i for i, t in enumerate(timestamps) if t != -1 and (T0 - t > before or t - T0 > after)]
    for built in (False, True):
        try:
            bounded(stamped(*timestamps), before=before, after=after, built=built)
            refused: list[int] = []
        except TimestampOutOfRangeError as exc:
            refused = [index for index, _ in exc.record_errors]
        assert refused == out
