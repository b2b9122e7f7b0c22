"""Garbage collection: an object is deleted only once nothing points at it and a grace period
has passed, so a fetch that read an index item just before a roll can still GET its bytes.

- **The delayed deletion queue.** A job that is about to stop pointing at objects (roll,
  retention, compaction) first enqueues them (``tidelog.log.garbage``), due = now + grace.
  Enqueued *before* the change, so a crash in between leaves an entry, never a silent leak.
  When an entry is due, its objects are deleted unless something points at them again (the
  change may have failed and left them in use).
- **Orphans** (``("orphans", <key>)``): objects a writer or a job uploaded and never committed;
  collected the same way once ``recorded_ms`` + grace has passed.
- **Reconciliation** (its own job, on a daily schedule). Every object under the log's prefixes
  is checked against the live set of every topic; one nothing points at, older than the grace
  period and not waiting in the queue, is deleted: the orphans of writers that died between PUT
  and commit, which nothing recorded, and the data of deleted topics. It alone reads every
  partition; ``collect`` reads only what is due.

Whether an object is still in use is asked of the partitions that can point at it, not of the
whole log: a segment names its partition in its key, a flush object lists its partitions in its
footer. Index items of a deleted topic count as pointing (they may be read until the topic is
gone for good); reconciliation, which knows only live topics, collects those objects.

The grace period must outlast the longest window between a PUT and the commit that references
it (a produce's, a roll's), and the longest fetch; the default hour does, by far.

``now_ms`` is taken before the live set is read, and objects are listed after: an object
created since is younger than ``now_ms`` itself, so never older than the grace period. S3's
LastModified has whole seconds; a second is added to it before comparing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from tidelog.log import flushobject, garbage, keys
from tidelog.log.entries import LogEntry
from tidelog.log.garbage import GC_PK
from tidelog.log.topics import Topic
from tidelog.records import CorruptRecordError
from tidelog.storage import Delete, MetadataStore, ObjectNotFoundError, ObjectStore

logger = logging.getLogger(__name__)

SEGMENTS_PREFIX = "segments/"
LOG_PREFIXES = ("data/", SEGMENTS_PREFIX)
LAST_MODIFIED_RESOLUTION_MS = 1000


@dataclass
class Collected:
    deleted: int = 0  # objects deleted
    kept: int = 0  # queued or orphaned, but in use after all
    live: int = 0  # objects the index points at (reconciliation)


def live_objects(meta: MetadataStore, topics: Iterable[Topic]) -> set[str]:
    live: set[str] = set()
    for topic in topics:
        for partition in range(topic.partitions):
            pk = keys.log_pk(topic.topic_id, partition)
            for item in meta.query(pk, prefix=keys.INDEX_PREFIX):
                live.update(LogEntry.from_item(item).objects)
    return live


def partitions_of(objects: ObjectStore, key: str) -> list[tuple[str, int]] | None:
    """The partitions whose index may point at ``key``; None if the object is gone."""
    parts = key.split("/")
    if parts[0] == SEGMENTS_PREFIX.rstrip("/") and len(parts) >= 3:
        return [(parts[1], int(parts[2]))]
    try:
        data = objects.get(key)
    except ObjectNotFoundError:
        return None
    try:
        extents = flushobject.decode_footer(data)
    except CorruptRecordError:
        logger.warning("object %s has no readable footer: kept for reconciliation", key)
        return []
    return sorted({(e.topic_id, e.partition) for e in extents})


Live = dict[tuple[str, int], set[str]]  # a partition's live objects, read once per run


def in_use(
    meta: MetadataStore, objects: ObjectStore, key: str, live: Live | None = None
) -> bool | None:
    """Does an index item point at ``key``? None if the object is already gone. ``live``
    keeps each partition's index as read, so a run reads it once however many objects ask."""
    partitions = partitions_of(objects, key)
    if partitions is None:
        return None
    if not partitions:
        return True  # unknown partitions: only reconciliation may decide
    live = {} if live is None else live
    for partition in partitions:
        if partition not in live:
            pk = keys.log_pk(*partition)
            live[partition] = {
                o
                for item in meta.query(pk, prefix=keys.INDEX_PREFIX)
                for o in LogEntry.from_item(item).objects
            }
        if key in live[partition]:
            return True
    return False


def collect(meta: MetadataStore, objects: ObjectStore, *, now_ms: int, grace_ms: int) -> Collected:
    """Delete the objects of the queue's due entries and the orphans past their grace period,
    unless in use. Reads only those entries and the partitions they name, each partition at
    most twice, and each object at most twice however many entries name it: a flush object
    is queued once by each partition that rolls it away.

    Keeping an object drops its entry for good, so what the run's first read of a partition
    says is in use is judged again at the end, on a second read of that partition: the first
    may predate a retention or roll that has since let go of the object. One re-read per
    partition, not per object: a flush object stays in use by the partitions that share it
    until they too roll, and there may be a thousand such objects in a run."""
    result = Collected()
    live: Live = {}
    judge_again: list[tuple[list[str], Delete]] = []  # and the entry to drop once judged
    due = [
        (garbage.queued(item), Delete(GC_PK, str(item["sk"])))
        for item in meta.query(GC_PK, hi=f"{now_ms:015d}$")
    ]
    due += [
        ([str(item["sk"])], Delete(keys.ORPHANS_PK, str(item["sk"])))
        for item in meta.query(keys.ORPHANS_PK)
        if int(str(item["recorded_ms"])) + grace_ms <= now_ms
    ]
    judged: set[str] = set()
    for object_keys, entry in due:
        fresh_keys = [k for k in object_keys if k not in judged]
        judged.update(fresh_keys)
        kept = [k for k in fresh_keys if _delete_unless_in_use(meta, objects, k, result, live)]
        if kept:
            judge_again.append((kept, entry))
        else:
            meta.write(entry)
    fresh: Live = {}
    for kept, entry in judge_again:
        for key in kept:
            if _delete_unless_in_use(meta, objects, key, result, fresh):
                result.kept += 1
        meta.write(entry)
    return result


def reconcile(
    meta: MetadataStore,
    objects: ObjectStore,
    topics: Iterable[Topic],
    *,
    now_ms: int,
    grace_ms: int,
) -> Collected:
    """Delete every log object that no live topic points at, older than the grace period and
    not waiting in the queue or as an orphan. Reads the whole index: run it rarely."""
    result = Collected()
    live = live_objects(meta, topics)
    result.live = len(live)
    waiting = {key for item in meta.query(GC_PK) for key in garbage.queued(item)}
    waiting |= {str(item["sk"]) for item in meta.query(keys.ORPHANS_PK)}
    for prefix in LOG_PREFIXES:
        for info in objects.list(prefix):
            if info.key in live or info.key in waiting:
                continue
            if info.last_modified_ms + LAST_MODIFIED_RESOLUTION_MS + grace_ms <= now_ms:
                logger.info("collecting unreferenced object %s", info.key)
                objects.delete(info.key)
                result.deleted += 1
    return result


def _delete_unless_in_use(
    meta: MetadataStore, objects: ObjectStore, key: str, result: Collected, live: Live
) -> bool:
    """Delete ``key`` unless ``live`` says it is in use; whether it is."""
    used = in_use(meta, objects, key, live)
    if used is False:
        objects.delete(key)
        result.deleted += 1
    return bool(used)
