"""What a flexible request announces, held to the bytes it brings, before kio reads it.

kio's native reader sizes a compact array from its announced length before reading a single
element: a request announcing 2^32 - 2 elements asks for 34 GB, and a failed allocation in Rust
aborts the whole process, which no ``except`` can catch. Every element of every array takes at
least one byte, so an array announcing more elements than bytes are left is malformed; refusing
it here bounds what kio allocates by the size of the frame. The legacy readers check their
lengths against the buffer first, so only flexible versions (compact arrays) are walked.

The walk follows kio's own classification of each schema's fields, compiled once per schema
into closures: fixed-size runs are skipped in one step, and only lengths are read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)

Data = bytes | memoryview  # a frame: bytes, or a read-only view of the buffer it was read into
# Reads one value at pos within buf[:end] and answers where the next begins.
Step = Callable[[Data, int, int], int]

_FIXED = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "float64": 8,
    "int64": 8,
    "uint64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
_SIZED = frozenset({"string", "bytes", "records"})  # a compact length, then that many bytes


class Malformed(ValueError):
    """Bytes that cannot be the request they claim to be."""


def check(schema: Any, buf: Data, pos: int) -> int:
    """Where the flexible request body at ``pos`` ends; Malformed if it announces a length
    past the end of ``buf``."""
    return _entity(schema)(buf, pos, len(buf))


def _uvarint(buf: Data, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while shift <= 28:  # an unsigned 32-bit varint has at most five bytes
        if pos >= end:
            raise Malformed("a length runs past the end of the request")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise Malformed("a varint longer than five bytes")


def _advance(pos: int, size: int, end: int) -> int:
    if size > end - pos:
        raise Malformed(f"{size} bytes announced, {max(end - pos, 0)} left")
    return pos + size


def _count(buf: Data, pos: int, end: int) -> tuple[int, int]:
    """A compact array's element count (null and empty alike as 0), held to the bytes left."""
    length, pos = _uvarint(buf, pos, end)
    count = max(length - 1, 0)
    if count > end - pos:
        raise Malformed(f"an array of {count} elements in {end - pos} bytes")
    return count, pos


def _fixed(size: int) -> Step:
    return lambda buf, pos, end: _advance(pos, size, end)


def _sized(buf: Data, pos: int, end: int) -> int:
    length, pos = _uvarint(buf, pos, end)
    return _advance(pos, max(length - 1, 0), end)


def _array_of_fixed(size: int) -> Step:
    def step(buf: Data, pos: int, end: int) -> int:
        count, pos = _count(buf, pos, end)
        return _advance(pos, count * size, end)

    return step


def _array_of(item: Step) -> Step:
    def step(buf: Data, pos: int, end: int) -> int:
        count, pos = _count(buf, pos, end)
        for _ in range(count):
            pos = item(buf, pos, end)
        return pos

    return step


def _nullable(entity: Step) -> Step:
    def step(buf: Data, pos: int, end: int) -> int:
        marker = _advance(pos, 1, end)
        return pos + 1 if buf[pos] == 0xFF else entity(buf, marker, end)

    return step


def _primitive(kafka_type: str) -> Step:
    if kafka_type in _FIXED:
        return _fixed(_FIXED[kafka_type])
    if kafka_type in _SIZED:
        return _sized
    raise TypeError(f"no bound for Kafka type {kafka_type!r}")


def _field_step(field: Any) -> Step:
    kind = classify_field(field)
    if isinstance(kind, EntityTupleField):
        return _array_of(_entity(kind.type_))
    if isinstance(kind, EntityField):
        entity = _entity(kind.type_)
        return _nullable(entity) if is_optional(field) else entity
    kafka_type = field.metadata["kafka_type"]
    if isinstance(kind, PrimitiveTupleField):
        size = _FIXED.get(kafka_type)
        return _array_of(_primitive(kafka_type)) if size is None else _array_of_fixed(size)
    return _primitive(kafka_type)


@functools.cache
def _entity(entity_type: Any) -> Step:  # a kio entity class
    """One flexible entity: its fields in order (adjacent fixed sizes as one step), then its
    tagged fields, each walked within the size it announces if known and skipped if not."""
    steps: list[Step] = []
    run = 0
    tagged: dict[int, Step] = {}
    for field in fields(entity_type):
        if "tag" in field.metadata:
            tagged[field.metadata["tag"]] = _field_step(field)
            continue
        size = _FIXED.get(field.metadata.get("kafka_type", ""))
        if size is not None and not classify_field(field).is_array:
            run += size
            continue
        if run:
            steps.append(_fixed(run))
            run = 0
        steps.append(_field_step(field))
    if run:
        steps.append(_fixed(run))

    def step(buf: Data, pos: int, end: int) -> int:
        for each in steps:
            pos = each(buf, pos, end)
        return _tags(buf, pos, end, tagged)

    return step


def _tags(buf: Data, pos: int, end: int, tagged: dict[int, Step]) -> int:
    count, pos = _uvarint(buf, pos, end)  # a plain count: tagged fields have no null
    if count > end - pos:
        raise Malformed(f"{count} tagged fields in {end - pos} bytes")
    for _ in range(count):
        tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        stop = _advance(pos, size, end)
        known = tagged.get(tag)
        if known is not None:
            known(buf, pos, stop)
        pos = stop
    return pos
