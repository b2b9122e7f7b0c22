"""The log's scheduled jobs, over every partition of every topic: roll, retention, compaction,
then garbage collection. Each job is safe to run concurrently with produce, fetch and another
run of itself: every index change is conditional on what it read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tidelog.log import collect, compaction, keys, retention, roll
from tidelog.log.entries import LogEntry, without_leftovers
from tidelog.log.topics import Topic, Topics
from tidelog.storage import MetadataStore, ObjectStore

logger = logging.getLogger(__name__)

MAINTENANCE_JOBS = ("roll", "retention", "compaction")
JOBS = (*MAINTENANCE_JOBS, "gc")


@dataclass
class Report:
    segments_rolled: int = 0
    leftovers_deleted: int = 0
    segments_deleted: int = 0
    segments_compacted: int = 0
    records_compacted: int = 0
    objects_deleted: int = 0
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def partition_entries(meta: MetadataStore, topic_id: str, partition: int) -> list[LogEntry]:
    pk = keys.log_pk(topic_id, partition)
    return [LogEntry.from_item(i) for i in meta.query(pk, prefix=keys.INDEX_PREFIX)]


class Housekeeper:
    def __init__(
        self,
        meta: MetadataStore,
        objects: ObjectStore,
        topics: Topics,
        *,
        clock_ms: Callable[[], int],
        grace_ms: int,
        settle_ms: int,
    ) -> None:
        self._meta = meta
        self._objects = objects
        self._topics = topics
        self._clock_ms = clock_ms
        self._grace_ms = grace_ms
        self._settle_ms = settle_ms

    def run(self, jobs: Iterable[str] = JOBS) -> Report:
        wanted = set(jobs)
        unknown = wanted - set(JOBS)
        if unknown:
            raise ValueError(f"unknown jobs {sorted(unknown)}; choose from {JOBS}")
        report = Report()
        topics = list(self._topics.list())
        if wanted & set(MAINTENANCE_JOBS):
            for topic in topics:
                for partition in range(topic.partitions):
                    self.maintain(topic, partition, wanted, report)
        if "gc" in wanted:
            collected = collect.collect(
                self._meta, self._objects, topics, now_ms=self._clock_ms(), grace_ms=self._grace_ms
            )
            report.objects_deleted += collected.deleted
        return report

    def maintain(self, topic: Topic, partition: int, jobs: set[str], report: Report) -> None:
        tid = topic.topic_id
        configs = topic.effective_configs
        policy = configs["cleanup.policy"].split(",")
        if "roll" in jobs:
            entries = partition_entries(self._meta, tid, partition)
            rolls = roll.plan(
                entries,
                segment_bytes=int(configs["segment.bytes"]),
                segment_ms=int(configs["segment.ms"]),
                now_ms=self._clock_ms(),
                settle_ms=self._settle_ms,
            )
            if rolls.leftovers:
                roll.delete_leftovers(self._meta, keys.log_pk(tid, partition), rolls.leftovers)
                report.leftovers_deleted += len(rolls.leftovers)
            for group in rolls.groups:
                done = roll.roll(
                    self._meta,
                    self._objects,
                    tid,
                    partition,
                    group,
                    now_ms=self._clock_ms,
                    grace_ms=self._grace_ms,
                )
                if done is None:
                    break  # another job moved the index: the next pass plans again
                report.segments_rolled += 1
        if "retention" in jobs and "delete" in policy:
            entries = without_leftovers(partition_entries(self._meta, tid, partition))
            doomed = retention.plan(
                entries,
                retention_ms=int(configs["retention.ms"]),
                retention_bytes=int(configs["retention.bytes"]),
                now_ms=self._clock_ms(),
            )
            if doomed:
                report.segments_deleted += retention.apply(
                    self._meta,
                    tid,
                    partition,
                    doomed,
                    now_ms=self._clock_ms,
                    grace_ms=self._grace_ms,
                )
        if "compaction" in jobs and "compact" in policy:
            entries = without_leftovers(partition_entries(self._meta, tid, partition))
            stats = compaction.compact(
                self._meta,
                self._objects,
                tid,
                partition,
                entries,
                delete_retention_ms=int(configs["delete.retention.ms"]),
                now_ms=self._clock_ms,
                grace_ms=self._grace_ms,
            )
            report.segments_compacted += stats.segments_rewritten
            report.records_compacted += stats.records_removed
            report.skipped += stats.skipped
