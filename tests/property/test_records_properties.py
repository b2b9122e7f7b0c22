"""Properties of the record format, over arbitrary records."""

from __future__ import annotations

import contextlib
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.errors import TidelogError
from tidelog.records import (
    RecordBatch,
    RecordBatchBuilder,
    iter_batches,
    with_base_offset,
    with_partition_leader_epoch,
)
from tidelog.records.crc import crc32c
from tidelog.records.varint import decode_varint, decode_varlong, encode_varint, zigzag

BYTES = st.one_of(st.none(), st.binary(max_size=300))
HEADERS = st.lists(st.tuples(st.text(max_size=20), BYTES), max_size=4)
TIMESTAMPS = st.integers(0, 2**41)
RECORDS = st.lists(st.tuples(BYTES, BYTES, HEADERS, TIMESTAMPS), min_size=1, max_size=30)
CODECS = st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"])


def build(records, codec, **options):
    builder = RecordBatchBuilder(codec, **options)
    for key, value, headers, timestamp in records:
        builder.append(key, value, headers, timestamp)
    return builder.build()


@given(RECORDS, CODECS, st.integers(0, 2**62), st.integers(-1, 2**15 - 1))
def test_what_is_built_reads_back(records, codec, base_offset, epoch):
    raw = build(records, codec, base_offset=base_offset, producer_id=7, producer_epoch=epoch)
    batch = RecordBatch(raw)
    batch.validate()
    assert batch.record_count == len(records)
    assert batch.max_timestamp == max(r[3] for r in records)
    assert [tuple(r[1:]) for r in batch.records()] == [
        (t, k, v, tuple(h)) for k, v, h, t in records
    ]
    assert [r.offset for r in batch.records()] == list(
        range(base_offset, base_offset + len(records))
    )


@settings(max_examples=60)
@given(RECORDS, CODECS, st.data())
def test_any_flipped_byte_under_the_crc_is_caught(records, codec, data):
    raw = bytearray(build(records, codec))
    index = data.draw(st.integers(21, len(raw) - 1))
    raw[index] ^= data.draw(st.integers(1, 255))
    try:
        batch = RecordBatch(bytes(raw))
    except TidelogError:
        return  # the header itself no longer adds up: refused even earlier
    assert not batch.is_valid()
    try:
        batch.validate()
    except TidelogError:
        return
    raise AssertionError(f"byte {index} flipped and the batch still validates")


@given(RECORDS, CODECS, st.integers(0, 2**63 - 1), st.integers(-(2**31), 2**31 - 1))
def test_base_offset_and_leader_epoch_rewrite_freely(records, codec, offset, epoch):
    raw = with_partition_leader_epoch(with_base_offset(build(records, codec), offset), epoch)
    batch = RecordBatch(raw)
    batch.validate()
    assert (batch.base_offset, batch.partition_leader_epoch) == (offset, epoch)


@settings(max_examples=300)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_fail_only_with_our_errors(junk):
    try:
        for batch in iter_batches(junk):
            batch.validate()
    except TidelogError:
        pass


@settings(max_examples=200)
@given(RECORDS, st.data())
def test_mangled_record_sections_fail_only_with_our_errors(records, data):
    raw = bytearray(build(records, "none"))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(61, len(raw) - 1))
        raw[index] = data.draw(st.integers(0, 255))
    struct.pack_into(">I", raw, 17, 0)
    from tidelog.records.batch import decode_records

    with contextlib.suppress(TidelogError):
        decode_records(bytes(raw[61:]), len(records), 0, 0)


@settings(max_examples=200)
@given(st.lists(RECORDS, min_size=1, max_size=3), st.data())
def test_batches_decoded_where_they_lie_read_as_copies_do(batches, data):
    """An uncompressed batch inside a larger body is decoded in place, without copying it out:
    the same records, and the same verdict on mangled records (whose CRC is made right again),
    as the batch's own bytes give."""
    raws = [bytearray(build(records, "none")) for records in batches]
    target = data.draw(st.integers(0, len(raws) - 1))
    raw = raws[target]
    for _ in range(data.draw(st.integers(0, 3))):
        index = data.draw(st.integers(61, len(raw) - 1))
        raw[index] = data.draw(st.integers(0, 255))
    struct.pack_into(">I", raw, 17, crc32c(memoryview(raw)[21:]))

    def verdict(batch):
        try:
            return [tuple(r) for r in batch.validate()]
        except TidelogError as exc:
            return type(exc)

    in_place = list(iter_batches(b"".join(raws)))[target]
    assert verdict(in_place) == verdict(RecordBatch(bytes(raw)))


