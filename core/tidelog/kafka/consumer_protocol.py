"""The bytes a Kafka consumer puts in JoinGroup and reads from SyncGroup (Kafka's
ConsumerProtocolSubscription and ConsumerProtocolAssignment, through kio): a version, then the
body of that version.

Readers take any version from 0 and ignore what follows the newest body they know, as Kafka's
ConsumerProtocol does: a newer client's extra fields come last.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Sequence
from typing import Any

from kio.schema.consumer_protocol_assignment.v0.data import (
    ConsumerProtocolAssignment,
)
from kio.schema.consumer_protocol_assignment.v0.data import (
    TopicPartition as AssignedPartitions,
)
from kio.schema.consumer_protocol_subscription.v0.data import (
    ConsumerProtocolSubscription as SubscriptionV0,
)
from kio.schema.consumer_protocol_subscription.v1.data import (
    ConsumerProtocolSubscription as SubscriptionV1,
)
from kio.schema.consumer_protocol_subscription.v2.data import (
    ConsumerProtocolSubscription as SubscriptionV2,
)
from kio.schema.consumer_protocol_subscription.v3.data import (
    ConsumerProtocolSubscription as SubscriptionV3,
)
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from tidelog.assignors import TopicPartition
from tidelog.errors import InvalidRequestError

PROTOCOL_TYPE = "consumer"
_VERSION = struct.Struct(">h")
_SUBSCRIPTIONS: Sequence[type[Any]] = (
    SubscriptionV0,
    SubscriptionV1,
    SubscriptionV2,
    SubscriptionV3,
)


def read_subscription(metadata: bytes) -> tuple[str, ...]:
    """The topics a member subscribes to (what else it says, the server does not need: it
    knows what each member owns and runs the assignor itself)."""
    body = _read(metadata, _SUBSCRIPTIONS, "subscription")
    return tuple(str(t) for t in body.topics)


def read_owned(metadata: bytes) -> tuple[TopicPartition, ...]:
    """The partitions a member says it still owns (v1 on, KIP-429): what a cooperative member
    of a consumer group gives up by leaving out of its next JoinGroup. None before v1."""
    body = _read(metadata, _SUBSCRIPTIONS, "subscription")
    owned = getattr(body, "owned_partitions", ())
    return tuple(TopicPartition(str(t.topic), int(p)) for t in owned for p in t.partitions)


def write_subscription(topics: Iterable[str]) -> bytes:
    return _write(SubscriptionV0(topics=tuple(topics), user_data=None))


def write_assignment(partitions: Iterable[TopicPartition]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return _write(
        ConsumerProtocolAssignment(
            assigned_partitions=tuple(
                AssignedPartitions(topic=TopicName(t), partitions=tuple(i32(p) for p in ps))
                for t, ps in by_topic.items()
            ),
            user_data=None,
        )
    )


def read_assignment(data: bytes) -> list[TopicPartition]:
    body = _read(data, (ConsumerProtocolAssignment,), "assignment")
    return [
        TopicPartition(str(t.topic), int(p)) for t in body.assigned_partitions for p in t.partitions
    ]


def _read(data: bytes, schemas: Sequence[type[Any]], what: str) -> Any:
    data = bytes(data)
    if len(data) < _VERSION.size or _VERSION.unpack_from(data)[0] < 0:
        raise InvalidRequestError(f"a consumer {what} without a version")
    version = _VERSION.unpack_from(data)[0]
    try:
        body, _ = entity_reader(schemas[min(version, len(schemas) - 1)])(data, _VERSION.size)
    except Exception as exc:  # kio raises its own and native errors alike on bad bytes
        raise InvalidRequestError(f"a malformed consumer {what} (v{version}): {exc}") from exc
    return body


def _write(entity: Any) -> bytes:
    out = io.BytesIO()
    out.write(_VERSION.pack(0))
    entity_writer(type(entity))(out, entity)
    return out.getvalue()
