"""What a consumer hands out and takes: partitions with offsets, and records, in
confluent-kafka's shape."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tidelog.client.membership import TopicPartitionKey
from tidelog.errors import TidelogError

OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_STORED = -1000
OFFSET_INVALID = -1001
"""confluent-kafka's logical offsets: ``OFFSET_STORED`` the group's committed offset,
``OFFSET_INVALID`` none (what ``committed`` answers for a partition never committed)."""


@dataclass(frozen=True)
class TopicPartition:
    """confluent-kafka's TopicPartition: a partition, with an offset where one is meant."""

    topic: str
    partition: int
    offset: int = OFFSET_INVALID
    metadata: str = ""
    error: TidelogError | None = None

    @property
    def key(self) -> TopicPartitionKey:
        return (self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: str  # CreateTime or LogAppendTime
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def record_from_json(key: TopicPartitionKey, r: Mapping[str, Any]) -> ConsumerRecord:
    """A record as the fetch route answers it with ``"encoding": "base64"``."""
    return ConsumerRecord(
        key[0],
        key[1],
        r["offset"],
        r["timestamp"],
        r["timestamp_type"],
        _decode(r["key"]),
        _decode(r["value"]),
        tuple((h["key"], _decode(h["value"])) for h in r["headers"]),
    )


def _decode(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)
