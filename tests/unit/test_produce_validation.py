"""What produce refuses before anything is stored, with Kafka's error names."""

from __future__ import annotations

import struct

import pytest

from tidelog.errors import TidelogError
from tidelog.log.write.validate import validate_batches
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


def test_negative_timestamps_and_wrong_max_timestamp():
    check(recrc(_with_max_timestamp(batch(), T0 - 5)), "INVALID_TIMESTAMP")
    builder = RecordBatchBuilder()
    builder.append(None, b"a", (), -5)
    check(builder.build(), "INVALID_TIMESTAMP")


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
