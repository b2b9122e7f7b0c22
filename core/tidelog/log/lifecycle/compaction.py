"""Log compaction for ``cleanup.policy=compact`` (seed 001, §5.3.1), in-process for small
partitions; the Spark pipeline takes it over at scale.

As Kafka's cleaner does, over the rolled segments (never the active one):

- the latest record per key is kept, every older one dropped; keyless records are dropped (they
  cannot be produced to a compacted topic);
- a tombstone (null value) that is the latest for its key is kept for ``delete.retention.ms``
  after the pass that first saw it (KIP-534's delete horizon, kept per segment in the index
  item), then dropped;
- a batch keeps its base offset, last offset delta, producer id, epoch and base sequence, so
  offsets and sequences are preserved; a batch left with no record is dropped (idempotent
  producers' state lives in the metadata table, not in the log, so nothing depends on it);
- a rewritten segment keeps its offset range and place in the index, so offsets stay
  contiguous across segments, with gaps inside them;
- transactions: only segments wholly below the last stable offset are cleaned; an aborted
  transaction's batches are dropped and never shadow a key's committed record; a marker is
  kept for ``delete.retention.ms`` once nothing of its transaction is left before it, then
  dropped (Kafka's LogCleaner, with its ``CleanedTransactionMetadata``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tidelog.errors import ConflictError
from tidelog.log import garbage, keys
from tidelog.log.aborted import aborted_between
from tidelog.log.entries import LogEntry
from tidelog.log.head import read_head, transact_with_head
from tidelog.log.lifecycle.roll import store_segment
from tidelog.log.segment import SegmentBuilder, batches_from
from tidelog.records import Record, RecordBatch, RecordBatchBuilder
from tidelog.storage import (
    Compare,
    MetadataStore,
    ObjectStore,
    Put,
)
from tidelog.storage.metadata import MAX_TRANSACTION_WRITES
from tidelog.txn.markers import appended
from tidelog.txn.stable import AbortedTxn, visible

logger = logging.getLogger(__name__)

MAX_COMPACT_BYTES = 256 * 1024 * 1024  # beyond this, a partition is Spark's job


@dataclass
class Rewrite:
    entry: LogEntry  # the segment as it is
    batches: list[bytes]  # what it keeps
    delete_horizon_ms: int | None
    changed: bool
    removed: int  # records dropped


@dataclass
class Stats:
    segments_rewritten: int = 0
    records_removed: int = 0
    skipped: list[str] = field(default_factory=list)


def latest_offsets(
    segments: Sequence[Sequence[RecordBatch]], aborted: Sequence[AbortedTxn] = ()
) -> dict[bytes, int]:
    latest: dict[bytes, int] = {}
    for batches in segments:
        for batch in batches:
            if batch.is_control_batch or not visible(appended(batch), aborted):
                continue
            for record in batch.records():
                if record.key is not None:
                    latest[record.key] = record.offset
    return latest


def plan(
    entries: Sequence[LogEntry],
    segments: Sequence[Sequence[RecordBatch]],
    *,
    delete_retention_ms: int,
    now_ms: int,
    aborted: Sequence[AbortedTxn] = (),
) -> list[Rewrite]:
    """Each segment's cleaned batches (pure): ``segments[i]`` holds ``entries[i]``'s batches;
    ``aborted``, the partition's aborted transactions over them."""
    cleaner = _Cleaner(latest_offsets(segments, aborted), aborted)
    rewrites = []
    for entry, batches in zip(entries, segments, strict=True):
        horizon = entry.delete_horizon_ms
        due = horizon is not None and horizon <= now_ms
        out: list[bytes] = []
        changed = False
        removed = kept_tombstone = 0
        for batch in batches:
            kept, dropped, tombstones = cleaner.clean(batch, due)
            kept_tombstone += tombstones
            changed = changed or kept is None or dropped > 0
            removed += dropped
            if kept is not None:
                out.append(kept)
        new_horizon = None
        if kept_tombstone:
            new_horizon = horizon if horizon is not None else now_ms + delete_retention_ms
        if new_horizon != horizon:
            changed = True
        rewrites.append(Rewrite(entry, out, new_horizon, changed, removed))
    return rewrites


