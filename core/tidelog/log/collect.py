"""Garbage collection: an object is deleted only once nothing points at it and a grace period
has passed, so a fetch that read an index item just before a roll can still GET its bytes.

- **The delayed deletion queue.** A job that is about to stop pointing at objects (roll,
  retention, compaction) first enqueues them, ``("gc", "<due ms>#<key>")`` with due = now + grace.
  Enqueued *before* the change, so a crash in between leaves an entry, never a silent leak.
  When an entry is due, its object is deleted unless something points at it again (the change
  may have failed and left it in use).
- **Orphans** (``("orphans", <key>)``): objects a writer or a job uploaded and never committed;
  collected the same way once ``recorded_ms`` + grace has passed.
- **Reconciliation.** Every object under the log's prefixes is checked against the live set;
  one nothing points at, older than the grace period and not waiting in the queue, is deleted
  (the orphans of writers that died between PUT and commit, which nothing recorded).

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

from tidelog.log import keys
from tidelog.log.entries import LogEntry
from tidelog.log.topics import Topic
from tidelog.storage import Delete, MetadataStore, ObjectStore, Put

logger = logging.getLogger(__name__)

GC_PK = "gc"
LOG_PREFIXES = ("data/", "segments/")
LAST_MODIFIED_RESOLUTION_MS = 1000


def record_orphan(meta: MetadataStore, object_key: str, now_ms: int) -> None:
    meta.write(Put({"pk": keys.ORPHANS_PK, "sk": object_key, "recorded_ms": now_ms}))


def enqueue(meta: MetadataStore, object_keys: Iterable[str], due_ms: int) -> None:
    for key in sorted(set(object_keys)):
        meta.write(Put({"pk": GC_PK, "sk": f"{due_ms:015d}#{key}", "object": key}))


@dataclass
class Collected:
    deleted: int = 0  # objects deleted
    kept: int = 0  # queued or orphaned, but in use after all
    live: int = 0  # objects the index points at


def live_objects(meta: MetadataStore, topics: Iterable[Topic]) -> set[str]:
    live: set[str] = set()
    for topic in topics:
        for partition in range(topic.partitions):
            pk = keys.log_pk(topic.topic_id, partition)
            for item in meta.query(pk, prefix=keys.INDEX_PREFIX):
                live.update(LogEntry.from_item(item).objects)
    return live


def collect(
    meta: MetadataStore,
    objects: ObjectStore,
    topics: Iterable[Topic],
    *,
    now_ms: int,
    grace_ms: int,
) -> Collected:
    result = Collected()
    live = live_objects(meta, topics)
    result.live = len(live)
    waiting: set[str] = set()

    for item in meta.query(GC_PK):
        key, due = str(item["object"]), int(str(item["sk"]).split("#", 1)[0])
        if due > now_ms:
            waiting.add(key)
            continue
        _delete_unless_live(objects, key, live, result)
        meta.write(Delete(GC_PK, str(item["sk"])))

    for item in meta.query(keys.ORPHANS_PK):
        key = str(item["sk"])
        if int(str(item["recorded_ms"])) + grace_ms > now_ms:
            waiting.add(key)
            continue
        _delete_unless_live(objects, key, live, result)
        meta.write(Delete(keys.ORPHANS_PK, key))

    for prefix in LOG_PREFIXES:
        for info in objects.list(prefix):
            if info.key in live or info.key in waiting:
                continue
            if info.last_modified_ms + LAST_MODIFIED_RESOLUTION_MS + grace_ms <= now_ms:
                logger.info("collecting unreferenced object %s", info.key)
                objects.delete(info.key)
                result.deleted += 1
    return result


def _delete_unless_live(objects: ObjectStore, key: str, live: set[str], result: Collected) -> None:
    if key in live:
        result.kept += 1
        return
    objects.delete(key)
    result.deleted += 1
