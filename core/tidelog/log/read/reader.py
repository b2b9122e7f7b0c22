"""Whole-partition reads, for admin, the lifecycle jobs and the proofs: built on the fetch path."""

from __future__ import annotations

from collections.abc import Iterator

from tidelog.log.read.fetch import LogReader
from tidelog.records import Record
from tidelog.storage import MetadataStore, ObjectStore

_STEP_BYTES = 4 * 1024 * 1024


def committed_records(
    meta: MetadataStore,
    objects: ObjectStore,
    topic_id: str,
    partition: int,
    offset: int | None = None,
) -> Iterator[Record]:
    """Every committed record from ``offset`` (default: the log start) to the high watermark
    as it was when the read began."""
    reader = LogReader(meta, objects)
    log_start, end = reader.head(topic_id, partition)
    position = log_start if offset is None else offset
    while position < end:
        data = reader.fetch(topic_id, partition, position, _STEP_BYTES)
        for fetched in data.batches:
            for record in fetched.batch.records():
                if position <= record.offset < end:
                    yield record
        position = data.next_offset
