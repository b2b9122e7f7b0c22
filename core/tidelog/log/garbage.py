"""Handing objects to the garbage collector (tidelog.log.lifecycle.collect), which deletes
them once nothing points at them and a grace period has passed.

- ``("gc", "<due ms>#<key>")``: an object a job is about to stop pointing at (roll, retention,
  compaction), enqueued *before* the change, so a crash in between leaves an entry, never a
  silent leak.
- ``("orphans", <key>)``: an object uploaded and never committed (a failed produce, a job that
  lost its race), recorded when it is known.

Writers and jobs only hand objects over; nothing here deletes.
"""

from __future__ import annotations

from collections.abc import Iterable

from tidelog.log import keys
from tidelog.storage import MetadataStore, Put

GC_PK = "gc"


def record_orphan(meta: MetadataStore, object_key: str, now_ms: int) -> None:
    meta.write(Put({"pk": keys.ORPHANS_PK, "sk": object_key, "recorded_ms": now_ms}))


def enqueue(meta: MetadataStore, object_keys: Iterable[str], due_ms: int) -> None:
    for key in sorted(set(object_keys)):
        meta.write(Put({"pk": GC_PK, "sk": f"{due_ms:015d}#{key}", "object": key}))
