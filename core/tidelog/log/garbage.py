"""Handing objects to the garbage collector (tidelog.log.lifecycle.collect), which deletes
them once nothing points at them and a grace period has passed.

- ``("gc", "<due ms>#<digest>")`` with ``objects``, their keys: objects a job is about to stop
  pointing at (roll, retention, compaction), enqueued *before* the change, so a crash in between
  leaves an entry, never a silent leak. One item holds many keys: a roll lets go of up to a
  thousand flush objects at once, and a write for each would be most of what the roll costs
  (and all of them would land on one partition key). The digest names the set of keys, so a
  job that enqueues the same set again writes the same item.
- ``("orphans", <key>)``: an object uploaded and never committed (a failed produce, a job that
  lost its race), recorded when it is known.

Writers and jobs only hand objects over; nothing here deletes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator

from tidelog.log import keys
from tidelog.storage import Item, MetadataStore, Put

GC_PK = "gc"
MAX_ITEM_KEY_BYTES = 256 * 1024  # of DynamoDB's 400 KB an item may hold


def record_orphan(meta: MetadataStore, object_key: str, now_ms: int) -> None:
    meta.write(Put({"pk": keys.ORPHANS_PK, "sk": object_key, "recorded_ms": now_ms}))


def enqueue(meta: MetadataStore, object_keys: Iterable[str], due_ms: int) -> None:
    for batch in _batches(sorted(set(object_keys))):
        digest = hashlib.blake2b("\n".join(batch).encode(), digest_size=8).hexdigest()
        meta.write(Put({"pk": GC_PK, "sk": f"{due_ms:015d}#{digest}", "objects": batch}))


def queued(item: Item) -> list[str]:
    """The keys a queue item holds (items written by earlier versions hold one, as ``object``)."""
    held = item.get("objects")
    if isinstance(held, list):
        return [str(key) for key in held]
    return [str(item["object"])]


def _batches(object_keys: list[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for key in object_keys:
        if batch and size + len(key) > MAX_ITEM_KEY_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(key)
        size += len(key)
    if batch:
        yield batch
