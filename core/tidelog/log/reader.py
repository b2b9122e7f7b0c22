"""Reading committed records back: index items, ranged GETs, the committed offsets patched in.

The minimal read the write path's proofs need; the fetch API builds on it.
"""

from __future__ import annotations

from collections.abc import Iterator

from tidelog.log import keys
from tidelog.records import (
    CorruptRecordError,
    Record,
    RecordBatch,
    iter_batches,
    with_base_offset,
)
from tidelog.storage import MetadataStore, ObjectStore


def high_watermark(meta: MetadataStore, topic_id: str, partition: int) -> tuple[int, int]:
    """(log start offset, high watermark) of a partition."""
    head = meta.get(keys.log_pk(topic_id, partition), keys.HEAD_SK)
    if head is None:
        return 0, 0
    return int(str(head["log_start_offset"])), int(str(head["next_offset"]))


def committed_batches(
    meta: MetadataStore, objects: ObjectStore, topic_id: str, partition: int, offset: int = 0
) -> Iterator[bytes]:
    """Each committed batch holding an offset >= ``offset``, its baseOffset the committed one."""
    pk = keys.log_pk(topic_id, partition)
    first = next(
        iter(
            meta.query(pk, lo=keys.INDEX_PREFIX, hi=keys.index_sk(offset), descending=True, limit=1)
        ),
        None,
    )
    lo = str(first["sk"]) if first else keys.index_sk(offset)
    for item in meta.query(pk, lo=lo, hi=keys.INDEX_PREFIX + "~"):
        data = objects.get(str(item["object"]), int(str(item["start"])), int(str(item["end"])))
        base = int(str(item["base_offset"]))
        for batch in iter_batches(data):
            if not isinstance(batch, RecordBatch):
                raise CorruptRecordError(f"{item['object']} holds a legacy batch")
            if base + batch.record_count - 1 >= offset:
                yield with_base_offset(batch.buffer, base)
            base += batch.record_count


def committed_records(
    meta: MetadataStore, objects: ObjectStore, topic_id: str, partition: int, offset: int = 0
) -> Iterator[Record]:
    for data in committed_batches(meta, objects, topic_id, partition, offset):
        for record in RecordBatch(data).records():
            if record.offset >= offset:
                yield record
