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
from tidelog.records.varint import decode_varint, decode_varlong, encode_varint

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


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlongs_round_trip(value):
    encoded = encode_varint(value)
    assert decode_varlong(encoded, 0) == (value, len(encoded))


@given(st.integers(-(2**31), 2**31 - 1))
def test_varints_round_trip(value):
    encoded = encode_varint(value)
    assert decode_varint(encoded, 0) == (value, len(encoded))
