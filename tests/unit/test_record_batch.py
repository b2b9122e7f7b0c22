"""RecordBatch v2 against Kafka's own tests and two independent clients."""

from __future__ import annotations

import struct

import pytest
from aiokafka.record.default_records import _DefaultRecordBatchBuilderPy, _DefaultRecordBatchPy
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from tidelog.records import (
    CorruptRecordError,
    InvalidRecordError,
    Record,
    RecordBatch,
    RecordBatchBuilder,
    RecordTooLargeError,
    UnsupportedCompressionError,
    iter_batches,
    with_base_offset,
    with_log_append_time,
    with_partition_leader_epoch,
)
from tidelog.records.batch import control_record_bytes, increment_sequence
from tidelog.records.crc import crc32c
from tidelog.records.varint import encode_varint

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
KAFKA_PYTHON_CODEC = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
T0 = 1_700_000_000_000

# Built by kafka-python 3.0.12: DefaultRecordBatchBuilder(magic=2, compression=none,
# transactional, producer 123, epoch 4, base sequence 56) with the three records of
# golden_records(). Its partitionLeaderEpoch is 0; Java's producer (and ours) writes -1.
KAFKA_PYTHON_GOLDEN = bytes.fromhex(
    "00000000000000000000005a000000000232a1b84d0010000000020000018bcfe568000000018bcfe5680500"
    "0000000000007b0004000000380000000330000000066b65790a76616c756504046831047631046832010c00"
    "0a0201000010001304046b330100"
)


def golden_records(builder):
    builder.append(b"key", b"value", [("h1", b"v1"), ("h2", None)], T0)
    builder.append(None, b"", [], T0 + 5)
    builder.append(b"k3", None, [], T0 - 10)


def test_crc32c_check_values():
    # Crc32CTest and the standard check value of CRC-32C (Castagnoli)
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"The quick brown fox jumps over the lazy dog") == 0x22620404


def test_golden_bytes_from_kafka_python():
    builder = RecordBatchBuilder(
        producer_id=123, producer_epoch=4, base_sequence=56, is_transactional=True
    )
    golden_records(builder)
    ours = builder.build()
    assert struct.unpack_from(">i", ours, 12) == (-1,)
    assert with_partition_leader_epoch(ours, 0) == KAFKA_PYTHON_GOLDEN


def test_golden_batch_fields():
    batch = RecordBatch(KAFKA_PYTHON_GOLDEN)
    batch.validate()
    assert (batch.base_offset, batch.batch_length, batch.partition_leader_epoch, batch.magic) == (
        0,
        90,
        0,
        2,
    )
    assert (
        batch.compression,
        batch.timestamp_type,
        batch.is_transactional,
        batch.is_control_batch,
    ) == ("none", "create", True, False)
    assert (batch.first_timestamp, batch.max_timestamp) == (T0, T0 + 5)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (123, 4, 56)
    assert (batch.record_count, batch.last_offset_delta, batch.last_offset) == (3, 2, 2)
    assert batch.last_sequence == 58
    assert batch.crc == crc32c(KAFKA_PYTHON_GOLDEN[21:])
    assert batch.records() == [
        Record(0, T0, b"key", b"value", (("h1", b"v1"), ("h2", None))),
        Record(1, T0 + 5, None, b"", ()),
        Record(2, T0 - 10, b"k3", None, ()),
    ]


def records_from(build):
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in build]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_and_aiokafka_parse_ours(codec):
    builder = RecordBatchBuilder(codec)
    for i in range(100):
        builder.append(f"k{i}".encode(), b"v" * i, [("n", str(i).encode()), ("none", None)], T0 + i)
    ours = builder.build()
    expected = [tuple(r) for r in RecordBatch(ours).records()]
    theirs = DefaultRecordBatch(bytearray(ours))
    assert theirs.validate_crc()
    assert records_from(theirs) == expected
    assert records_from(_DefaultRecordBatchPy(bytearray(ours))) == expected


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", ["kafka-python", "aiokafka"])
def test_we_parse_kafka_python_and_aiokafka(codec, client):
    make = DefaultRecordBatchBuilder if client == "kafka-python" else _DefaultRecordBatchBuilderPy
    theirs = make(2, KAFKA_PYTHON_CODEC[codec], False, 9, 1, 7, 10**9)
    for i in range(100):
        theirs.append(i, T0 + i, None if i % 3 else b"k", b"x" * i, [("h", b"%d" % i)])
    raw = bytes(theirs.build())
    (batch,) = iter_batches(raw)
    batch.validate()
    assert batch.compression == codec
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 1, 7)
    records = batch.records()
    assert len(records) == 100
    assert records[4] == Record(4, T0 + 4, None, b"xxxx", (("h", b"4"),))
    assert records[3].key == b"k"


def test_increment_sequence():  # DefaultRecordBatchTest.testIncrementSequence
    assert increment_sequence(5, 5) == 10
    assert increment_sequence(2**31 - 1, 1) == 0
    assert increment_sequence(2**31 - 1 - 5, 10) == 4
    assert increment_sequence(-1, 10) == -1


