"""Kafka's RecordBatch, magic v2: its layout, read and validated (built by
:mod:`tidelog.records.builder`).

The batch, as Kafka writes it (seed 001, §5.3.1)::

    baseOffset:           int64
    batchLength:          int32   bytes after this field
    partitionLeaderEpoch: int32   not covered by the CRC: a broker may rewrite it
    magic:                int8    2
    crc:                  uint32  CRC-32C of everything after it (attributes to the end)
    attributes:           int16   bits 0-2 compression, 3 timestamp type, 4 transactional,
                                  5 control, 6 delete horizon set
    lastOffsetDelta:      int32
    baseTimestamp:        int64   (firstTimestamp; the delete horizon when bit 6 is set)
    maxTimestamp:         int64
    producerId:           int64
    producerEpoch:        int16
    baseSequence:         int32
    recordCount:          int32
    records:              [Record], compressed as one block after recordCount if compressed

and each record (§5.3.2)::

    length: varint, attributes: int8, timestampDelta: varlong, offsetDelta: varint,
    keyLength: varint, key, valueLength: varint, value, headerCount: varint,
    headers: [headerKeyLength: varint, headerKey: utf-8, headerValueLength: varint, value]

Reading never re-encodes: :class:`RecordBatch` is a view over the bytes it was given. Offsets are
assigned at commit, so :func:`tidelog.records.edits.with_base_offset` rewrites the 8-byte
baseOffset, which sits outside the CRC, and nothing else.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from tidelog.records import compression as codecs
from tidelog.records.crc import crc32c
from tidelog.records.errors import CorruptRecordError, InvalidRecordError
from tidelog.records.varint import INT32_MAX
from tidelog.records.walk import Record, Walk, walk_records

HEADER = struct.Struct(
    ">q"  # baseOffset
    "i"  # batchLength
    "i"  # partitionLeaderEpoch
    "b"  # magic
    "I"  # crc
    "h"  # attributes
    "i"  # lastOffsetDelta
    "q"  # baseTimestamp
    "q"  # maxTimestamp
    "q"  # producerId
    "h"  # producerEpoch
    "i"  # baseSequence
    "i"  # recordCount
)
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset and batchLength: the bytes batchLength does not count
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21  # where the CRC starts
MAX_TIMESTAMP_OFFSET = 35
BASE_OFFSET = struct.Struct(">q")
LEADER_EPOCH = struct.Struct(">i")
RECORDS_COUNT_OFFSET = HEADER_SIZE - 4

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

TIMESTAMP_TYPES = ("create", "log_append")


class RecordsSummary(NamedTuple):
    """A batch's records as produce validation needs them (:meth:`RecordBatch.summary`)."""

    records: int
    min_timestamp: int  # with LogAppendTime, the batch's maxTimestamp, as its records read
    max_timestamp: int
    keyless: bool  # a record's key is null


class ControlRecord(NamedTuple):
    """The key and value of a transaction marker (seed 001, §5.3.1.1)."""

    version: int
    type: str  # "ABORT" or "COMMIT"
    coordinator_epoch: int


