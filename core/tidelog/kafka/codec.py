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
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, overload

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


def frame_size(prefix: bytes | memoryview) -> int:
    """The size a frame's 4-byte prefix announces; FrameError past the limit or below zero."""
    size: int = struct.unpack(">i", prefix)[0]
    if size < _HEADER_PREFIX.size or size > MAX_FRAME_BYTES:
        raise FrameError(f"a frame of {size} bytes (the limit is {MAX_FRAME_BYTES})")
    return size


def peek_header(frame: bytes | memoryview) -> tuple[int, int, int]:
    """API key, version and correlation id: readable in every version of every request."""
    if len(frame) < _HEADER_PREFIX.size:
        raise FrameError("a frame shorter than a request header")
    key, version, correlation = _HEADER_PREFIX.unpack_from(frame)
    return key, version, correlation


def decode_request(frame: bytes | memoryview) -> Request:
    """One request frame (its size prefix removed) as a Request.

    UnsupportedVersionError for an API or version outside API_VERSIONS; FrameError for bytes
    that do not parse as the request they claim to be. Bytes after the request are ignored, as
    Kafka's brokers ignore them: librdkafka's Metadata for all topics (v9+) leaves three.
    """
    if not (isinstance(frame, bytes) or (isinstance(frame, memoryview) and frame.readonly)):
        frame = bytes(frame)  # kio reads read-only buffers only
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
    answer, spliced = _placeholders(schema, answer)
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
    if spliced:
        return _spliced(out.getvalue(), spliced)
    frame = out.getbuffer()
    struct.pack_into(">i", frame, 0, len(frame) - 4)
    return bytes(frame)


class KeyedPartitions(Sequence[Any]):
    """A topic's partition answers, each made by ``entry(i)`` when read, and all of them
    determined by ``key`` (the topic's id, the range shown, the leaders' ids): a topic entry
    holding them is encoded once per version and key, and its bytes reused, so a big topic's
    answer is not even made again (10,000 of them took up to 500 ms to allocate in a full
    process, its collector sweeping the heap)."""

    def __init__(self, key: Hashable, count: int, entry: Callable[[int], Any]) -> None:
        self.key = key
        self._count = count
        self._entry = entry

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if not -self._count <= index < self._count:
            raise IndexError(index)
        return self._entry(index % self._count)

    def __iter__(self) -> Iterator[Any]:
        return map(self._entry, range(self._count))

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same answers, as the list it stands for is."""
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a list: equal by what it holds


SPLICE_FROM = 64  # partitions: below it, encoding an entry costs less than finding its bytes
_ENCODED_ENTRIES = 64
_encoded: OrderedDict[Hashable, bytes] = OrderedDict()
_encoded_lock = threading.Lock()


def _placeholders(
    schema: type[Any], answer: Mapping[str, Any]
) -> tuple[Mapping[str, Any], list[tuple[bytes, bytes]]]:
    """``answer`` with each big keyed topic entry replaced by a placeholder (same fields, a
    unique name, no partitions), and (placeholder bytes, entry bytes) for each to swap in.
    Metadata for a 10,000-partition topic took 100 ms to encode, every time."""
    topics = answer.get("topics")
    if not topics or not any(_keyed(t) for t in topics):
        return answer, []
    entry_type = next((step[2] for step in _plan(schema) if step[0] == "topics"), None)
    if entry_type is None:
        return answer, []
    shown, spliced = [], []
    for topic in topics:
        if not _keyed(topic):
            shown.append(topic)
            continue
        placeholder = {**topic, "name": f"tidelog-splice-{uuid.uuid4()}", "partitions": []}
        shown.append(placeholder)
        spliced.append((_entry_bytes(entry_type, placeholder), _cached_entry(entry_type, topic)))
    return {**answer, "topics": shown}, spliced


def _keyed(topic: Mapping[str, Any]) -> bool:
    partitions = topic.get("partitions")
    return isinstance(partitions, KeyedPartitions) and len(partitions) >= SPLICE_FROM


def _cached_entry(entry_type: type[Any], topic: Mapping[str, Any]) -> bytes:
    fields_but_partitions = tuple(sorted((k, v) for k, v in topic.items() if k != "partitions"))
    key = (entry_type, fields_but_partitions, topic["partitions"].key)
    with _encoded_lock:
        found = _encoded.get(key)
        if found is not None:
            _encoded.move_to_end(key)
            return found
    encoded = _entry_bytes(entry_type, topic)
    with _encoded_lock:
        _encoded[key] = encoded
        while len(_encoded) > _ENCODED_ENTRIES:
            _encoded.popitem(last=False)
    return encoded


def _entry_bytes(entry_type: type[Any], entry: Mapping[str, Any]) -> bytes:
    out = io.BytesIO()
    entity_writer(entry_type)(out, build(entry_type, entry))
    return out.getvalue()


def _spliced(frame: bytes, spliced: list[tuple[bytes, bytes]]) -> bytes:
    for placeholder, entry in spliced:
        at = frame.find(placeholder)
        if at < 0:
            raise RuntimeError("a placeholder topic entry is missing from its encoded answer")
        frame = frame[:at] + entry + frame[at + len(placeholder) :]
    return struct.pack(">i", len(frame) - 4) + frame[4:]


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
    for name, kind, nested, kafka_type, required in _plan(entity_type):
        if name not in answer:
            if required:
                raise KeyError(f"{entity_type.__name__}.{name} has no value and no default")
            continue
        value = answer[name]
        if value is None:
            pass
        elif kind is _ENTITIES:
            value = tuple(build(nested, item) for item in value)
        elif kind is _ENTITY:
            value = build(nested, value)
        elif isinstance(value, list):
            value = tuple(value)
        elif kafka_type is not None:
            value = _typed(kafka_type, value)
        values[name] = value
    return entity_type(**values)


_ENTITIES, _ENTITY, _VALUE = "entities", "entity", "value"
_plans: dict[type[Any], tuple[tuple[str, str, Any, str | None, bool], ...]] = {}


def _plan(entity_type: type[Any]) -> tuple[tuple[str, str, Any, str | None, bool], ...]:
    """How ``build`` fills each field of ``entity_type``: classified once per type (kio's
    classification was two thirds of encoding a 10,000-partition Metadata answer)."""
    plan = _plans.get(entity_type)
    if plan is None:
        steps = []
        for f in fields(entity_type):
            kind = classify_field(f)
            shape, nested = (
                (_ENTITIES, kind.type_)
                if isinstance(kind, EntityTupleField)
                else (_ENTITY, kind.type_)
                if isinstance(kind, EntityField)
                else (_VALUE, None)
            )
            required = f.default is MISSING and f.default_factory is MISSING
            steps.append((f.name, shape, nested, f.metadata.get("kafka_type"), required))
        plan = _plans[entity_type] = tuple(steps)
    return plan


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
