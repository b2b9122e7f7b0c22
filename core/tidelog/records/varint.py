"""Zig-zag varints, as Kafka (and protobuf) encode them.

Decoding is strict: a varint may use at most 5 bytes (10 for a varlong), must fit its type, and
must be minimal (no trailing ``0x80 ... 0x00`` padding), so every value has exactly one encoding
and crafted input cannot smuggle extra bytes past a length check.
"""

from __future__ import annotations

from tidelog.records.errors import CorruptRecordError

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# One-byte encodings: a zig-zag value below 128 is a single byte.
ZIGZAG_BYTE = tuple((b >> 1) ^ -(b & 1) for b in range(128))


def zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def encode_varint(value: int) -> bytes:
    """The zig-zag varint of a signed integer (int32 or int64 range)."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{value} does not fit a varlong")
    z = zigzag(value) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def size_of_varint(value: int) -> int:
    z = zigzag(value) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def decode_varint(buf: bytes, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """(value, position after it) of the varint at ``pos``; ``max_bytes`` 5 for a varint
    (int32), 10 for a varlong (int64)."""
    result = 0
    shift = 0
    start = pos
    end = len(buf)
    while True:
        if pos >= end:
            raise CorruptRecordError(f"varint at byte {start} runs past the end of the data")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if pos - start >= max_bytes:
            raise CorruptRecordError(f"varint at byte {start} is longer than {max_bytes} bytes")
    if pos - start > 1 and byte == 0:
        raise CorruptRecordError(f"varint at byte {start} is not minimally encoded")
    value = (result >> 1) ^ -(result & 1)
    low, high = (INT32_MIN, INT32_MAX) if max_bytes == 5 else (INT64_MIN, INT64_MAX)
    if not low <= value <= high:
        raise CorruptRecordError(f"varint at byte {start} overflows its type")
    return value, pos


def decode_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    return decode_varint(buf, pos, 10)
