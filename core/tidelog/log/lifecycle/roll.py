"""The roller: runs (ranges of flush objects) merged into Kafka segments on S3.

The unrolled runs after a partition's last segment are its *active segment*. Kafka rolls when the
active segment is full (``segment.bytes``) or old (``segment.ms``); so does this, in the
background: full groups of runs roll whenever they exist, the last partial group once its first
run was committed ``segment.ms`` ago, or once it holds ``MAX_ACTIVE_RUNS`` runs. That last rule
is tidelog's own: each run is an index item that housekeeping reads, so a partition fed by small
requests would otherwise pile up millions of them before reaching ``segment.bytes``; a segment
smaller than ``segment.bytes`` is one Kafka allows too (the setting is a maximum). A run
younger than ``settle_ms`` is left alone, so a writer that lost a commit's response can still
find its index item when it reads back.

A roll writes ``<base>.log``, ``.index`` and ``.timeindex`` (new keys, create-only), then swaps
the index in transactions of at most 100 writes: the first replaces the first run's item with
the segment's (conditional on it still being that run) and deletes up to 99 more; later ones
delete the rest. Between them, the runs still present hold the same bytes at the same offsets
as the segment, so readers stay correct; a later pass deletes runs a crash left behind.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tidelog.errors import ConflictError
from tidelog.log import garbage, keys
from tidelog.log.entries import LogEntry, split_leftovers
from tidelog.log.head import transact_with_head
from tidelog.log.lifecycle.reads import RunReads
from tidelog.log.scan import committed_batches
from tidelog.log.segment import Segment, SegmentBuilder
from tidelog.storage import (
    Compare,
    Condition,
    ConditionFailedError,
    Delete,
    MetadataStore,
    ObjectStore,
    Put,
    Write,
    all_of,
    put_new,
)
from tidelog.storage.metadata import MAX_TRANSACTION_WRITES

logger = logging.getLogger(__name__)

MAX_ROLL_BYTES = 128 * 1024 * 1024  # a roll is built in memory: Lambda's, or the host's
MAX_ACTIVE_RUNS = 1000  # beyond this many settled runs, the active segment rolls early


@dataclass(frozen=True)
class RollPlan:
    groups: list[list[LogEntry]]  # each becomes one segment
    leftovers: list[LogEntry]  # runs inside a segment's range: a half-done roll's remains


def plan(
    entries: Sequence[LogEntry],
    *,
    segment_bytes: int,
    segment_ms: int,
    now_ms: int,
    settle_ms: int,
) -> RollPlan:
    """What to roll, given a partition's index entries in offset order (pure)."""
    live, leftovers = split_leftovers(entries)
    active: list[LogEntry] = []  # the runs after the last segment
    for entry in live:
        if entry.is_segment:
            active.clear()
        else:
            active.append(entry)
    settled = []
    for entry in active:
        if entry.appended_ms is not None and entry.appended_ms + settle_ms > now_ms:
            break
        settled.append(entry)
    limit = max(1, min(segment_bytes, MAX_ROLL_BYTES))
    groups: list[list[LogEntry]] = []
    current: list[LogEntry] = []
    size = 0
    for entry in settled:
        if current and (size + entry.size > limit or len(current) >= MAX_ACTIVE_RUNS):
            groups.append(current)
            current, size = [], 0
        current.append(entry)
        size += entry.size
    if current:
        full = size >= limit or len(current) >= MAX_ACTIVE_RUNS
        first_appended = current[0].appended_ms if current[0].appended_ms is not None else 0
        if full or now_ms - first_appended >= segment_ms:
            groups.append(current)
    return RollPlan(groups, leftovers)


def _write_id() -> str:
    return uuid.uuid4().hex[:16]


@dataclass(frozen=True)
class Stored:
    entry: LogEntry  # the segment's index entry
    keys: tuple[str, str, str]