class _Cleaner:
    """One batch at a time, in offset order: what of it a cleaned segment keeps."""

    def __init__(self, latest: dict[bytes, int], aborted: Sequence[AbortedTxn]) -> None:
        self._latest = latest
        self._aborted = aborted
        self._open: set[int] = set()  # producers with transactional data kept since a marker

    def clean(self, batch: RecordBatch, due: bool) -> tuple[bytes | None, int, int]:
        """The batch as kept (None: dropped), the records dropped, and how many of what it
        keeps wait for the delete horizon (tombstones, markers)."""
        if batch.is_control_batch:
            # Needed while data of its transaction is left before it; then kept for
            # delete.retention.ms, as a tombstone is, for readers part way through.
            needed = batch.producer_id in self._open
            self._open.discard(batch.producer_id)
            if needed or not due:
                return batch.to_bytes(), 0, int(not needed)
            return None, batch.record_count, 0
        if not visible(appended(batch), self._aborted):
            return None, batch.record_count, 0
        records = batch.records()
        keep = []
        tombstones = 0
        for record in records:
            if record.key is None or self._latest.get(record.key) != record.offset:
                continue
            if record.value is None:
                if due:
                    continue
                tombstones += 1
            keep.append(record)
        if keep and batch.is_transactional:
            self._open.add(batch.producer_id)
        if len(keep) == len(records):
            return batch.to_bytes(), 0, tombstones
        dropped = len(records) - len(keep)
        return (_rebuild(batch, keep) if keep else None), dropped, tombstones


def _rebuild(batch: RecordBatch, keep: Sequence[Record]) -> bytes:
    builder = RecordBatchBuilder(
        batch.compression,
        base_offset=batch.base_offset,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        timestamp_type=batch.timestamp_type,
        partition_leader_epoch=batch.partition_leader_epoch,
    )
    for record in keep:
        builder.append(
            record.key,
            record.value,
            record.headers,
            record.timestamp,
            offset_delta=record.offset - batch.base_offset,
        )
    log_append = batch.max_timestamp if batch.timestamp_type == "log_append" else None
    return builder.build(log_append_time=log_append, last_offset_delta=batch.last_offset_delta)


def compact(
    meta: MetadataStore,
    objects: ObjectStore,
    topic_id: str,
    partition: int,
    entries: Sequence[LogEntry],
    *,
    delete_retention_ms: int,
    now_ms: Callable[[], int],
    grace_ms: int,
    max_bytes: int | None = MAX_COMPACT_BYTES,
) -> Stats:
    """Clean the partition's segments (``entries``, in offset order) and swap the changed ones'
    index items, each conditional on the segment it replaces. ``max_bytes`` caps what one
    process takes on (None: no cap, for the Spark job)."""
    stats = Stats()
    stable = read_head(meta, topic_id, partition).last_stable_offset
    segments = [e for e in entries if e.is_segment and e.last_offset < stable]
    pk = keys.log_pk(topic_id, partition)
    if max_bytes is not None and sum(e.size for e in segments) > max_bytes:
        stats.skipped.append(pk)
        logger.warning("%s is too large to compact in-process; run the Spark job", pk)
        return stats
    if not segments:
        return stats
    read = [list(batches_from(objects.get(e.object_key, e.start, e.end))) for e in segments]
    aborted = aborted_between(
        meta, topic_id, partition, segments[0].base_offset, segments[-1].last_offset + 1
    )
    planned = plan(
        segments, read, delete_retention_ms=delete_retention_ms, now_ms=now_ms(), aborted=aborted
    )
    rewrites = [r for r in planned if r.changed]
    writes = []
    for rewrite in rewrites:
        builder = SegmentBuilder(rewrite.entry.base_offset)
        for data in rewrite.batches:
            builder.append(RecordBatch(data))
        stored = store_segment(
            objects,
            topic_id,
            partition,
            builder.close(),
            (rewrite.entry.base_offset, rewrite.entry.last_offset),
            delete_horizon_ms=rewrite.delete_horizon_ms,
            appended_ms=rewrite.entry.appended_ms,  # as Kafka's cleaner keeps lastModified
        )
        writes.append((rewrite, stored))
    for start in range(0, len(writes), MAX_TRANSACTION_WRITES - 1):  # and the head
        chunk = writes[start : start + MAX_TRANSACTION_WRITES - 1]
        old_keys = [k for rewrite, _ in chunk for k in rewrite.entry.objects]
        garbage.enqueue(meta, old_keys, now_ms() + grace_ms)
        freed = sum(rewrite.entry.size - new.entry.size for rewrite, new in chunk)
        swaps = [
            Put(new.entry.to_item(pk), Compare("object", "=", rewrite.entry.object_key))
            for rewrite, new in chunk
        ]
        try:
            transact_with_head(meta, pk, swaps, size_delta=-freed)
        except ConflictError:  # a swap's segment changed, or commits kept moving the head
            logger.info("compaction of %s lost to another job; the next pass looks again", pk)
            for _, new in chunk:
                for key in new.keys:
                    garbage.record_orphan(meta, key, now_ms())
            continue
        stats.segments_rewritten += len(chunk)
        stats.records_removed += sum(rewrite.removed for rewrite, _ in chunk)
    return stats
