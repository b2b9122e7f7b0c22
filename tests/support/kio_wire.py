"""Any Kafka request at any version over one connection, built from a plain mapping and its
answer read back as plain data, through kio's entities (generated from Kafka's own message
schemas). It has none of a client's logic: what is sent is exactly what the test says, so the
same call can go to a real Kafka broker and to tidelog's agent and the answers be compared."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import io
import socket
import struct
import uuid
from collections.abc import Mapping
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import EntityField, EntityTupleField, classify_field
from kio.static.primitive import i16, i32
from tests.support.kafka_wire import receive_frame

from tidelog.kafka.codec import build

API_VERSIONS = 18


class Connection:
    """One TCP connection to a broker; requests numbered in the order sent."""

    def __init__(self, bootstrap: str, *, timeout: float = 15, client_id: str = "conformance"):
        host, port = bootstrap.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.client_id = client_id
        self.correlation = 0

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send(self, api_key: int, version: int, body: Mapping[str, Any]) -> int:
        """Sends one request; its correlation id."""
        self.correlation += 1
        schema = load_request_schema(api_key, version)
        header_type = RequestHeaderV2 if schema.__flexible__ else RequestHeaderV1
        header = header_type(
            request_api_key=i16(api_key),
            request_api_version=i16(version),
            correlation_id=i32(self.correlation),
            client_id=self.client_id,
        )
        out = io.BytesIO()
        entity_writer(header_type)(out, header)
        entity_writer(schema)(out, build(schema, filled(schema, body)))
        payload = out.getvalue()
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        return self.correlation

    def receive(self, api_key: int, version: int) -> dict[str, Any]:
        """The next answer, as plain data; ConnectionError if the broker closed instead."""
        frame = receive_frame(self.sock)
        if not frame:
            raise ConnectionError("the broker closed the connection instead of answering")
        schema = load_response_schema(api_key, version)
        flexible_header = schema.__flexible__ and api_key != API_VERSIONS
        header_type = ResponseHeaderV1 if flexible_header else ResponseHeaderV0
        _, used = entity_reader(header_type)(frame, 0)
        body, _ = entity_reader(schema)(frame, used)
        return plain(body)

    def call(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        self.send(api_key, version, body)
        return self.receive(api_key, version)


def filled(entity_type: type[Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with every field it leaves out that has no schema default set to Kafka's zero
    for its type (false, 0, "", an empty array; null where the field is nullable), nested
    entities filled likewise: a test names only the fields its case is about."""
    known = {f.name for f in dataclasses.fields(entity_type)}
    if unknown := body.keys() - known:
        raise KeyError(
            f"{entity_type.__name__} has no field {sorted(unknown)} (it has {sorted(known)})"
        )
    out = dict(body)
    for f in dataclasses.fields(entity_type):
        kind = classify_field(f)
        nested = kind.type_ if isinstance(kind, EntityTupleField | EntityField) else None
        if f.name in out:
            value = out[f.name]
            if isinstance(kind, EntityTupleField) and value is not None:
                out[f.name] = [filled(nested, item) for item in value]
            elif isinstance(kind, EntityField) and value is not None:
                out[f.name] = filled(nested, value)
            continue
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        out[f.name] = _zero(f, kind, nested)
    return out


def _zero(f: dataclasses.Field[Any], kind: Any, nested: Any) -> Any:
    if isinstance(kind, EntityField):
        return filled(nested, {})
    text = str(f.type)
    if text.startswith("tuple") or isinstance(kind, EntityTupleField):
        return []
    if "None" in text:
        return None
    return {"bool": False, "string": "", "bytes": b"", "uuid": None}.get(
        f.metadata.get("kafka_type"), 0
    )


def plain(value: Any) -> Any:
    """A kio entity as dicts, lists and scalars: error codes by Kafka's name for them, durations
    and times in milliseconds, ids as strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [plain(item) for item in value]
    if isinstance(value, enum.Enum):
        return value.name.upper()
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value
