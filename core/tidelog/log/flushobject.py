"""The object a flush writes: batches for many partitions, self-describing.

    "TIDELOG1"                                   8 bytes
    batches, grouped by partition, in order      each partition's bytes contiguous
    footer                                       JSON: [{topic_id, partition, start, end}, ...]
    footer length: uint32, footer CRC-32C: uint32, "TLOGEND1"

The metadata store's index items say which range of which object holds a partition's batches;
the footer makes an object readable on its own (repair, garbage collection, debugging).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tidelog.records import CorruptRecordError
from tidelog.records.crc import crc32c

HEADER = b"TIDELOG1"
TRAILER_MAGIC = b"TLOGEND1"
TRAILER = struct.Struct(">II")
TRAILER_SIZE = TRAILER.size + len(TRAILER_MAGIC)


@dataclass(frozen=True)
class Extent:
    """Where one partition's batches sit in the object: bytes [start, end)."""

    topic_id: str
    partition: int
    start: int
    end: int


def encode(parts: Mapping[tuple[str, int], Sequence[bytes]]) -> tuple[bytes, list[Extent]]:
    """The object's bytes, and each partition's extent in it (partitions in key order)."""
    chunks = [HEADER]
    position = len(HEADER)
    extents = []
    for (topic_id, partition), batches in sorted(parts.items()):
        start = position
        for data in batches:
            chunks.append(data)
            position += len(data)
        extents.append(Extent(topic_id, partition, start, position))
    footer = json.dumps(
        [[e.topic_id, e.partition, e.start, e.end] for e in extents], separators=(",", ":")
    ).encode()
    chunks += [footer, TRAILER.pack(len(footer), crc32c(footer)), TRAILER_MAGIC]
    return b"".join(chunks), extents


def decode_footer(data: bytes) -> list[Extent]:
    if not data.startswith(HEADER):
        raise CorruptRecordError("not a tidelog flush object")
    return decode_tail(data)


def tail_size(tail: bytes) -> int:
    """How many of the object's last bytes hold its footer and trailer, read from a tail of
    at least ``TRAILER_SIZE`` bytes."""
    return _trailer(tail)[0] + TRAILER_SIZE


def decode_tail(data: bytes) -> list[Extent]:
    """The extents, from the object's last ``tail_size`` bytes or more (the whole object will
    do): a collector needs only them to know which partitions an object serves."""
    size, crc = _trailer(data)
    footer = data[max(len(data) - TRAILER_SIZE - size, 0) : len(data) - TRAILER_SIZE]
    if len(footer) != size or crc32c(footer) != crc:
        raise CorruptRecordError("flush object footer is damaged")
    return [Extent(str(t), int(p), int(s), int(e)) for t, p, s, e in json.loads(footer)]


def _trailer(tail: bytes) -> tuple[int, int]:
    """The footer's length and CRC-32C, from the object's last bytes."""
    if not tail.endswith(TRAILER_MAGIC) or len(tail) < TRAILER_SIZE:
        raise CorruptRecordError("not a tidelog flush object")
    size, crc = TRAILER.unpack_from(tail, len(tail) - TRAILER_SIZE)
    return int(size), int(crc)


def extents_by_partition(extents: Iterable[Extent]) -> dict[tuple[str, int], Extent]:
    return {(e.topic_id, e.partition): e for e in extents}
