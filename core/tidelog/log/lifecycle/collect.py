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
from functools import partial

from tidelog.log import flushobject, garbage, keys
from tidelog.log.entries import LogEntry
from tidelog.log.garbage import GC_PK
from tidelog.log.lifecycle import AT_ONCE
from tidelog.log.topics import Topic
from tidelog.records import CorruptRecordError
from tidelog.storage import Delete, MetadataStore, ObjectNotFoundError, ObjectStore
from tidelog.threads import ContextPool

logger = logging.getLogger(__name__)

SEGMENTS_PREFIX = "segments/"
LOG_PREFIXES = ("data/", SEGMENTS_PREFIX)
LAST_MODIFIED_RESOLUTION_MS = 1000
BATCH = 1000  # objects judged together; a run's progress is kept batch by batch
FOOTER_READ = 16 * 1024  # a flush object's last bytes: the footer of some 250 partitions


@dataclass
class Collected:
    deleted: int = 0  # objects deleted
    kept: int = 0  # queued or orphaned, but in use after all
    live: int = 0  # objects the index points at (reconciliation)


def live_objects(meta: MetadataStore, topics: Iterable[Topic]) -> set[str]:
    live: set[str] = set()
    for topic in topics:
        for partition in range(topic.partitions):
            live |= _live_objects(meta, (topic.topic_id, partition))
    return live


def partitions_of(objects: ObjectStore, key: str) -> list[tuple[str, int]] | None:
    """The partitions whose index may point at ``key``; None if the object is gone."""
    parts = key.split("/")
    if parts[0] == SEGMENTS_PREFIX.rstrip("/") and len(parts) >= 3:
        return [(parts[1], int(parts[2]))]
    try:
        tail = objects.tail(key, FOOTER_READ)
        wanted = flushobject.tail_size(tail)
        if wanted > len(tail) == FOOTER_READ:  # a footer of more partitions than one read holds
            tail = objects.tail(key, wanted)
        extents = flushobject.decode_tail(tail)
    except ObjectNotFoundError:
        return None
    except CorruptRecordError:
        logger.warning("object %s has no readable footer: kept for reconciliation", key)
        return []
    return sorted({(e.topic_id, e.partition) for e in extents})


Live = dict[tuple[str, int], set[str]]  # a partition's live objects, read once per run


def in_use(meta: MetadataStore, objects: ObjectStore, key: str) -> bool | None:
    """Does an index item point at ``key``? None if the object is already gone; True if its
    partitions are unknown (only reconciliation may decide)."""
    partitions = partitions_of(objects, key)
    if partitions is None:
        return None
    return not partitions or any(key in _live_objects(meta, p) for p in partitions)


def collect(
    meta: MetadataStore,
    objects: ObjectStore,
    *,
    now_ms: int,
    grace_ms: int,
    at_once: int = AT_ONCE,
) -> Collected:
    """Delete the objects of the queue's due entries and the orphans past their grace period,
    unless in use. Reads only those entries and the partitions they name, each partition at
    most twice, and each object at most once however many entries name it: a flush object is
    queued by every partition that rolls it away. Objects are judged ``BATCH`` at a time, their
    footers read and their deletes made ``at_once`` at a time, and a batch's entries dropped
    once it is done, so a run cut short keeps most of what it did.

    Keeping an object drops its entry for good, so what the run's first read of a partition
    says is in use is judged again once every object is judged, on a second read of that
    partition (its entry kept until then): the first may predate a retention or roll that has
    since let go of the object. One re-read per partition, not per object: a flush object stays
    in use by the partitions that share it until they too roll, and there may be thousands of
    such objects in a run."""
    result = Collected()
    due = [
        (garbage.queued(item), Delete(GC_PK, str(item["sk"])))
        for item in meta.query(GC_PK, hi=f"{now_ms:015d}$")
    ]
    due += [
        ([str(item["sk"])], Delete(keys.ORPHANS_PK, str(item["sk"])))
        for item in meta.query(keys.ORPHANS_PK)
        if int(str(item["recorded_ms"])) + grace_ms <= now_ms
    ]
    judge = _Judge(meta, objects, result)
    judged: set[str] = set()
    batch: list[tuple[list[str], Delete]] = []  # each entry, with the keys it alone brings
    batched = 0
    with ContextPool(at_once, "collect") as pool:
        for object_keys, entry in due:
            fresh = [k for k in object_keys if k not in judged]
            judged.update(fresh)
            batch.append((fresh, entry))
            batched += len(fresh)
            if batched >= BATCH:
                judge.first(pool, batch)
                batch, batched = [], 0
        judge.first(pool, batch)
        judge.again(pool)
    return result


class _Judge:
    """A run's judgements: each partition's live objects as first read, and as read again once
    every first judgement is made; the objects found in use, and the entries that name them."""

    def __init__(self, meta: MetadataStore, objects: ObjectStore, result: Collected) -> None:
        self._meta = meta
        self._objects = objects
        self._result = result
        self._first: Live = {}
        self._again: Live = {}
        self._in_use: dict[str, list[tuple[str, int]]] = {}
        self._held: list[Delete] = []

    def first(self, pool: ContextPool, batch: list[tuple[list[str], Delete]]) -> None:
        """Delete what of the batch's objects nothing points at; drop the entries that name
        none still in use, and hold the others until the objects are judged again."""
        object_keys = [k for keys_, _ in batch for k in keys_]
        footers = pool.map(partial(partitions_of, self._objects), object_keys)
        named = dict(zip(object_keys, footers, strict=True))
        self._result.kept += sum(1 for p in named.values() if p == [])  # only reconcile knows
        known = {key: p for key, p in named.items() if p}  # None: already gone
        for key in self._delete_unused(pool, known, self._first):
            self._in_use[key] = known[key]
        done: list[Delete] = []
        for keys_, entry in batch:
            (self._held if any(k in self._in_use for k in keys_) else done).append(entry)
        list(pool.map(self._meta.write, done))

    def again(self, pool: ContextPool) -> None:
        self._result.kept += len(self._delete_unused(pool, self._in_use, self._again))
        list(pool.map(self._meta.write, self._held))

    def _delete_unused(
        self, pool: ContextPool, named: dict[str, list[tuple[str, int]]], live: Live
    ) -> list[str]:
        """Delete the objects no partition they name points at, by ``live`` (read where it
        lacks one); the objects still in use."""
        unread = sorted({p for partitions in named.values() for p in partitions} - live.keys())
        live.update(zip(unread, pool.map(partial(_live_objects, self._meta), unread), strict=True))
        used = [k for k, partitions in named.items() if any(k in live[p] for p in partitions)]
        unused = named.keys() - set(used)
        list(pool.map(self._objects.delete, unused))
        self._result.deleted += len(unused)
        return used


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


def _live_objects(meta: MetadataStore, partition: tuple[str, int]) -> set[str]:
    pk = keys.log_pk(*partition)
    return {
        o
        for item in meta.query(pk, prefix=keys.INDEX_PREFIX)
        for o in LogEntry.from_item(item).objects
    }
