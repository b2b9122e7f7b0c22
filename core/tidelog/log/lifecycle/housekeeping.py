"""The log's scheduled jobs: roll, retention and compaction over the partitions that are due
(``tidelog.log.due``), garbage collection of what they let go, and a rare reconciliation.

A run's cost follows the work due: an idle partition is never read. Each job is safe to run
concurrently with produce, fetch and another run of itself: every index change is conditional
on what it read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tidelog.log import aborted, due, keys
from tidelog.log.entries import LogEntry, partition_entries, without_leftovers
from tidelog.log.head import high_watermark
from tidelog.log.lifecycle import AT_ONCE, collect, compaction, retention, roll
from tidelog.log.lifecycle.reads import RunReads
from tidelog.log.topics import Topic, Topics, UnknownTopicError
from tidelog.storage import MetadataStore, ObjectStore

logger = logging.getLogger(__name__)

MAINTENANCE_JOBS = ("roll", "retention", "compaction")
COLLECTION_JOBS = ("gc", "reconcile")
JOBS = (*MAINTENANCE_JOBS, *COLLECTION_JOBS)


@dataclass
class Report:
    partitions_visited: int = 0
    segments_rolled: int = 0
    leftovers_deleted: int = 0
    segments_deleted: int = 0
    segments_compacted: int = 0
    records_compacted: int = 0
    objects_deleted: int = 0
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def next_due_ms(
    entries: Sequence[LogEntry],
    configs: Mapping[str, str],
    *,
    now_ms: int,
    settle_ms: int,
    log_start_offset: int = 0,
) -> int | None:
    """When a partition in this state next has housekeeping to do, or None if only new data
    can give it any (pure). ``now_ms`` means work is left now (a pass lost a race)."""
    policy = configs["cleanup.policy"].split(",")
    segment_bytes, segment_ms = int(configs["segment.bytes"]), int(configs["segment.ms"])
    retention_ms = int(configs["retention.ms"])
    rolls = roll.plan(
        entries,
        segment_bytes=segment_bytes,
        segment_ms=segment_ms,
        now_ms=now_ms,
        settle_ms=settle_ms,
    )
    live = without_leftovers(entries)
    if rolls.groups or rolls.leftovers:
        return now_ms
    if _doomed(live, configs, now_ms, log_start_offset):
        return now_ms
    times: list[int] = []
    segments = [e for e in live if e.is_segment]
    last_segment = max((i for i, e in enumerate(live) if e.is_segment), default=-1)
    active = live[last_segment + 1 :]  # the runs not yet rolled
    if active:
        times.append((active[0].appended_ms or 0) + segment_ms)
        times += [
            r.appended_ms + settle_ms
            for r in active
            if r.appended_ms is not None and r.appended_ms + settle_ms > now_ms
        ]
    oldest = live[0].retention_time if live and live[0].is_segment else None
    if "delete" in policy and retention_ms >= 0 and oldest is not None:
        times.append(oldest + retention_ms + 1)
    if "compact" in policy:
        times += [e.delete_horizon_ms for e in segments if e.delete_horizon_ms is not None]
    return min(times) if times else None


def _doomed(
    entries: Sequence[LogEntry], configs: Mapping[str, str], now_ms: int, log_start_offset: int
) -> list[LogEntry]:
    """Retention's segments to delete. Those wholly below the log start go whatever the
    policy, as Kafka's deleteOldSegments has them go."""
    delete = "delete" in configs["cleanup.policy"].split(",")
    return retention.plan(
        entries,
        retention_ms=int(configs["retention.ms"]) if delete else -1,
        retention_bytes=int(configs["retention.bytes"]) if delete else -1,
        now_ms=now_ms,
        log_start_offset=log_start_offset,
    )


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
        at_once: int = AT_ONCE,
    ) -> None:
        self._meta = meta
        self._objects = objects
        self._topics = topics
        self._clock_ms = clock_ms
        self._grace_ms = grace_ms
        self._settle_ms = settle_ms
        self._at_once = at_once

    def run(self, jobs: Iterable[str] = JOBS) -> Report:
        wanted = set(jobs)
        unknown = wanted - set(JOBS)
        if unknown:
            raise ValueError(f"unknown jobs {sorted(unknown)}; choose from {JOBS}")
        report = Report()
        if wanted & set(MAINTENANCE_JOBS):
            self._maintain_due(wanted, report)
        if "gc" in wanted:
            collected = collect.collect(
                self._meta,
                self._objects,
                now_ms=self._clock_ms(),
                grace_ms=self._grace_ms,
                at_once=self._at_once,
            )
            report.objects_deleted += collected.deleted
        if "reconcile" in wanted:
            reconciled = collect.reconcile(
                self._meta,
                self._objects,
                list(self._topics.list()),
                now_ms=self._clock_ms(),
                grace_ms=self._grace_ms,
            )
            report.objects_deleted += reconciled.deleted
        return report

    def _maintain_due(self, jobs: set[str], report: Report) -> None:
        """Visit the partitions that are due. Only a pass of every maintenance job may consume
        their marks and schedule the next visit; a partial one leaves them for the full one."""
        full = set(MAINTENANCE_JOBS) <= jobs
        # One for the pass: the partitions that share a flush object roll in the same one.
        reads = RunReads(self._objects, at_once=self._at_once)
        topics: dict[str, Topic | None] = {}
        for (name, topic_id, partition), marks in due.due_marks(
            self._meta, self._clock_ms()
        ).items():
            if name not in topics:
                topics[name] = self._topic(name)
            topic = topics[name]
            if topic is None or topic.topic_id != topic_id or partition >= topic.partitions:
                if full:
                    due.consume(self._meta, marks)  # the topic is gone: nothing to do
                continue
            entries, log_start = self.maintain(topic, partition, jobs, report, reads)
            report.partitions_visited += 1
            if full:
                self._reschedule(topic, partition, entries, log_start)
                due.consume(self._meta, marks)

    def _topic(self, name: str) -> Topic | None:
        try:
            return self._topics.get(name)
        except UnknownTopicError:
            return None

    def _reschedule(
        self, topic: Topic, partition: int, entries: Sequence[LogEntry], log_start: int
    ) -> None:
        now = self._clock_ms()
        when = next_due_ms(
            entries,
            topic.effective_configs,
            now_ms=now,
            settle_ms=self._settle_ms,
            log_start_offset=log_start,
        )
        if when is not None:
            # Never at or before now: the marks being consumed are, and must stay distinct.
            mark = due.Mark(topic.name, topic.topic_id, partition, max(when, now + 1), now)
            self._meta.write(mark.put())

    def maintain(
        self,
        topic: Topic,
        partition: int,
        jobs: set[str],
        report: Report,
        reads: RunReads | None = None,
    ) -> tuple[list[LogEntry], int]:
        """Run ``jobs`` on one partition; its index entries as they are after, and its log
        start offset. The index is read once, and again only after a job changed it. ``reads``
        is the pass's, shared by every partition it visits."""
        reads = reads or RunReads(self._objects, at_once=self._at_once)
        tid = topic.topic_id
        configs = topic.effective_configs
        policy = configs["cleanup.policy"].split(",")
        entries = partition_entries(self._meta, tid, partition)
        if "roll" in jobs:
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
                    reads=reads,
                    now_ms=self._clock_ms,
                    grace_ms=self._grace_ms,
                )
                if done is None:
                    break  # another job moved the index: the next pass plans again
                report.segments_rolled += 1
            if rolls.leftovers or rolls.groups:
                entries = partition_entries(self._meta, tid, partition)
        log_start = 0  # read only where retention needs it; a partial pass reschedules nothing
        if "retention" in jobs:
            log_start, _ = high_watermark(self._meta, tid, partition)
            doomed = _doomed(without_leftovers(entries), configs, self._clock_ms(), log_start)
            if doomed:
                report.segments_deleted += retention.apply(
                    self._meta,
                    tid,
                    partition,
                    doomed,
                    now_ms=self._clock_ms,
                    grace_ms=self._grace_ms,
                )
                entries = partition_entries(self._meta, tid, partition)
                log_start, _ = high_watermark(self._meta, tid, partition)
                aborted.forget_below(self._meta, tid, partition, log_start)
        if "compaction" in jobs and "compact" in policy:
            stats = compaction.compact(
                self._meta,
                self._objects,
                tid,
                partition,
                without_leftovers(entries),
                delete_retention_ms=int(configs["delete.retention.ms"]),
                now_ms=self._clock_ms,
                grace_ms=self._grace_ms,
            )
            report.segments_compacted += stats.segments_rewritten
            report.records_compacted += stats.records_removed
            report.skipped += stats.skipped
            if stats.segments_rewritten:
                entries = partition_entries(self._meta, tid, partition)
        return entries, log_start
