"""Produce requests, as the API receives them, turned into appends.

- Raw batches (``application/vnd.kafka.record-batch``): validated and kept byte for byte.
- JSON records: placed by the partitioner (or their explicit partition), built into one batch per
  partition with the topic's ``compression.type``. tidelog builds those batches from records it
  has checked, so they are not decoded again: only the topic's limits apply to them. A record
  aimed at a partition that does not exist gets its own error; the others are written.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import pybase64

from tidelog.errors import InvalidRequestError, TidelogError
from tidelog.log.topics import Topic
from tidelog.log.write.validate import (
    KEYLESS_ON_COMPACTED,
    InvalidTimestampError,
    ProducedBatch,
    TimestampBounds,
    built_batch,
    validate_batches,
)
from tidelog.log.write.writer import AppendRequest
from tidelog.partitioner import Partitioner, select_partition
from tidelog.records import InvalidRecordError, RecordBatchBuilder

MAX_RECORDS_PER_REQUEST = 10_000  # the request model's limit
CODEC_OF = {"producer": "none", "uncompressed": "none"}


class JsonRecord(NamedTuple):
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    partition: int | None
    timestamp: int | None


class JsonHeaderFields(Protocol):
    """A header as the API's request model holds it, its types already checked."""

    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str | None: ...


class JsonRecordFields(Protocol):
    """A record as the API's request model holds it, its types already checked."""

    @property
    def key(self) -> str | None: ...
    @property
    def value(self) -> str | None: ...
    @property
    def headers(self) -> Sequence[JsonHeaderFields]: ...
    @property
    def partition(self) -> int | None: ...
    @property
    def timestamp(self) -> int | None: ...


# A JSON number holds an integer exactly up to 2^53 - 1 (JavaScript's, and most JSON parsers'
# limit): the JSON API takes timestamps up to that, some 285,000 years. Raw batches carry
# Kafka's full int64.
MAX_JSON_TIMESTAMP = 2**53 - 1


def log_append_time(topic: Topic, now_ms: int) -> int | None:
    return now_ms if topic.config("message.timestamp.type") == "LogAppendTime" else None


def timestamp_bounds(topic: Topic, now_ms: int) -> TimestampBounds | None:
    """What a CreateTime topic's records' timestamps are held to; none on LogAppendTime."""
    if topic.config("message.timestamp.type") == "LogAppendTime":
        return None
    return TimestampBounds(
        now_ms,
        int(topic.config("message.timestamp.before.max.ms")),
        int(topic.config("message.timestamp.after.max.ms")),
    )


def compacted(topic: Topic) -> bool:
    return "compact" in topic.config("cleanup.policy").split(",")


def parse_raw(topic: Topic, body: bytes, now_ms: int) -> list[ProducedBatch]:
    return validate_batches(
        body,
        max_message_bytes=int(topic.config("max.message.bytes")),
        log_append_time=log_append_time(topic, now_ms),
        require_keys=compacted(topic),
        bounds=timestamp_bounds(topic, now_ms),
    )


def json_records(records: Sequence[JsonRecordFields], encoding: str) -> list[JsonRecord]:
    """The records of a JSON produce request, their strings turned into the bytes they stand
    for. Their types were checked by the request's model; what is left to check is what only
    the values show. The first bad record fails the whole request: nothing is written."""
    if encoding not in ("utf8", "base64"):
        raise InvalidRequestError(f"encoding must be utf8 or base64, not {encoding!r}")
    to_bytes = _utf8 if encoding == "utf8" else _base64
    out = []
    for index, record in enumerate(records):
        timestamp = record.timestamp
        if timestamp is not None and not 0 <= timestamp <= MAX_JSON_TIMESTAMP:
            raise InvalidTimestampError(f"records[{index}].timestamp {timestamp} is out of range")
        key, value, headers = record.key, record.value, record.headers
        out.append(
            JsonRecord(
                None if key is None else to_bytes(key, index, "key"),
                None if value is None else to_bytes(value, index, "value"),
                tuple(
                    (
                        _header_key(header.key, index, j),
                        None
                        if header.value is None
                        else to_bytes(header.value, index, f"headers[{j}].value"),
                    )
                    for j, header in enumerate(headers)
                )
                if headers
                else (),
                record.partition,
                timestamp,
            )
        )
    return out


def _header_key(name: str, index: int, j: int) -> str:
    """A header's key goes into the batch as UTF-8, which a lone surrogate (valid in a JSON
    escape) cannot be written as."""
    if not name.isascii():
        try:
            name.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidRequestError(
                f"records[{index}].headers[{j}].key is not Unicode text (a lone surrogate)"
            ) from exc
    return name


def _utf8(text: str, index: int, field: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _base64(text: str, index: int, field: str) -> bytes:
    try:
        return bytes(pybase64.b64decode(text, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequestError(f"records[{index}].{field} is not valid base64") from exc


@dataclass
class JsonProduce:
    """A JSON produce request split into per-partition appends."""

    requests: list[AppendRequest]
    placement: list[tuple[int, int] | TidelogError]  # per record: (request index, batch index)


def plan_json_produce(
    topic: Topic,
    records: Sequence[JsonRecord],
    partitioner: Partitioner,
    now_ms: int,
    *,
    expected_offset: int | None = None,
    on_append: Callable[[str, int, int], None] | None = None,
) -> JsonProduce:
    name, partitions = topic.name, topic.partitions
    keys_required = compacted(topic)
    chosen: list[tuple[int, int] | TidelogError] = []  # per record: (partition, batch index)
    by_partition: dict[int, list[JsonRecord]] = {}
    for record in records:
        key, value = record.key, record.value
        if keys_required and key is None:
            chosen.append(InvalidRecordError(KEYLESS_ON_COMPACTED))
            continue
        try:
            partition = select_partition(
                partitioner, name, key, value, partitions, explicit=record.partition
            )
        except TidelogError as exc:
            chosen.append(exc)
            continue
        entries = by_partition.get(partition)
        if entries is None:
            entries = by_partition[partition] = []
        chosen.append((partition, len(entries)))
        entries.append(record)
        if on_append is not None:
            on_append(name, partition, len(value or b"") + len(key or b""))
    if expected_offset is not None and len(by_partition) > 1:
        raise InvalidRequestError("expected_offset needs every record in one partition")
    codec = CODEC_OF.get(topic.config("compression.type"), topic.config("compression.type"))
    max_message_bytes = int(topic.config("max.message.bytes"))
    stamp, bounds = log_append_time(topic, now_ms), timestamp_bounds(topic, now_ms)
    requests: list[AppendRequest] = []
    for partition in sorted(by_partition):
        builder = RecordBatchBuilder(codec, clock_ms=lambda: now_ms)
        append = builder.append
        for record in by_partition[partition]:
            timestamp = record.timestamp
            append(
                record.key, record.value, record.headers, now_ms if timestamp is None else timestamp
            )
        batch = built_batch(
            builder.build(),
            max_message_bytes=max_message_bytes,
            log_append_time=stamp,
            bounds=bounds,
        )
        requests.append(AppendRequest(topic, partition, [batch], expected_offset))
    request_of = {request.partition: i for i, request in enumerate(requests)}
    placement = [
        where if isinstance(where, TidelogError) else (request_of[where[0]], where[1])
        for where in chosen
    ]
    return JsonProduce(requests, placement)
