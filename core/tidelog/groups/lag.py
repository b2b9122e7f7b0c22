"""A group's committed offsets with their lag: in records (the high watermark minus the
committed offset) and in time (how long ago the first unconsumed record was written)."""

from __future__ import annotations

from tidelog.errors import TidelogError
from tidelog.groups.coordinator import Coordinator
from tidelog.groups.model import validate_group_id
from tidelog.log.fetch import LogReader
from tidelog.log.topics import Topics


def committed_with_lag(
    coordinator: Coordinator, topics: Topics, reader: LogReader, group: str, now_ms: int
) -> list[dict[str, object]]:
    validate_group_id(group)
    rows: list[dict[str, object]] = []
    for (topic_name, partition), committed in sorted(coordinator.committed(group).items()):
        try:
            topic = topics.get(topic_name)
        except TidelogError:
            continue  # the topic was deleted; its offsets mean nothing now
        log_start, end = reader.head(topic.topic_id, partition)
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
