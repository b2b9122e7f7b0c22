"""Kafka's wire format, through kio (generated from Kafka's own message schemas): frames in,
requests out; version-free answers in, frames out.

Handlers read a request's fields by name (a field a version lacks reads as its default) and
answer with plain mappings and sequences shaped as the newest version of the response. Here the
answer becomes the version the client asked for: fields that version lacks are dropped, fields
it has but the answer leaves out take their schema defaults.
"""

from __future__ import annotations

import datetime
import io
import struct
import threading
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import (  # kio's own classification of a schema field
    EntityField,
    EntityTupleField,
    classify_field,
)
from kio.static.primitive import i32

from tidelog.errors import KAFKA_ERRORS
from tidelog.kafka import bounds
from tidelog.kafka.apis import API_VERSIONS, LEGACY_PRODUCE, ApiKey

MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes
_HEADER_PREFIX = struct.Struct(">hhi")  # api key, api version, correlation id
_NULL_STRING = struct.pack(">h", -1)


class FrameError(Exception):
    """The connection cannot go on: Kafka closes it."""


class UnsupportedVersionError(Exception):
    """A request this agent does not serve at that version; answered, then the connection
    goes on (ApiVersions) or is closed (any other API, as Kafka does)."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"API {api_key} v{api_version} is not supported")
        self.api_key, self.api_version, self.correlation_id = api_key, api_version, correlation_id


@dataclass(frozen=True, slots=True)
class Request:
    api_key: ApiKey
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any  # the kio entity of that API and version
    client_host: str = ""  # where the connection came from, as Kafka names it: "/10.0.0.7"
    listener: str = "PLAINTEXT"  # the listener it came in on (tidelog.kafka.listeners)
    principal: str = "User:ANONYMOUS"  # who the connection is (tidelog.kafka.principals)
    # Set once the connection it came on has closed: its client will never hear the answer.
    gone: threading.Event | None = None


def frame_size(prefix: bytes) -> int:
    """The size a frame's 4-byte prefix announces; FrameError past the limit or below zero."""
    size: int = struct.unpack(">i", prefix)[0]
    if size < _HEADER_PREFIX.size or size > MAX_FRAME_BYTES:
        raise FrameError(f"a frame of {size} bytes (the limit is {MAX_FRAME_BYTES})")
    return size


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """API key, version and correlation id: readable in every version of every request."""
    if len(frame) < _HEADER_PREFIX.size:
        raise FrameError("a frame shorter than a request header")
    key, version, correlation = _HEADER_PREFIX.unpack_from(frame)
    return key, version, correlation


def decode_request(frame: bytes) -> Request:
    """One request frame (its size prefix removed) as a Request.

    UnsupportedVersionError for an API or version outside API_VERSIONS; FrameError for bytes
    that do not parse as the request they claim to be. Bytes after the request are ignored, as
    Kafka's brokers ignore them: librdkafka's Metadata for all topics (v9+) leaves three.
    """
    frame = bytes(frame)  # kio reads read-only buffers only (a no-op for bytes)
    key, version, correlation = peek_header(frame)
    supported = API_VERSIONS.get(key)  # type: ignore[call-overload]
    if supported is None or not supported[0] <= version <= supported[1]:
        raise UnsupportedVersionError(key, version, correlation)
    api = ApiKey(key)
    legacy = api == ApiKey.PRODUCE and version in LEGACY_PRODUCE
    schema = load_request_schema(key, 3 if legacy else version)
    header_type = RequestHeaderV2 if schema.__flexible__ else RequestHeaderV1
    try:
        header, used = entity_reader(header_type)(frame, 0)
        if legacy:  # v3 is v0-2 with a nullable transactional id in front: read as one, null
            frame, used = _NULL_STRING + frame[used:], 0
        elif schema.__flexible__:  # kio would size a compact array before reading it
            bounds.check(schema, frame, used)
        body, _ = entity_reader(schema)(frame, used)
    except Exception as exc:  # kio raises its own and native errors alike on bad bytes
        raise FrameError(f"a malformed {api.name} v{version} request: {exc}") from exc
    return Request(api, version, correlation, getattr(header, "client_id", None), body)