class RecordBatch:
    """One v2 batch over ``buf[pos : pos + size_in_bytes]``; the header is parsed on creation,
    records only when asked."""

    __slots__ = (
        "_buf",
        "_pos",
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_length",
        "crc",
        "last_offset_delta",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "record_count",
    )

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    def __init__(self, buf: bytes | memoryview, pos: int = 0) -> None:
        if len(buf) - pos < HEADER_SIZE:
            raise CorruptRecordError(
                f"{len(buf) - pos} bytes cannot hold a batch header of {HEADER_SIZE}"
            )
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        ) = HEADER.unpack_from(buf, pos)
        if self.magic != 2:
            raise InvalidRecordError(f"batch at byte {pos} has magic {self.magic}, not 2")
        if self.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptRecordError(f"batch length {self.batch_length} is below the minimum")
        if pos + LOG_OVERHEAD + self.batch_length > len(buf):
            raise CorruptRecordError("batch runs past the end of the data")
        self._buf = buf
        self._pos = pos

    # -- Kafka's fields, by Kafka's names ------------------------------------------------

    @property
    def size_in_bytes(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def compression(self) -> str:
        return codecs.codec_name(self.attributes & COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> str:
        return TIMESTAMP_TYPES[bool(self.attributes & TIMESTAMP_TYPE_BIT)]

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control_batch(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def first_timestamp(self) -> int:
        """baseTimestamp (the seed's firstTimestamp): record timestamps are deltas from it."""
        return self.base_timestamp

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: when the cleaner set bit 6, baseTimestamp holds the tombstones' horizon."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_BIT else None

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def buffer(self) -> memoryview:
        """The batch's bytes, exactly as stored."""
        return memoryview(self._buf)[self._pos : self._pos + self.size_in_bytes]

    def to_bytes(self) -> bytes:
        """The batch's bytes as ``bytes``: its buffer itself when the batch is all of it."""
        if type(self._buf) is bytes and self._pos == 0 and len(self._buf) == self.size_in_bytes:
            return self._buf
        return bytes(self.buffer)

    def computed_crc(self) -> int:
        start = self._pos + ATTRIBUTES_OFFSET
        return crc32c(memoryview(self._buf)[start : self._pos + self.size_in_bytes])

    def is_valid(self) -> bool:
        """Header and CRC only: what the write path checks before storing bytes."""
        return self.record_count >= 0 and self.computed_crc() == self.crc

    def validate(
        self, *, decompressed_limit: int = codecs.DEFAULT_DECOMPRESSED_LIMIT
    ) -> list[Record]:
        """Everything: CRC, compression, every record's framing and varints, the record count,
        offsets increasing within lastOffsetDelta. Raises CorruptRecordError if anything is off;
        returns the records it decoded on the way."""
        records: list[Record] = []
        self._walk(records, decompressed_limit)
        return records

    def summary(
        self, *, decompressed_limit: int = codecs.DEFAULT_DECOMPRESSED_LIMIT
    ) -> RecordsSummary:
        """What :meth:`validate` checks, raising what it raises, with the records summed up
        instead of decoded: what produce validation asks of them (tidelog.records.walk)."""
        walk = self._walk(None, decompressed_limit)
        if not self.record_count:
            low = high = 0
        elif self.attributes & TIMESTAMP_TYPE_BIT:
            low = high = self.max_timestamp
        else:
            low, high = self.base_timestamp + walk.low, self.base_timestamp + walk.high
        return RecordsSummary(self.record_count, low, high, walk.keyless)

    def records(
        self, *, decompressed_limit: int = codecs.DEFAULT_DECOMPRESSED_LIMIT
    ) -> list[Record]:
        """The records, offsets absolute. With LogAppendTime every record carries the batch's
        maxTimestamp, as Kafka's readers do."""
        data, start, end = self._records_section(decompressed_limit)
        return decode_records(
            data,
            self.record_count,
            self.base_offset,
            self.base_timestamp,
            self._log_append_time(),
            start=start,
            end=end,
        )

    def _walk(self, into: list[Record] | None, decompressed_limit: int) -> Walk:
        if self.computed_crc() != self.crc:
            raise CorruptRecordError(
                f"batch at offset {self.base_offset}: CRC {self.computed_crc():#010x} "
                f"computed, {self.crc:#010x} stored"
            )
        if self.record_count < 0:
            raise CorruptRecordError(f"negative record count {self.record_count}")
        if self.attributes & ~0x7F:
            raise InvalidRecordError(f"unknown attribute bits in {self.attributes:#06x}")
        data, start, end = self._records_section(decompressed_limit)
        walk = walk_records(
            data,
            self.record_count,
            start,
            end,
            into=into,
            base_offset=self.base_offset,
            base_timestamp=self.base_timestamp,
            log_append_time=self._log_append_time(),
            last_offset_delta=self.last_offset_delta,
        )
        if walk.disorder is not None:
            raise walk.disorder
        return walk

    def _log_append_time(self) -> int | None:
        return self.max_timestamp if self.attributes & TIMESTAMP_TYPE_BIT else None

    def _records_section(self, decompressed_limit: int) -> tuple[bytes, int, int]:
        """The records' bytes, decompressed, and where in them they start and end: the
        batch's own buffer when it is uncompressed ``bytes`` (no copy)."""
        start, end = self._pos + HEADER_SIZE, self._pos + self.size_in_bytes
        codec = self.attributes & COMPRESSION_MASK
        if not codec and type(self._buf) is bytes:
            return self._buf, start, end
        body = bytes(memoryview(self._buf)[start:end])
        if codec:
            body = codecs.decompress(codecs.codec_name(codec), body, decompressed_limit)
        return body, 0, len(body)

    def control_record(self) -> ControlRecord:
        """The marker a control batch holds."""
        if not self.is_control_batch:
            raise InvalidRecordError("not a control batch")
        (record,) = self.records()
        return decode_control_record(record)

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"records={self.record_count}, compression={self.compression!r})"
        )


def decode_records(
    data: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None = None,
    *,
    start: int = 0,
    end: int | None = None,
) -> list[Record]:
    """``count`` records from ``data[start:end]`` (decompressed), which they must fill exactly
    (:func:`~tidelog.records.walk.walk_records`)."""
    out: list[Record] = []
    walk_records(
        data,
        count,
        start,
        len(data) if end is None else end,
        into=out,
        base_offset=base_offset,
        base_timestamp=base_timestamp,
        log_append_time=log_append_time,
    )
    return out


_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}


def decode_control_record(record: Record) -> ControlRecord:
    if record.key is None or len(record.key) < _CONTROL_KEY.size:
        raise CorruptRecordError("control record key too short")
    version, kind = _CONTROL_KEY.unpack_from(record.key)
    if kind not in CONTROL_TYPES:
        raise InvalidRecordError(f"unknown control record type {kind}")
    epoch = -1
    if record.value is not None and len(record.value) >= _CONTROL_VALUE.size:
        _, epoch = _CONTROL_VALUE.unpack_from(record.value)
    return ControlRecord(version, CONTROL_TYPES[kind], epoch)


def control_record_bytes(kind: str, coordinator_epoch: int) -> tuple[bytes, bytes]:
    """(key, value) of a transaction marker."""
    codes = {name: code for code, name in CONTROL_TYPES.items()}
    return _CONTROL_KEY.pack(0, codes[kind]), _CONTROL_VALUE.pack(0, coordinator_epoch)


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: sequences wrap at Integer.MAX_VALUE."""
    if sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment
