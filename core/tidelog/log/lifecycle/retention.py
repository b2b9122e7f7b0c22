"""Retention (seed 001, "Deletes"): whole segments deleted from the front of the log, by time and
by size, moving the log start offset. Never the active segment (the runs not yet rolled).

Kafka's rules, as ``UnifiedLog.deleteRetentionMsBreachedSegments`` and
``deleteRetentionSizeBreachedSegments`` apply them:

- time: a segment goes once ``now - its max timestamp > retention.ms`` (-1: never);
- size: with ``excess = log size - retention.bytes`` (-1: never), segments go from the front
  while ``excess - segment size >= 0``, each one taking its size off the excess;
- log start: a segment wholly below the log start offset goes (``deleteLogStartOffsetBreached
  Segments``): DeleteRecords moves the start, retention then drops what it passed;
- only a prefix: deletion stops at the first segment that must stay.

DeleteRecords (``Partition.deleteRecordsOnLeader``) moves the log start offset to any offset up
to the high watermark, on topics whose cleanup policy includes delete.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from tidelog.errors import ConflictError, InvalidRequestError, TidelogError
from tidelog.log import due, garbage, keys
from tidelog.log.entries import LogEntry
from tidelog.log.head import Head, OffsetOutOfRangeError, put_head, transact_with_head
from tidelog.log.topics import Topic
from tidelog.storage import (
    Compare,
    ConditionFailedError,
    Delete,
    MetadataStore,
)
from tidelog.storage.metadata import MAX_TRANSACTION_WRITES
from tidelog.threads import ContextPool

logger = logging.getLogger(__name__)


HIGH_WATERMARK = -1  # DeleteRecords' offset for "everything committed so far"
DELETIONS_AT_ONCE = 16


class PolicyViolationError(InvalidRequestError):
    default_kafka_error = "POLICY_VIOLATION"


def plan(
    entries: Sequence[LogEntry],
    *,
    retention_ms: int,
    retention_bytes: int,
    now_ms: int,
    log_start_offset: int = 0,
) -> list[LogEntry]:
    """The segments to delete: a prefix of the partition's segments (pure)."""
    segments: list[LogEntry] = []
    for entry in entries:
        if not entry.is_segment:
            break
        segments.append(entry)
    below_start = 0
    while below_start < len(segments) and segments[below_start].last_offset < log_start_offset:
        below_start += 1
    by_time = 0
    if retention_ms >= 0:
        while by_time < len(segments):
            at = segments[by_time].retention_time
            if at is None or now_ms - at <= retention_ms:
                break
            by_time += 1
    by_size = 0
    if retention_bytes >= 0:
        excess = sum(e.size for e in entries) - retention_bytes
        while by_size < len(segments) and excess - segments[by_size].size >= 0:
            excess -= segments[by_size].size
            by_size += 1
    return segments[: max(by_time, by_size, below_start)]


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

    The head (its start moved, its size less the deleted bytes) is compare-and-set, like a
    commit's; a commit landing in between makes this re-read and try again (and a commit that
    read the old head retries on its side)."""
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
    freed = sum(e.size for e in chunk)

    # Each entry still the object planned: another pass may have deleted or compacted it.
    deletes = [
        Delete(pk, keys.index_sk(e.base_offset), Compare("object", "=", e.object_key))
        for e in chunk
    ]
    try:
        # DeleteRecords may have moved the start past them already: only their bytes go.
        transact_with_head(
            meta, pk, deletes, size_delta=-freed, start_at_least=new_start, attempts=attempts
        )
    except ConditionFailedError:
        logger.info("retention of %s lost to another pass", pk)
        return False
    except ConflictError:
        logger.info("retention of %s kept losing to commits; the next pass tries again", pk)
        return False
    logger.info("retention: %s now starts at or past %d", pk, new_start)
    return True


def delete_records(
    meta: MetadataStore,
    topic: Topic,
    partition: int,
    offset: int,
    *,
    now_ms: int,
    attempts: int = 5,
) -> int:
    """Kafka's DeleteRecords: the log now starts at ``offset`` (HIGH_WATERMARK: at the high
    watermark); the new log start offset, Kafka's "low watermark".

    Only the head moves, at once and durably: fetches below it are out of range from the
    answer on. The segments it passed go at the partition's next housekeeping, marked due now.
    An offset at or below the log start changes nothing, as on Kafka."""
    topic.check_partition(partition)
    if "delete" not in topic.config("cleanup.policy").split(","):
        raise PolicyViolationError(
            f"Records of partition {topic.name}-{partition} can not be deleted due to the "
            "configured policy"
        )
    pk = keys.log_pk(topic.topic_id, partition)
    for _ in range(attempts):
        found = Head.from_item(meta.get(pk, keys.HEAD_SK))
        head = found or Head(0, 0)
        wanted = head.next_offset if offset == HIGH_WATERMARK else offset
        if not 0 <= wanted <= head.next_offset:
            raise OffsetOutOfRangeError(wanted, head.log_start_offset, head.next_offset)
        if wanted <= head.log_start_offset:
            return head.log_start_offset
        moved = put_head(pk, replace(head, log_start_offset=wanted), found)
        try:
            meta.transact([moved, due.active(topic.name, topic.topic_id, partition, now_ms)])
        except ConditionFailedError:
            continue  # a commit moved the end meanwhile: read again
        logger.info("delete records: %s now starts at %d", pk, wanted)
        return wanted
    raise ConflictError(f"{pk}: commits kept moving its head; retry the deletion")


def delete_records_many(
    meta: MetadataStore, wanted: Sequence[tuple[Topic, int, int]], *, now_ms: int
) -> list[int | TidelogError]:
    """``delete_records`` of many partitions (topic, partition, offset) at once, each its own
    compare-and-set: a 1,000-partition deletion takes a few round trips, not a thousand. Each
    partition's new log start, or its error, in order."""

    def one(item: tuple[Topic, int, int]) -> int | TidelogError:
        topic, partition, offset = item
        try:
            return delete_records(meta, topic, partition, offset, now_ms=now_ms)
        except TidelogError as exc:
            return exc

    if len(wanted) <= 1:
        return [one(item) for item in wanted]
    threads = min(DELETIONS_AT_ONCE, len(wanted))
    with ContextPool(threads, thread_name_prefix="delete-records") as pool:
        return list(pool.map(one, wanted))