@settings(max_examples=400)
@given(
    st.lists(st.tuples(BYTES, BYTES, HEADERS, st.integers(-5, 2**41)), min_size=1, max_size=30),
    CODECS,
    st.sampled_from(["create", "log_append"]),
    st.data(),
)
def test_a_summary_gives_validations_verdict(records, codec, timestamp_type, data):
    """summary() walks the records without decoding them: on any bytes, built or mangled
    (with the CRC made right again), it passes where validate() passes, with the same count,
    timestamps and null keys, and fails where it fails, with the same error."""
    raw = bytearray(build(records, codec, timestamp_type=timestamp_type))
    # Where a mangled byte tells most: a field of a record, the count, lastOffsetDelta.
    fields = [*_field_starts(raw), 26, 60] if codec == "none" else []
    for _ in range(data.draw(st.integers(0, 3))):
        if fields and data.draw(st.integers(0, 3)):
            index = data.draw(st.sampled_from(fields))
            raw[index] = zigzag(data.draw(st.integers(-3, 63)))  # a one-byte varint
        else:
            index = data.draw(st.integers(21, len(raw) - 1))
            raw[index] = data.draw(st.integers(0, 255))
    struct.pack_into(">I", raw, 17, crc32c(memoryview(raw)[21:]))
    batch = RecordBatch(bytes(raw))
    assert _summarized(batch) == _validated(batch)


def test_a_summary_gives_validations_verdict_whatever_one_field_says():
    """Every field of every record, and the batch's count and lastOffsetDelta, set in turn
    to every one-byte varint from -3 to 63 (null, negative, short, long, out of order)."""
    records = [(b"k", b"value", [("h", b"v")], 7), (None, b"", [], 5), (b"key", None, [], 9)]
    raw = build(records, "none")
    for index in [*_field_starts(raw), 26, 60]:
        for value in range(-3, 64):
            mangled = bytearray(raw)
            mangled[index] = zigzag(value)
            struct.pack_into(">I", mangled, 17, crc32c(memoryview(mangled)[21:]))
            batch = RecordBatch(bytes(mangled))
            assert _summarized(batch) == _validated(batch), (index, value)


def _validated(batch):
    try:
        decoded = batch.validate()
    except TidelogError as exc:
        return type(exc), str(exc)
    timestamps = [r.timestamp for r in decoded] or [0]
    keyless = any(r.key is None for r in decoded)
    return len(decoded), min(timestamps), max(timestamps), keyless


def _summarized(batch):
    try:
        summary = batch.summary()
    except TidelogError as exc:
        return type(exc), str(exc)
    return tuple(summary)


def _field_starts(raw):
    """Where each varint of each record of an uncompressed batch begins."""
    pos, starts = 61, []
    while pos < len(raw):
        length, body = decode_varint(raw, pos)
        timestamp = body + 1  # after the attributes
        _, offset = decode_varlong(raw, timestamp)
        _, key = decode_varint(raw, offset)
        size, after_key = decode_varint(raw, key)
        value = after_key + max(size, 0)
        size, after_value = decode_varint(raw, value)
        headers = after_value + max(size, 0)
        starts += [pos, timestamp, offset, key, value, headers]
        pos = body + length
    return starts


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlongs_round_trip(value):
    encoded = encode_varint(value)
    assert decode_varlong(encoded, 0) == (value, len(encoded))


@given(st.integers(-(2**31), 2**31 - 1))
def test_varints_round_trip(value):
    encoded = encode_varint(value)
    assert decode_varint(encoded, 0) == (value, len(encoded))
