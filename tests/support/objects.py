"""What a log's objects amount to, for the write path's orphan checks."""

from __future__ import annotations

from typing import Any

from tidelog.log import keys


def object_sets(meta: Any, objects: Any, topic_id: str, partitions: int) -> tuple[set, set, set]:
    """(objects an index item points at, objects recorded as orphans, objects stored)."""
    referenced = {
        str(item["object"])
        for p in range(partitions)
        for item in meta.query(keys.log_pk(topic_id, p), prefix=keys.INDEX_PREFIX)
    }
    orphans = {str(item["sk"]) for item in meta.query(keys.ORPHANS_PK)}
    stored = {info.key for info in objects.list("data/")}
    return referenced, orphans, stored
