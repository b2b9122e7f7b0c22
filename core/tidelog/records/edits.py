"""What a broker rewrites in a batch it was sent, and nothing else: the base offset (assigned at
commit, outside the CRC), the log append time (inside it: the CRC is recomputed) and the
partition leader epoch (outside it)."""

from __future__ import annotations

import struct

from tidelog.records.batch import (
    ATTRIBUTES_OFFSET,
    BASE_OFFSET,
    CRC_OFFSET,
    LEADER_EPOCH,
    MAX_TIMESTAMP_OFFSET,
    TIMESTAMP_TYPE_BIT,
)
from tidelog.records.crc import crc32c


def with_base_offset(batch: bytes | bytearray | memoryview, base_offset: int) -> bytes:
    """The batch with its baseOffset rewritten. The CRC stays valid: it starts after."""
    out = bytearray(batch)
    BASE_OFFSET.pack_into(out, 0, base_offset)
    return bytes(out)


def with_log_append_time(batch: bytes | bytearray | memoryview, timestamp: int) -> bytes:
    """Kafka's ``setMaxTimestamp(LOG_APPEND_TIME, t)``: the broker's one rewrite of a batch.
    Sets the timestamp-type bit and maxTimestamp, so every record reads as ``timestamp``, and
    recomputes the CRC (both fields are inside it)."""
    out = bytearray(batch)
    (attributes,) = struct.unpack_from(">h", out, ATTRIBUTES_OFFSET)
    struct.pack_into(">h", out, ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_BIT)
    struct.pack_into(">q", out, MAX_TIMESTAMP_OFFSET, timestamp)
    struct.pack_into(">I", out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def with_partition_leader_epoch(batch: bytes | bytearray | memoryview, epoch: int) -> bytes:
    out = bytearray(batch)
    LEADER_EPOCH.pack_into(out, 12, epoch)
    return bytes(out)
