"""Kafka's message sets before 0.11: magic 0 and 1 (seed 001, §5.3.3), read and converted to v2.

    offset: int64, message_size: int32, then the message:
        crc: uint32 (CRC32, not CRC-32C, of magic to the end), magic: int8, attributes: int8
        (bits 0-2 compression; v1 bit 3 timestamp type), timestamp: int64 (v1 only),
        key: int32 length + bytes, value: int32 length + bytes

Compression wraps a whole message set in the value of one outer message. Its offset is that of
the last inner message. In v0 inner offsets are absolute; in v1 they are relative (0, 1, ...)
and the absolute offset is ``outer - last_inner + inner``. Magic 0 knows only gzip and snappy.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from tidelog.records import compression as codecs
from tidelog.records.batch import NO_TIMESTAMP, TIMESTAMP_TYPES
from tidelog.records.builder import RecordBatchBuilder
from tidelog.records.errors import (
    CorruptRecordError,
    InvalidRecordError,
    UnsupportedCompressionError,
)
from tidelog.records.walk import Record

ENTRY = struct.Struct(">qi")  # offset, message_size
MESSAGE_V0 = struct.Struct(">IbB")  # crc, magic, attributes
MESSAGE_V1 = struct.Struct(">IbBq")  # crc, magic, attributes, timestamp
LENGTH = struct.Struct(">i")
LOG_OVERHEAD = ENTRY.size
LEGACY_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4"}


@dataclass(frozen=True)
class LegacyMessage:
    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    crc: int
    size_in_bytes: int


class LegacyBatch:
    """One entry of a v0/v1 message set: a plain message, or a compressed wrapper."""

    def __init__(self, buf: bytes | memoryview, pos: int = 0) -> None:
        self.message = parse_message(buf, pos)
        self._computed_crc = zlib.crc32(
            memoryview(buf)[pos + LOG_OVERHEAD + 4 : pos + self.message.size_in_bytes]
        )

    @property
    def magic(self) -> int:
        return self.message.magic

    @property
    def crc(self) -> int:
        return self.message.crc

    @property
    def size_in_bytes(self) -> int:
        return self.message.size_in_bytes

    @property
    def compression(self) -> str:
        codec = self.message.attributes & 0x07
        if codec not in LEGACY_CODECS or (self.magic == 0 and codec == 3):
            raise UnsupportedCompressionError(f"magic {self.magic} has no compression {codec}")
        return LEGACY_CODECS[codec]

    @property
    def timestamp_type(self) -> str:
        return TIMESTAMP_TYPES[self.magic == 1 and bool(self.message.attributes & 0x08)]

    @property
    def last_offset(self) -> int:
        return self.message.offset

    @property
    def base_offset(self) -> int:
        return self.records()[0].offset

    def is_valid(self) -> bool:
        return self._computed_crc == self.message.crc

    def validate(self) -> None:
        if not self.is_valid():
            raise CorruptRecordError(
                f"message at offset {self.message.offset}: CRC {self._computed_crc:#010x} "
                f"computed, {self.message.crc:#010x} stored"
            )
        self.records()

    def records(self) -> list[Record]:
        message = self.message
        codec = self.compression
        if codec == "none":
            return [Record(message.offset, message.timestamp, message.key, message.value)]
        if message.value is None:
            raise CorruptRecordError(f"compressed wrapper at {message.offset} has no value")
        inner = _parse_set(codecs.decompress(codec, message.value))
        if not inner:
            raise CorruptRecordError(f"compressed wrapper at {message.offset} is empty")
        log_append = self.timestamp_type == "log_append"
        shift = message.offset - inner[-1].offset if message.magic == 1 else 0
        out = []
        for item in inner:
            if item.attributes & 0x07:
                raise InvalidRecordError("a compressed message may not nest another")
            if item.magic != message.magic:
                raise InvalidRecordError("inner message magic differs from its wrapper's")
            timestamp = message.timestamp if log_append else item.timestamp
            out.append(Record(item.offset + shift, timestamp, item.key, item.value))
        return out

    def to_v2(self, compression_name: str | None = None) -> bytes:
        """The same records as one v2 batch, offsets and timestamps kept (v0 has none: -1)."""
        records = self.records()
        log_append = self.timestamp_type == "log_append"
        builder = RecordBatchBuilder(
            self.compression if compression_name is None else compression_name,
            base_offset=records[0].offset,
            timestamp_type=self.timestamp_type,
        )
        for record in records:
            builder.append(
                record.key,
                record.value,
                (),
                record.timestamp,
                offset_delta=record.offset - records[0].offset,
            )
        return builder.build(log_append_time=self.message.timestamp if log_append else None)


def parse_message(buf: bytes | memoryview, pos: int) -> LegacyMessage:
    if len(buf) - pos < LOG_OVERHEAD + MESSAGE_V0.size:
        raise CorruptRecordError("too few bytes for a message")
    offset, size = ENTRY.unpack_from(buf, pos)
    end = pos + LOG_OVERHEAD + size
    if size < MESSAGE_V0.size + 8 or end > len(buf):
        raise CorruptRecordError(f"message size {size} at byte {pos} is impossible")
    crc, magic, attributes = MESSAGE_V0.unpack_from(buf, pos + LOG_OVERHEAD)
    at = pos + LOG_OVERHEAD + MESSAGE_V0.size
    timestamp = NO_TIMESTAMP
    if magic == 1:
        if at + 8 > end:
            raise CorruptRecordError("message too short for its timestamp")
        (timestamp,) = struct.unpack_from(">q", buf, at)
        at += 8
    elif magic != 0:
        raise InvalidRecordError(f"message at byte {pos} has magic {magic}")
    key, at = _bytes(buf, at, end)
    value, at = _bytes(buf, at, end)
    if at != end:
        raise CorruptRecordError(f"message at offset {offset} has {end - at} stray bytes")
    return LegacyMessage(offset, magic, attributes, timestamp, key, value, crc, LOG_OVERHEAD + size)


def _bytes(buf: bytes | memoryview, at: int, end: int) -> tuple[bytes | None, int]:
    if at + 4 > end:
        raise CorruptRecordError("message ends inside a length")
    (size,) = LENGTH.unpack_from(buf, at)
    at += 4
    if size == -1:
        return None, at
    if size < 0 or at + size > end:
        raise CorruptRecordError(f"length {size} runs past the end of the message")
    return bytes(buf[at : at + size]), at + size


def _parse_set(data: bytes) -> list[LegacyMessage]:
    messages, pos = [], 0
    while pos < len(data):
        message = parse_message(data, pos)
        if zlib.crc32(data[pos + LOG_OVERHEAD + 4 : pos + message.size_in_bytes]) != message.crc:
            raise CorruptRecordError(f"inner message at offset {message.offset}: bad CRC")
        messages.append(message)
        pos += message.size_in_bytes
    return messages
