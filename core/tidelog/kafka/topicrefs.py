"""Topics as requests name them: by name, or by id from the versions of KIP-516 on (Fetch 13+,
Produce 13+, Metadata 12+, ConsumerGroupHeartbeat). Answers carry both; each version keeps the
one it has (tidelog.kafka.codec)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from tidelog import runtime
from tidelog.errors import TidelogError
from tidelog.kafka.codec import field
from tidelog.log.topics import Topic

NO_ID = uuid.UUID(int=0)  # Kafka's Uuid.ZERO_UUID: no topic


@dataclass(frozen=True)
class TopicRef:
    name: str  # "" when an id named the topic and it is not known
    topic_id: uuid.UUID  # NO_ID when a name did and the answer's version has no id
    error: TidelogError | None = None
    # The topic an id named, as it was looked up (refs are keys: it takes no part in their
    # equality).
    found: Topic | None = dataclass_field(default=None, compare=False)


def topic_ref(entry: Any, name_field: str) -> TopicRef:
    """The topic a request's entry names: its ``name_field``, or else its ``topic_id``."""
    name = field(entry, name_field)
    if name is not None:
        return TopicRef(str(name), NO_ID)
    topic_id = field(entry, "topic_id") or NO_ID
    try:
        found = runtime.topic_cache().by_id(str(topic_id))
    except TidelogError as exc:
        return TopicRef("", topic_id, exc)
    return TopicRef(found.name, topic_id, found=found)
