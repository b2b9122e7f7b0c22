"""Which partitions housekeeping visits, so that its cost follows activity, not partitions.

A partition needs roll, retention or compaction only after something happened to it, or at a
time its own state names. Both are kept as *marks* in a small time-ordered set, sharded over
``keys.DUE_SHARDS`` keys: ``("due#<shard>", "<due ms>#<topic_id>#<partition>")``.

- **Activity**: every commit that appends to a partition puts its mark at due time 0, in the
  commit's own transaction (one item, rewritten in place by each commit). So does a change to a
  topic's housekeeping configs.
- **Schedules**: after a full maintenance pass over a partition, ``next_due_ms`` says when its
  state next calls for work (``housekeeping.next_due_ms``: a run settling, ``segment.ms``
  closing the active segment, the oldest segment leaving ``retention.ms``, a tombstone horizon
  passing) and a mark is put there.
- **A run** reads, per shard, only the marks due by now: an idle partition costs nothing, and a
  run with nothing due costs ``DUE_SHARDS`` queries. Marks are deleted after the pass, each on
  condition that no commit rewrote it meanwhile (``marked_ms``), so a mark is never lost: a
  pass that crashes leaves it, and a commit during a pass makes the next run look again.

This module is imported by the commit path, so it imports nothing of housekeeping's.

Marks are hints, never truth: a stale one (a deleted topic, an earlier schedule) costs one
visit that finds nothing to do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tidelog.log import keys
from tidelog.storage import Compare, ConditionFailedError, Delete, MetadataStore, Put

ACTIVE_MS = 0  # the due time of a commit's mark: at once


@dataclass(frozen=True)
class Mark:
    topic: str  # the name: the topic item's key
    topic_id: str
    partition: int
    due_ms: int
    marked_ms: int

    @property
    def key(self) -> tuple[str, str]:
        return (
            keys.due_pk(keys.due_shard(self.topic_id, self.partition)),
            keys.due_sk(self.due_ms, self.topic_id, self.partition),
        )

    def put(self) -> Put:
        pk, sk = self.key
        return Put(
            {
                "pk": pk,
                "sk": sk,
                "topic": self.topic,
                "topic_id": self.topic_id,
                "partition": self.partition,
                "marked_ms": self.marked_ms,
            }
        )

    def delete(self) -> Delete:
        """Unless it was marked again since it was read."""
        return Delete(*self.key, Compare("marked_ms", "=", self.marked_ms))

    @classmethod
    def from_item(cls, item: Mapping[str, object]) -> Mark:
        return cls(
            topic=str(item["topic"]),
            topic_id=str(item["topic_id"]),
            partition=int(str(item["partition"])),
            due_ms=int(str(item["sk"]).split("#", 1)[0]),
            marked_ms=int(str(item["marked_ms"])),
        )


def active(topic: str, topic_id: str, partition: int, now_ms: int) -> Put:
    """The mark a commit (or a config change) puts: visit this partition at the next run."""
    return Mark(topic, topic_id, partition, ACTIVE_MS, now_ms).put()


PartitionKey = tuple[str, str, int]  # (topic name, topic id, partition)


def due_marks(meta: MetadataStore, now_ms: int) -> dict[PartitionKey, list[Mark]]:
    """Every mark due by ``now_ms``, by partition: ``DUE_SHARDS`` queries, whatever the number
    of partitions."""
    due: dict[PartitionKey, list[Mark]] = {}
    for shard in range(keys.DUE_SHARDS):
        for item in meta.query(keys.due_pk(shard), hi=keys.due_until(now_ms)):
            mark = Mark.from_item(item)
            due.setdefault((mark.topic, mark.topic_id, mark.partition), []).append(mark)
    return due


def consume(meta: MetadataStore, marks: Sequence[Mark]) -> None:
    for mark in marks:
        # A mark rewritten during the pass stays: the next run visits once more.
        with contextlib.suppress(ConditionFailedError):
            meta.write(mark.delete())