def encode_response(request: Request, answer: Mapping[str, Any]) -> bytes:
    """The answer, shaped as the response of the request's API and version, as a frame."""
    return encode_response_as(request.api_key, request.api_version, request.correlation_id, answer)


def encode_response_as(
    api_key: int, api_version: int, correlation_id: int, answer: Mapping[str, Any]
) -> bytes:
    if api_key == ApiKey.PRODUCE and api_version in LEGACY_PRODUCE:
        return _legacy_produce_response(api_version, correlation_id, answer)
    schema = load_response_schema(api_key, api_version)
    body = build(schema, answer)
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    # ApiVersions answers with header v0 whatever its version, so a client that does not yet
    # know the broker's versions can read it (KIP-511).
    if schema.__flexible__ and api_key != ApiKey.API_VERSIONS:
        entity_writer(ResponseHeaderV1)(out, ResponseHeaderV1(correlation_id=i32(correlation_id)))
    else:
        entity_writer(ResponseHeaderV0)(out, ResponseHeaderV0(correlation_id=i32(correlation_id)))
    entity_writer(schema)(out, body)
    frame = out.getbuffer()
    struct.pack_into(">i", frame, 0, len(frame) - 4)
    return bytes(frame)


def _legacy_produce_response(version: int, correlation_id: int, answer: Mapping[str, Any]) -> bytes:
    """ProduceResponse v0-2, which kio (from Kafka 4's schemas) no longer knows: v0 is each
    partition's index, error and base offset; v1 adds the throttle time, v2 the append time."""
    out = io.BytesIO()
    out.write(struct.pack(">ii", 0, correlation_id))
    responses = answer["responses"]
    out.write(struct.pack(">i", len(responses)))
    for topic in responses:
        name = str(topic["name"]).encode()
        out.write(struct.pack(">h", len(name)) + name)
        partitions = topic["partition_responses"]
        out.write(struct.pack(">i", len(partitions)))
        for p in partitions:
            out.write(struct.pack(">ihq", p["index"], p["error_code"], p["base_offset"]))
            if version >= 2:
                out.write(struct.pack(">q", p["log_append_time"]))
    if version >= 1:
        out.write(struct.pack(">i", answer["throttle_time"]))
    frame = out.getbuffer()
    struct.pack_into(">i", frame, 0, len(frame) - 4)
    return bytes(frame)


def build(entity_type: type[Any], answer: Mapping[str, Any]) -> Any:
    """The kio entity of ``entity_type`` holding ``answer``: its fields by name, nested
    entities built likewise, fields the answer lacks left to their schema defaults."""
    values: dict[str, Any] = {}
    for field in fields(entity_type):
        if field.name not in answer:
            if field.default is MISSING and field.default_factory is MISSING:
                raise KeyError(f"{entity_type.__name__}.{field.name} has no value and no default")
            continue
        value = answer[field.name]
        kind = classify_field(field)
        if isinstance(kind, EntityTupleField) and value is not None:
            value = tuple(build(kind.type_, item) for item in value)
        elif isinstance(kind, EntityField) and value is not None:
            value = build(kind.type_, value)
        elif isinstance(value, list):
            value = tuple(value)
        else:
            value = _typed(field.metadata.get("kafka_type"), value)
        values[field.name] = value
    return entity_type(**values)


def _typed(kafka_type: str | None, value: Any) -> Any:
    """Plain numbers as kio's types: error codes, durations and times in ms."""
    if kafka_type == "error_code":
        return ErrorCode(value)
    if kafka_type in ("timedelta_i32", "timedelta_i64") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    if kafka_type == "datetime_i64" and isinstance(value, int):
        return None if value < 0 else datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
    return value


# A response body before encoding: version-free, each version takes the fields it has.
Answer = dict[str, Any]
NONE = 0  # an answer's error_code when all went well


def code(name: str) -> int:
    """A Kafka error's code, by its name."""
    return KAFKA_ERRORS[name].code


def field(body: Any, name: str, default: Any = None) -> Any:
    """A request field by name; ``default`` where the request's version has no such field."""
    return getattr(body, name, default)


def items(value: Sequence[Any] | None) -> Sequence[Any]:
    """An array field, null read as empty."""
    return () if value is None else value
