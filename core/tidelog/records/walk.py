"""A batch's records, walked: the one loop every reader of records goes through.

Each record (seed 001, §5.3.2)::

    length: varint, attributes: int8, timestampDelta: varlong, offsetDelta: varint,
    keyLength: varint, key, valueLength: varint, value, headerCount: varint,
    headers: [headerKeyLength: varint, headerKey: utf-8, headerValueLength: varint, value]

The walk checks every record's framing and varints, as Kafka's ``DefaultRecord.readFrom``
does, and either decodes the records (a reader's) or only sums them up (produce validation's:
how many, their timestamps' range, whether a key is null, whether the offsets increase). A
produced batch is validated and then stored as it came: building a record of every key and
value only to drop it was half of validation's time, a quarter of the agent's CPU per message
produced. Both ways are one loop, so their verdicts cannot drift apart.

Written for speed: varints of one and two bytes (lengths up to 8 KiB, small deltas: nearly all
of them) are decoded inline, the two-byte form only when minimal; anything else, and every
error path, goes through :func:`~tidelog.records.varint.decode_varint`.
"""

from __future__ import annotations

from typing import NamedTuple

from tidelog.records.errors import CorruptRecordError
from tidelog.records.varint import (
    INT64_MAX,
    INT64_MIN,
    ZIGZAG_BYTE,
    decode_varint,
    decode_varlong,
)


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class Walk(NamedTuple):
    """What a walk learned of the records besides the records themselves."""

    low: int  # the smallest timestamp delta (no record: INT64_MAX)
    high: int  # the largest (no record: INT64_MIN)
    keyless: bool  # a record's key is null
    disorder: CorruptRecordError | None  # the first offset delta out of order, if one was


def walk_records(  # noqa: PLR0912, PLR0915 - the hot loop, inlined on purpose
    data: bytes,
    count: int,
    start: int,
    end: int,
    *,
    into: list[Record] | None = None,
    base_offset: int = 0,
    base_timestamp: int = 0,
    log_append_time: int | None = None,
    last_offset_delta: int = INT64_MAX,
) -> Walk:
    """``count`` records from ``data[start:end]`` (decompressed), which they must fill exactly,
    appended to ``into`` when it is given (offsets and timestamps absolute; with LogAppendTime
    every timestamp is ``log_append_time``). Raises CorruptRecordError for any framing that does
    not hold; offsets out of order (not strictly increasing within 0..``last_offset_delta``)
    are reported, as what to raise once every record has been read (RecordBatch.validate reads
    them all first), since a reader of a compacted batch may not care."""
    zz = ZIGZAG_BYTE
    append = into.append if into is not None else None
    new_record = Record._make
    pos = start
    previous = -1
    low, high = INT64_MAX, INT64_MIN
    keyless = False
    disorder = None
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    try:
        for _ in range(count):
            # length
            b = data[pos]
            if b < 0x80:
                length = zz[b]
                pos += 1
            elif 0 < data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                length = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                length, pos = decode_varint(data, pos)
            record_end = pos + length
            if length < 6 or record_end > end:
                raise CorruptRecordError(f"record length {length} at byte {pos} is impossible")
            pos += 1  # attributes: unused
            # timestampDelta
            b = data[pos]
            if b < 0x80:
                timestamp_delta = zz[b]
                pos += 1
            elif 0 < data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                timestamp_delta = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                timestamp_delta, pos = decode_varlong(data, pos)
            if timestamp_delta < low:  # noqa: PLR1730 - min() is a call per record
                low = timestamp_delta
            if timestamp_delta > high:  # noqa: PLR1730
                high = timestamp_delta
            # offsetDelta
            b = data[pos]
            if b < 0x80:
                offset_delta = zz[b]
                pos += 1
            elif 0 < data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                offset_delta = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                offset_delta, pos = decode_varint(data, pos)
            if (offset_delta <= previous or offset_delta > last_offset_delta) and disorder is None:
                disorder = CorruptRecordError(
                    f"record offset delta {offset_delta} out of order (after {previous}, "
                    f"last {last_offset_delta})"
                )
            previous = offset_delta
            # key
            b = data[pos]
            if b < 0x80:
                size = zz[b]
                pos += 1
            elif 0 < data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                size = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                size, pos = decode_varint(data, pos)
            if size >= 0:
                key = data[pos : pos + size] if append else None
                pos += size
            elif size == -1:
                key = None
                keyless = True
            else:
                raise CorruptRecordError(f"negative key length {size}")
            # value
            b = data[pos]
            if b < 0x80:
                size = zz[b]
                pos += 1
            elif 0 < data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                size = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                size, pos = decode_varint(data, pos)
            if size >= 0:
                value = data[pos : pos + size] if append else None
                pos += size
            elif size == -1:
                value = None
            else:
                raise CorruptRecordError(f"negative value length {size}")
            # headers
            if data[pos] == 0:
                headers = ()
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos)
            if pos != record_end:
                raise CorruptRecordError(
                    f"record ends at byte {pos} but its length says {record_end}"
                )
            if append:
                append(
                    new_record(
                        (
                            base_offset + offset_delta,
                            base_timestamp + timestamp_delta
                            if log_append_time is None
                            else log_append_time,
                            key,
                            value,
                            headers,
                        )
                    )
                )
    except IndexError as exc:
        raise CorruptRecordError("records run past the end of the batch") from exc
    if pos != end:
        raise CorruptRecordError(
            f"batch holds {end - pos} bytes after its {count} records: the count is wrong"
        )
    return Walk(low, high, keyless, disorder)


def _decode_headers(data: bytes, pos: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = decode_varint(data, pos)
    if count < 0:
        raise CorruptRecordError(f"negative header count {count}")
    headers = []
    for _ in range(count):
        size, pos = decode_varint(data, pos)
        if size < 0:
            raise CorruptRecordError("a header key may not be null")
        if pos + size > len(data):
            raise CorruptRecordError("header key runs past the end of the record")
        try:
            name = data[pos : pos + size].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptRecordError("header key is not UTF-8") from exc
        pos += size
        size, pos = decode_varint(data, pos)
        if size >= 0:
            if pos + size > len(data):
                raise CorruptRecordError("header value runs past the end of the record")
            value: bytes | None = data[pos : pos + size]
            pos += size
        elif size == -1:
            value = None
        else:
            raise CorruptRecordError(f"negative header value length {size}")
        headers.append((name, value))
    return tuple(headers), pos
