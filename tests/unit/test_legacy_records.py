"""Magic 0 and 1 message sets (seed 001, §5.3.3), built by kafka-python, read by us."""

from __future__ import annotations

import struct
import zlib

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from tidelog.records import (
    CorruptRecordError,
    LegacyBatch,
    Record,
    RecordBatch,
    UnsupportedCompressionError,
    iter_batches,
)

T0 = 1_700_000_000_000
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}


def message_set(magic, codec, count=4):
    builder = LegacyRecordBatchBuilder(magic, CODECS[codec], 10**9)
    for i in range(count):
        builder.append(i, T0 + i if magic else None, b"k%d" % i if i % 2 else None, b"v%d" % i)
    return bytes(builder.build())


def with_wrapper_offset(raw: bytes, offset: int) -> bytes:
    """What a broker does to a v1 compressed set: assign the wrapper its (last) offset."""
    out = bytearray(raw)
    struct.pack_into(">q", out, 0, offset)
    return bytes(out)


@pytest.mark.parametrize(("magic", "codec"), [(0, "none"), (1, "none")])
def test_uncompressed_messages_are_entries_of_their_own(magic, codec):
    entries = list(iter_batches(message_set(magic, codec)))
    assert [type(e) for e in entries] == [LegacyBatch] * 4
    for entry in entries:
        entry.validate()
    records = [r for e in entries for r in e.records()]
    timestamps = [T0 + i for i in range(4)] if magic else [-1] * 4
    assert records == [
        Record(i, timestamps[i], b"k%d" % i if i % 2 else None, b"v%d" % i) for i in range(4)
    ]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_v1_wrappers_hold_relative_inner_offsets(codec):
    raw = with_wrapper_offset(message_set(1, codec), 103)
    (wrapper,) = iter_batches(raw)
    wrapper.validate()
    assert wrapper.compression == codec
    assert (wrapper.base_offset, wrapper.last_offset) == (100, 103)
    assert [r.offset for r in wrapper.records()] == [100, 101, 102, 103]
    assert [r.timestamp for r in wrapper.records()] == [T0 + i for i in range(4)]


@pytest.mark.parametrize("codec", ["gzip", "snappy"])
def test_v0_wrappers_hold_absolute_inner_offsets(codec):
    (wrapper,) = iter_batches(message_set(0, codec))
    assert [r.offset for r in wrapper.records()] == [0, 1, 2, 3]
    assert {r.timestamp for r in wrapper.records()} == {-1}


def test_magic_0_has_no_lz4():
    raw = bytearray(message_set(0, "none", 1))
    raw[17] = 3  # attributes: lz4
    struct.pack_into(">I", raw, 12, zlib.crc32(raw[16:]))
    (entry,) = iter_batches(bytes(raw))
    with pytest.raises(UnsupportedCompressionError):
        entry.records()


def test_a_bad_crc32_is_refused():
    raw = bytearray(message_set(1, "gzip"))
    raw[-1] ^= 0xFF
    (entry,) = iter_batches(bytes(raw))
    assert not entry.is_valid()
    with pytest.raises(CorruptRecordError, match="CRC"):
        entry.validate()


@pytest.mark.parametrize(("magic", "codec"), [(0, "gzip"), (1, "none"), (1, "snappy"), (1, "lz4")])
def test_conversion_to_v2_keeps_offsets_and_timestamps(magic, codec):
    raw = message_set(magic, codec)
    if codec != "none":
        raw = with_wrapper_offset(raw, 50) if magic == 1 else raw
    entries = list(iter_batches(raw))
    expected = [r for e in entries for r in e.records()]
    converted = [RecordBatch(e.to_v2()) for e in entries]
    for batch in converted:
        batch.validate()
        assert batch.compression == entries[0].compression
    assert [r for b in converted for r in b.records()] == expected


def test_log_append_time_wrappers_stamp_their_records():
    builder = LegacyRecordBatchBuilder(1, 1, 10**9)
    for i in range(3):
        builder.append(i, T0 + i, None, b"v")
    raw = bytearray(builder.build())
    raw[17] |= 0x08  # the broker's LogAppendTime: attribute bit and wrapper timestamp
    struct.pack_into(">q", raw, 18, T0 + 999)
    struct.pack_into(">I", raw, 12, zlib.crc32(raw[16:]))
    (wrapper,) = iter_batches(bytes(raw))
    wrapper.validate()
    assert {r.timestamp for r in wrapper.records()} == {T0 + 999}
    converted = RecordBatch(wrapper.to_v2())
    assert converted.timestamp_type == "log_append"
    assert {r.timestamp for r in converted.records()} == {T0 + 999}


def test_mixed_magics_in_one_buffer():
    v1 = message_set(1, "none", 2)
    from tidelog.records import RecordBatchBuilder

    builder = RecordBatchBuilder(base_offset=2)
    builder.append(None, b"v2", (), T0)
    kinds = [type(b).__name__ for b in iter_batches(v1 + builder.build())]
    assert kinds == ["LegacyBatch", "LegacyBatch", "RecordBatch"]
