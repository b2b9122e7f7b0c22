"""Retention (seed 001, "Deletes"): whole segments deleted from the front of the log, by time and
by size, moving the log start offset. Never the active segment (the runs not yet rolled).

Kafka's rules, as ``UnifiedLog.deleteRetentionMsBreachedSegments`` and
``deleteRetentionSizeBreachedSegments`` apply them:

- time: a segment goes once ``now - its max timestamp > retention.ms`` (-1: never);
- size: with ``excess = log size - retention.bytes`` (-1: never), segments go from the front
  while ``excess - segment size >= 0``, each one taking its size off the excess;
- only a prefix: deletion stops at the first segment that must stay.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from tidelog.log import garbage, keys
from tidelog.log.entries import LogEntry
from tidelog.log.head import Head, put_head
from tidelog.storage import (
    Compare,
    ConditionFailedError,
    Delete,
    MetadataStore,
    Write,
)
from tidelog.storage.metadata import MAX_TRANSACTION_WRITES

logger = logging.getLogger(__name__)


def plan(
    entries: Sequence[LogEntry], *, retention_ms: int, retention_bytes: int, now_ms: int
) -> list[LogEntry]:
    """The segments to delete: a prefix of the partition's segments (pure)."""
    segments: list[LogEntry] = []
    for entry in entries:
        if not entry.is_segment:
            break
        segments.append(entry)
    by_time = 0
    if retention_ms >= 0:
        while by_time < len(segments) and now_ms - segments[by_time].max_timestamp > retention_ms:
            by_time += 1
    by_size = 0
    if retention_bytes >= 0:
        excess = sum(e.size for e in entries) - retention_bytes
        while by_size < len(segments) and excess - segments[by_size].size >= 0:
            excess -= segments[by_size].size
            by_size += 1
    return segments[: max(by_time, by_size)]


def apply(
    meta: MetadataStore,
    topic_id: str,
    partition: int,
    doomed: Sequence[LogEntry],
    *,
    now_ms: Callable[[], int],
    grace_ms: int,
    attempts: int = 5,
) -> int:
    """Delete ``doomed`` and move the log start past them; how many were deleted.

    The head is compare-and-set on both its fields, like a commit's; a commit landing in
    between makes this re-read and try again (and a commit that read the old log start retries
    on its side)."""
    pk = keys.log_pk(topic_id, partition)
    deleted = 0
    for start in range(0, len(doomed), MAX_TRANSACTION_WRITES - 1):
        chunk = doomed[start : start + MAX_TRANSACTION_WRITES - 1]
        garbage.enqueue(meta, [k for e in chunk for k in e.objects], now_ms() + grace_ms)
        if not _delete_chunk(meta, pk, chunk, attempts):
            break
        deleted += len(chunk)
    return deleted


def _delete_chunk(meta: MetadataStore, pk: str, chunk: Sequence[LogEntry], attempts: int) -> bool:
    new_start = chunk[-1].last_offset + 1
    for _ in range(attempts):
        head = Head.from_item(meta.get(pk, keys.HEAD_SK))
        if head is None:
            raise ValueError(f"{pk} has segments but no head")
        if head.log_start_offset >= new_start:
            return False  # another pass deleted them
        writes: list[Write] = [put_head(pk, Head(new_start, head.next_offset), head)]
        writes += [
            Delete(pk, keys.index_sk(e.base_offset), Compare("object", "=", e.object_key))
            for e in chunk
        ]
        try:
            meta.transact(writes)
        except ConditionFailedError:
            continue
        logger.info("retention: %s now starts at %d", pk, new_start)
        return True
    logger.info("retention of %s kept losing to commits; the next pass tries again", pk)
    return False
