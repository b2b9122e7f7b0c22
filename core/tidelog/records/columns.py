"""A batch's records as columns, for readers that hand records on in bulk (Spark's Arrow
batches) rather than one by one.

The records are decoded by aiokafka's compiled reader when it is installed (the ``spark`` extra
brings it): five times faster than :func:`~tidelog.records.batch.decode_records` on small
records, and decoding is nearly all of a read's work. Without it, or where aiokafka has no
compiled wheel, they are decoded in Python. Both give the same columns (a differential test
holds them to it). The reader is meant for stored batches, which were validated when they were
written, so neither checks the CRC.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tidelog.records.batch import RecordBatch
from tidelog.records.errors import CorruptRecordError

Headers = list[tuple[str, bytes | None]]


@dataclass
class Columns:
    """Records in offset order, one list per field; ``headers`` only when they were asked for
    (building them is over a quarter of the compiled reader's time)."""

    offsets: list[int] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)
    keys: list[bytes | None] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)
    headers: list[Headers] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.offsets)


def _compiled_reader() -> Any:
    try:
        from aiokafka.record.default_records import (  # noqa: PLC0415 - optional
            DefaultRecordBatch,
        )
    except ImportError:
        return None
    # aiokafka falls back to a Python reader of its own where its extension is missing, which
    # is slower than ours: use it only when it is the compiled one.
    return DefaultRecordBatch if "_crecords" in DefaultRecordBatch.__module__ else None


COMPILED = _compiled_reader()


def columns(
    batch: RecordBatch, start: int, end: int, *, headers: bool = False, compiled: bool = True
) -> Columns:
    """The batch's records with offsets in ``[start, end)``."""
    out = Columns()
    if compiled and COMPILED is not None:
        try:
            _fill(out, COMPILED(batch.to_bytes()), start, end, headers)
        except Exception as exc:  # aiokafka's CorruptRecordException, and its codecs' errors
            raise CorruptRecordError(f"batch at offset {batch.base_offset}: {exc}") from exc
    else:
        _fill(out, batch.records(), start, end, headers)
    return out


def _fill(out: Columns, records: Iterable[Any], start: int, end: int, headers: bool) -> None:
    """``records`` are aiokafka's or ours: both have these fields by these names."""
    offsets, timestamps = out.offsets.append, out.timestamps.append
    keys, values, header = out.keys.append, out.values.append, out.headers.append
    for record in records:
        offset = record.offset
        if offset < start:
            continue
        if offset >= end:
            break
        offsets(offset)
        timestamps(record.timestamp)
        keys(record.key)
        values(record.value)
        if headers:
            header(list(record.headers))
