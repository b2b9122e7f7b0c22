"""Building a v2 RecordBatch, as a Kafka producer does (the layout is in
:mod:`tidelog.records.batch`)."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Sequence

from tidelog.records import compression as codecs
from tidelog.records.batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_BIT,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_BIT,
    TIMESTAMP_TYPES,
    TRANSACTIONAL_BIT,
)
from tidelog.records.crc import crc32c
from tidelog.records.varint import encode_varint


class RecordBatchBuilder:
    """Builds one v2 batch, as a Kafka producer does."""

    def __init__(
        self,
        compression: str = "none",
        *,
        base_offset: int = 0,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control_batch: bool = False,
        timestamp_type: str = "create",
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        if timestamp_type not in TIMESTAMP_TYPES:
            raise ValueError(f"timestamp_type must be one of {TIMESTAMP_TYPES}")
        self._codec = compression
        self._attributes = (
            codecs.codec_id(compression)
            | (TIMESTAMP_TYPE_BIT if timestamp_type == "log_append" else 0)
            | (TRANSACTIONAL_BIT if is_transactional else 0)
            | (CONTROL_BIT if is_control_batch else 0)
        )
        self._base_offset = base_offset
        self._producer = (producer_id, producer_epoch, base_sequence)
        self._leader_epoch = partition_leader_epoch
        self._clock_ms = clock_ms or _wall_clock_ms
        # The header's bytes first, filled in by build: an uncompressed batch is then built
        # without copying its records again.
        self._out = bytearray(HEADER_SIZE)
        self._count = 0
        self._base_timestamp: int | None = None
        self._max_timestamp = NO_TIMESTAMP
        self._last_delta = -1

    def __len__(self) -> int:
        return self._count

    @property
    def size_estimate(self) -> int:
        """Bytes of the batch so far, before compression."""
        return len(self._out)

    def append(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        timestamp: int | None = None,
        *,
        offset_delta: int | None = None,
    ) -> None:
        """Add a record. ``offset_delta`` defaults to the next one; a larger one leaves a gap,
        as compaction and conversion of old message sets do."""
        if timestamp is None:
            timestamp = self._clock_ms()
        if offset_delta is None:
            offset_delta = self._last_delta + 1
        elif offset_delta <= self._last_delta:
            raise ValueError(f"offset delta {offset_delta} does not follow {self._last_delta}")
        if self._base_timestamp is None:
            self._base_timestamp = timestamp
        record = b"".join(
            (
                b"\x00",  # attributes
                _varint(timestamp - self._base_timestamp),
                _varint(offset_delta),
                b"\x01" if key is None else _varint(len(key)),
                key or b"",
                b"\x01" if value is None else _varint(len(value)),
                value or b"",
                _headers(headers) if headers else b"\x00",
            )
        )
        out = self._out
        out += _varint(len(record))
        out += record
        self._count += 1
        self._max_timestamp = max(self._max_timestamp, timestamp)
        self._last_delta = offset_delta

    def build(
        self, *, log_append_time: int | None = None, last_offset_delta: int | None = None
    ) -> bytes:
        """The batch's bytes. ``log_append_time`` sets maxTimestamp, for LogAppendTime topics;
        ``last_offset_delta`` keeps a cleaned batch's last offset when its last records were
        removed (Kafka's cleaner preserves it, and with it the producer's sequence range)."""
        if not self._count:
            raise ValueError("a batch needs at least one record")
        if last_offset_delta is not None and last_offset_delta < self._last_delta:
            raise ValueError(f"last offset delta {last_offset_delta} is before a record's")
        if self._codec == "none":
            out = self._out
        else:
            records = bytes(memoryview(self._out)[HEADER_SIZE:])
            out = bytearray(HEADER_SIZE) + codecs.compress(self._codec, records)
        producer_id, producer_epoch, base_sequence = self._producer
        HEADER.pack_into(
            out,
            0,
            self._base_offset,
            len(out) - LOG_OVERHEAD,
            self._leader_epoch,
            2,
            0,  # the CRC, computed over what follows it once that is in place
            self._attributes,
            self._last_delta if last_offset_delta is None else last_offset_delta,
            self._base_timestamp,
            self._max_timestamp if log_append_time is None else log_append_time,
            producer_id,
            producer_epoch,
            base_sequence,
            self._count,
        )
        with memoryview(out) as view:
            struct.pack_into(">I", out, CRC_OFFSET, crc32c(view[ATTRIBUTES_OFFSET:]))
        return bytes(out)


_ONE_BYTE = tuple(bytes((z,)) for z in range(128))


def _varint(value: int) -> bytes:
    """encode_varint, with the one- and two-byte cases (nearly all of them) done inline."""
    z = (value << 1) ^ (value >> 63)
    if 0 <= z < 0x80:
        return _ONE_BYTE[z]
    if 0 <= z < 0x4000:
        return bytes(((z & 0x7F) | 0x80, z >> 7))
    return encode_varint(value)


def _headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    parts = [_varint(len(headers))]
    for name, value in headers:
        encoded = name.encode("utf-8")
        parts += (
            _varint(len(encoded)),
            encoded,
            b"\x01" if value is None else _varint(len(value)),
            value or b"",
        )
    return b"".join(parts)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000