def test_last_sequence_wraps_around():
    builder = RecordBatchBuilder(producer_id=1, producer_epoch=0, base_sequence=2**31 - 2)
    for _ in range(3):
        builder.append(None, b"x", (), T0)
    batch = RecordBatch(builder.build())
    assert batch.last_sequence == 0


def test_partition_leader_epoch_and_base_offset_are_outside_the_crc():
    # DefaultRecordBatchTest.testSetPartitionLeaderEpoch; offsets assigned at commit
    builder = RecordBatchBuilder("lz4")
    builder.append(b"k", b"v", (), T0)
    builder.append(b"k", b"v", (), T0)
    raw = with_partition_leader_epoch(with_base_offset(builder.build(), 12345), 15)
    batch = RecordBatch(raw)
    batch.validate()
    assert (batch.base_offset, batch.partition_leader_epoch, batch.last_offset) == (
        12345,
        15,
        12346,
    )
    assert [r.offset for r in batch.records()] == [12345, 12346]


def test_log_append_time_overrides_every_record():
    # DefaultRecordBatchTest.testSetLogAppendTime
    builder = RecordBatchBuilder("gzip")
    for i in range(3):
        builder.append(None, b"v", (), T0 + i)
    raw = with_log_append_time(builder.build(), T0 + 1000)
    batch = RecordBatch(raw)
    batch.validate()
    assert batch.timestamp_type == "log_append"
    assert batch.max_timestamp == T0 + 1000
    assert {r.timestamp for r in batch.records()} == {T0 + 1000}


def test_builder_with_log_append_time():
    builder = RecordBatchBuilder(timestamp_type="log_append")
    builder.append(None, b"v", (), T0)
    batch = RecordBatch(builder.build(log_append_time=T0 + 7))
    assert [r.timestamp for r in batch.records()] == [T0 + 7]


def test_control_batch_round_trip():
    key, value = control_record_bytes("COMMIT", 42)
    builder = RecordBatchBuilder(
        is_control_batch=True, is_transactional=True, producer_id=5, producer_epoch=1
    )
    builder.append(key, value, (), T0)
    batch = RecordBatch(builder.build())
    assert batch.is_control_batch
    marker = batch.control_record()
    assert (marker.type, marker.coordinator_epoch, marker.version) == ("COMMIT", 42, 0)
    with pytest.raises(InvalidRecordError):
        RecordBatch(KAFKA_PYTHON_GOLDEN).control_record()


def test_offset_gaps_survive_as_compaction_leaves_them():
    builder = RecordBatchBuilder(base_offset=100)
    builder.append(b"a", b"1", (), T0, offset_delta=0)
    builder.append(b"b", b"2", (), T0, offset_delta=7)
    batch = RecordBatch(builder.build())
    batch.validate()
    assert [r.offset for r in batch.records()] == [100, 107]
    assert batch.last_offset == 107
    with pytest.raises(ValueError, match="does not follow"):
        builder.append(b"c", b"3", (), T0, offset_delta=7)


def valid_batch(codec="none", count=3):
    builder = RecordBatchBuilder(codec)
    for i in range(count):
        builder.append(b"k%d" % i, b"value %d" % i, [("h", b"x")], T0 + i)
    return builder.build()


def recrc(raw: bytearray) -> bytes:
    struct.pack_into(">I", raw, 17, crc32c(memoryview(raw)[21:]))
    return bytes(raw)


def test_a_flipped_crc_is_refused():
    raw = bytearray(valid_batch())
    raw[-1] ^= 0x01
    batch = RecordBatch(bytes(raw))
    assert not batch.is_valid()
    with pytest.raises(CorruptRecordError, match="CRC"):
        batch.validate()


@pytest.mark.parametrize(
    ("count", "message"), [(2, "after its 2 records"), (4, "past the end"), (-1, "negative")]
)
def test_a_wrong_record_count_is_refused(count, message):
    # DefaultRecordBatchTest.testInvalidRecordCountTooManyNonCompressedV2 / TooLittle
    raw = bytearray(valid_batch())
    struct.pack_into(">i", raw, 57, count)
    with pytest.raises(CorruptRecordError, match=message):
        RecordBatch(recrc(raw)).validate()


def test_wrong_magic_and_short_buffers():
    raw = bytearray(valid_batch())
    raw[16] = 3
    with pytest.raises(InvalidRecordError, match="magic 3"):
        RecordBatch(bytes(raw))
    with pytest.raises(CorruptRecordError, match="header"):
        RecordBatch(valid_batch()[:40])
    with pytest.raises(CorruptRecordError, match="past the end"):
        RecordBatch(valid_batch()[:-1])


def test_unknown_compression_and_attribute_bits():
    raw = bytearray(valid_batch())
    raw[22] = (raw[22] & ~0x07) | 5
    with pytest.raises(UnsupportedCompressionError):
        RecordBatch(recrc(raw)).validate()
    raw = bytearray(valid_batch())
    raw[21] |= 0x01  # bit 8: unused
    with pytest.raises(InvalidRecordError, match="attribute"):
        RecordBatch(recrc(raw)).validate()