def store_segment(
    objects: ObjectStore,
    topic_id: str,
    partition: int,
    segment: Segment,
    offsets: tuple[int, int],
    *,
    delete_horizon_ms: int | None = None,
    appended_ms: int | None = None,
) -> Stored:
    """PUT the three files as ``segments/<topic id>/<partition>/<write id>/<20-digit base>.*``
    (Kafka's names, under a directory per write: a compacted rewrite keeps the base offset);
    the entry that points at them, covering ``offsets`` (not yet committed)."""
    base_offset, last_offset = offsets
    write = _write_id()
    prefix = f"segments/{topic_id}/{partition}/{write}/{base_offset:0{keys.OFFSET_WIDTH}d}"
    log_key, index_key, time_key = f"{prefix}.log", f"{prefix}.index", f"{prefix}.timeindex"
    put_new(objects, log_key, segment.log)
    put_new(objects, index_key, segment.index)
    put_new(objects, time_key, segment.timeindex)
    entry = LogEntry(
        base_offset=base_offset,
        last_offset=last_offset,
        object_key=log_key,
        start=0,
        end=len(segment.log),
        batches=segment.batches,
        max_timestamp=segment.max_timestamp,
        index=index_key,
        timeindex=time_key,
        delete_horizon_ms=delete_horizon_ms,
        appended_ms=appended_ms,
    )
    return Stored(entry, (log_key, index_key, time_key))


def build_segment(reads: RunReads, runs: Sequence[LogEntry]) -> Segment:
    """Read the runs, write their committed offsets into the batches, index them as Kafka does."""
    builder = SegmentBuilder(runs[0].base_offset)
    for run, data in zip(runs, reads.read(runs), strict=True):
        for batch in committed_batches(run, data):
            builder.append(batch)
    return builder.close()


def roll(
    meta: MetadataStore,
    objects: ObjectStore,
    topic_id: str,
    partition: int,
    runs: Sequence[LogEntry],
    *,
    reads: RunReads,
    now_ms: Callable[[], int],
    grace_ms: int,
) -> LogEntry | None:
    """Merge ``runs`` into one segment and swap the index; the segment's entry, or None if
    another job changed the runs first (its files are then left as orphans to collect)."""
    segment = build_segment(reads, runs)
    # When its records were last appended: Kafka's segment file's last modification, which
    # retention falls back to for records without a timestamp (LogEntry.retention_time).
    appended = [r.appended_ms for r in runs if r.appended_ms is not None]
    stored = store_segment(
        objects,
        topic_id,
        partition,
        segment,
        (runs[0].base_offset, runs[-1].last_offset),
        appended_ms=max(appended, default=None),
    )
    garbage.enqueue(meta, {r.object_key for r in runs}, now_ms() + grace_ms)
    pk = keys.log_pk(topic_id, partition)
    first, rest = runs[0], list(runs[1:])
    writes: list[Write] = [Put(stored.entry.to_item(pk), _still(first))]
    take = MAX_TRANSACTION_WRITES - 2  # and the head, should the bytes differ
    writes += [_delete(pk, r) for r in rest[:take]]
    # The same batches, re-based: the same bytes, so the head is written only if they differ.
    grown = stored.entry.size - sum(r.size for r in runs)
    try:
        transact_with_head(meta, pk, writes, size_delta=grown)
    except ConflictError:
        logger.info("roll of %s from %d lost to another job", pk, first.base_offset)
        for key in stored.keys:
            garbage.record_orphan(meta, key, now_ms())
        return None
    delete_leftovers(meta, pk, rest[take:])
    return stored.entry


def delete_leftovers(meta: MetadataStore, pk: str, runs: Sequence[LogEntry]) -> None:
    for start in range(0, len(runs), MAX_TRANSACTION_WRITES):
        chunk = runs[start : start + MAX_TRANSACTION_WRITES]
        try:
            meta.transact([_delete(pk, r) for r in chunk])
        except ConditionFailedError:
            logger.info("leftover runs of %s changed under us; the next pass looks again", pk)
            return


def _still(entry: LogEntry) -> Condition:
    return all_of(Compare("object", "=", entry.object_key), Compare("start", "=", entry.start))


def _delete(pk: str, entry: LogEntry) -> Delete:
    return Delete(pk, keys.index_sk(entry.base_offset), _still(entry))
