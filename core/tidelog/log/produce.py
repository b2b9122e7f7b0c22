"""Produce requests, as the API receives them, turned into appends.

- Raw batches (``application/vnd.kafka.record-batch``): validated and kept byte for byte.
- JSON records: placed by the partitioner (or their explicit partition), built into one batch per
  partition with the topic's ``compression.type`` and validated like any other batch. A record
  aimed at a partition that does not exist gets its own error; the others are written.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pybase64

from tidelog.errors import InvalidRequestError, TidelogError
from tidelog.log.topics import Topic
from tidelog.log.validate import (
    KEYLESS_ON_COMPACTED,
    InvalidTimestampError,
    ProducedBatch,
    validate_batches,
)
from tidelog.log.writer import AppendRequest
from tidelog.partitioner import Partitioner, select_partition
from tidelog.records import InvalidRecordError, RecordBatchBuilder

MAX_RECORDS_PER_REQUEST = 10_000
CODEC_OF = {"producer": "none", "uncompressed": "none"}


@dataclass(frozen=True)
class JsonRecord:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    partition: int | None
    timestamp: int | None


# A JSON number holds an integer exactly up to 2^53 - 1 (JavaScript's, and most JSON parsers'
# limit): the JSON API takes timestamps up to that, some 285,000 years. Raw batches carry
# Kafka's full int64.
MAX_JSON_TIMESTAMP = 2**53 - 1


def log_append_time(topic: Topic, now_ms: int) -> int | None:
    return now_ms if topic.config("message.timestamp.type") == "LogAppendTime" else None


def compacted(topic: Topic) -> bool:
    return "compact" in topic.config("cleanup.policy").split(",")


def parse_raw(topic: Topic, body: bytes, now_ms: int) -> list[ProducedBatch]:
    return validate_batches(
        body,
        max_message_bytes=int(topic.config("max.message.bytes")),
        log_append_time=log_append_time(topic, now_ms),
        require_keys=compacted(topic),
    )


def parse_json_records(records: object, encoding: str) -> list[JsonRecord]:
    """Each record checked; the first bad one fails the whole request (nothing is written)."""
    if encoding not in ("utf8", "base64"):
        raise InvalidRequestError(f"encoding must be utf8 or base64, not {encoding!r}")
    if not isinstance(records, list) or not records:
        raise InvalidRequestError("records must be a non-empty list")
    if len(records) > MAX_RECORDS_PER_REQUEST:
        raise InvalidRequestError(f"at most {MAX_RECORDS_PER_REQUEST} records per request")
    return [_parse_record(i, r, encoding) for i, r in enumerate(records)]


def _parse_record(index: int, raw: object, encoding: str) -> JsonRecord:
    where = f"records[{index}]"
    if not isinstance(raw, dict):
        raise InvalidRequestError(f"{where} must be an object")
    unknown = set(raw) - {"key", "value", "headers", "partition", "timestamp"}
    if unknown:
        raise InvalidRequestError(f"{where} has unknown fields: {', '.join(sorted(unknown))}")
    partition = raw.get("partition")
    if partition is not None and (isinstance(partition, bool) or not isinstance(partition, int)):
        raise InvalidRequestError(f"{where}.partition must be an integer")
    timestamp = raw.get("timestamp")
    if timestamp is not None:
        if isinstance(timestamp, bool) or not isinstance(timestamp, int):
            raise InvalidRequestError(f"{where}.timestamp must be an integer (ms)")
        if not 0 <= timestamp <= MAX_JSON_TIMESTAMP:
            raise InvalidTimestampError(f"{where}.timestamp {timestamp} is out of range")
    headers_raw = raw.get("headers") or []
    if not isinstance(headers_raw, list):
        raise InvalidRequestError(f"{where}.headers must be a list")
    headers = []
    for j, header in enumerate(headers_raw):
        if not isinstance(header, dict) or not isinstance(header.get("key"), str):
            raise InvalidRequestError(f"{where}.headers[{j}] needs a string key")
        headers.append(
            (header["key"], _bytes(header.get("value"), encoding, f"{where}.headers[{j}].value"))
        )
    return JsonRecord(
        key=_bytes(raw.get("key"), encoding, f"{where}.key"),
        value=_bytes(raw.get("value"), encoding, f"{where}.value"),
        headers=tuple(headers),
        partition=partition,
        timestamp=timestamp,
    )


def _bytes(value: object, encoding: str, where: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequestError(f"{where} must be a string or null")
    if encoding == "utf8":
        return value.encode("utf-8", "surrogatepass")
    try:
        return bytes(pybase64.b64decode(value, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequestError(f"{where} is not valid base64") from exc


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
    placement: list[tuple[int, int] | TidelogError] = []
    by_partition: dict[int, list[tuple[int, JsonRecord]]] = {}
    keys_required = compacted(topic)
    for index, record in enumerate(records):
        if keys_required and record.key is None:
            placement.append(InvalidRecordError(KEYLESS_ON_COMPACTED))
            continue
        try:
            partition = select_partition(
                partitioner,
                topic.name,
                record.key,
                record.value,
                topic.partitions,
                explicit=record.partition,
            )
        except TidelogError as exc:
            placement.append(exc)
            continue
        by_partition.setdefault(partition, []).append((index, record))
        placement.append((-1, -1))
        if on_append is not None:
            on_append(topic.name, partition, len(record.value or b"") + len(record.key or b""))
    if expected_offset is not None and len(by_partition) > 1:
        raise InvalidRequestError("expected_offset needs every record in one partition")
    codec = CODEC_OF.get(topic.config("compression.type"), topic.config("compression.type"))
    requests: list[AppendRequest] = []
    for partition, entries in sorted(by_partition.items()):
        builder = RecordBatchBuilder(codec, clock_ms=lambda: now_ms)
        for position, (index, record) in enumerate(entries):
            builder.append(
                record.key,
                record.value,
                record.headers,
                now_ms if record.timestamp is None else record.timestamp,
            )
            placement[index] = (len(requests), position)
        batches = parse_raw(topic, builder.build(), now_ms)
        requests.append(AppendRequest(topic, partition, batches, expected_offset))
    return JsonProduce(requests, placement)