def test_decompression_bombs_are_refused():
    builder = RecordBatchBuilder("zstd")
    builder.append(None, bytes(8 * 1024 * 1024), (), T0)
    raw = builder.build()
    assert len(raw) < 2048
    with pytest.raises(RecordTooLargeError):
        RecordBatch(raw).validate(decompressed_limit=1024 * 1024)
    RecordBatch(raw).validate()  # the default cap (64 MiB) lets it through


def test_records_must_be_in_offset_order():
    builder = RecordBatchBuilder()
    builder.append(b"a", b"1", (), T0)
    builder.append(b"b", b"2", (), T0)
    raw = bytearray(builder.build())
    struct.pack_into(">i", raw, 23, 0)  # lastOffsetDelta 0, but the second record says 1
    with pytest.raises(CorruptRecordError, match="out of order"):
        RecordBatch(recrc(raw)).validate()


def hand_made(records, last_offset_delta=None):
    """A batch around records written out by hand: (offsetDelta, fields after it, padding)
    each, the record's length counting the padding too; header, count and CRC made right."""
    body = b""
    for offset_delta, fields, padding in records:
        record = b"\x00" + encode_varint(0) + encode_varint(offset_delta) + fields + padding
        body += encode_varint(len(record)) + record
    raw = bytearray(valid_batch(count=1)[:61] + body)
    struct.pack_into(">i", raw, 8, len(raw) - 12)
    last = len(records) - 1 if last_offset_delta is None else last_offset_delta
    struct.pack_into(">i", raw, 23, last)
    struct.pack_into(">i", raw, 57, len(records))
    return recrc(raw)


KEY_VALUE = encode_varint(1) + b"k" + encode_varint(1) + b"v" + encode_varint(0)  # no headers


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([(0, KEY_VALUE, b"")], None),
        ([(0, KEY_VALUE, b"\x00")], "record ends at byte 70 but its length says 71"),
        ([(0, KEY_VALUE[:-1], b"")], "past the end"),
        ([(0, encode_varint(-2) + KEY_VALUE[2:], b"")], "negative key length -2"),
        ([(0, KEY_VALUE[:2] + encode_varint(-2) + b"v\x00", b"")], "negative value length -2"),
        ([(0, KEY_VALUE, b""), (0, KEY_VALUE, b""), (5, KEY_VALUE, b"")], "delta 0 out of order"),
    ],
)
def test_each_record_is_read_to_exactly_its_length(records, message):
    # DefaultRecord.readFrom: "Invalid record size: expected to read N bytes in record payload"
    batch = RecordBatch(hand_made(records))
    if message is None:
        assert [(r.key, r.value) for r in batch.validate()] == [(b"k", b"v")]
        return
    with pytest.raises(CorruptRecordError, match=message):
        batch.validate()
    with pytest.raises(CorruptRecordError, match=message):
        batch.summary()


def test_a_record_longer_than_what_is_left_of_the_batch_is_refused():
    raw = bytearray(hand_made([(0, KEY_VALUE, b"")]))
    raw[61] = encode_varint(40)[0]  # the record's length: far past the batch's end
    with pytest.raises(CorruptRecordError, match="record length 40 at byte 62 is impossible"):
        RecordBatch(recrc(raw)).validate()


def test_reading_several_batches_and_a_partial_tail():
    first, second = with_base_offset(valid_batch(), 0), with_base_offset(valid_batch("gzip"), 3)
    buffer = first + second + second[:30]
    reader = iter_batches(buffer)
    assert [b.base_offset for b in reader] == [0, 3]
    assert reader.trailing_bytes == 30
    assert reader.position == len(first) + len(second)
    reader = iter_batches(memoryview(first + second[:5]))
    assert [b.base_offset for b in reader] == [0]
    assert reader.trailing_bytes == 5


def test_the_buffer_is_the_batch_exactly():
    raw = valid_batch()
    (batch,) = iter_batches(b"" + raw)
    assert bytes(batch.buffer) == raw
    assert batch.size_in_bytes == len(raw)


def test_a_missing_crc32c_package_fails_loudly(monkeypatch):
    import importlib
    import sys

    import tidelog.records.crc as crc_module

    monkeypatch.setitem(sys.modules, "crc32c", None)  # as if it were not installed
    with pytest.raises(ImportError, match="refuses to fall back to a pure-Python CRC"):
        importlib.reload(crc_module)
    monkeypatch.undo()
    importlib.reload(crc_module)


def test_record_attributes_are_ignored_as_java_does():
    # Kafka reads a record's attributes as an int8 and ignores it (all bits unused).
    # kafka-python and aiokafka read it as a varint and so reject a set top bit; we follow Java.
    builder = RecordBatchBuilder()
    builder.append(None, b"value", (), 1_700_000_000_000)
    raw = bytearray(builder.build())
    raw[62] = 0x80  # the first record's attributes, after its one-byte length
    batch = RecordBatch(recrc(raw))
    batch.validate()
    assert batch.records()[0].value == b"value"


@given(st.binary(max_size=64), st.binary(max_size=64))
def test_a_crc_goes_on_from_the_crc_of_what_came_before(first, then):
    assert crc32c(then, crc32c(first)) == crc32c(first + then)
