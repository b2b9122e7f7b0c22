"""A group's committed offsets with their lag: in records (the high watermark minus the
committed offset) and in time (how long ago the first unconsumed record was written)."""

from __future__ import annotations

import contextlib

from tidelog.errors import TidelogError
from tidelog.groups.coordinator import Coordinator
from tidelog.groups.model import validate_group_id
from tidelog.log.read.fetch import LogReader
from tidelog.log.topics import Topic, Topics


def committed_with_lag(
    coordinator: Coordinator, topics: Topics, reader: LogReader, group: str, now_ms: int
) -> list[dict[str, object]]:
    validate_group_id(group)
    committed_offsets = sorted(coordinator.committed(group).items())
    found: dict[str, Topic] = {}
    for topic_name in {name for (name, _), _ in committed_offsets}:
        # A deleted topic's offsets mean nothing now: they are left out.
        with contextlib.suppress(TidelogError):
            found[topic_name] = topics.get(topic_name)
    bounds = reader.heads([(found[t].topic_id, p) for (t, p), _ in committed_offsets if t in found])
    rows: list[dict[str, object]] = []
    for (topic_name, partition), committed in committed_offsets:
        if topic_name not in found:
            continue
        topic = found[topic_name]
        log_start, end = bounds[(topic.topic_id, partition)]
        lag = max(0, end - committed.offset)
        lag_ms = 0
        if lag:
            data = reader.fetch(topic.topic_id, partition, max(committed.offset, log_start), 1)
            stamps = [
                r.timestamp
                for b in data.batches
                for r in b.batch.records()
                if r.offset >= committed.offset
            ]
            if stamps:
                lag_ms = max(0, now_ms - stamps[0])
        rows.append(
            {
                "topic": topic_name,
                "partition": partition,
                "offset": committed.offset,
                "metadata": committed.metadata,
                "commit_ms": committed.commit_ms,
                "high_watermark": end,
                "lag": lag,
                "lag_ms": lag_ms,
            }
        )
    return rows
