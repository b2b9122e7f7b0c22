"""tidelog.kafka.bounds: every flexible request is walked before kio reads it, so a length that
announces more than the frame holds is refused instead of aborting the process (kio's native
reader allocates a compact array's announced size first, and a failed allocation in Rust is an
abort no handler can catch).

- The walk agrees with kio on where every valid request ends (Hypothesis, every schema).
- A huge length spliced in at every position of a request holding one of everything is refused
  or read, never fatal; at each array length it is refused by the bound.
"""

from __future__ import annotations

import dataclasses
import io
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
)
from kio.static.primitive import Records, i16, i32
from tests.support.entities import one_of_everything

from tidelog.kafka import bounds
from tidelog.kafka.apis import API_VERSIONS, LEGACY_PRODUCE, ApiKey
from tidelog.kafka.codec import FrameError, RequestHeaderV2, decode_request

st.register_type_strategy(Records, st.binary(max_size=64))

FLEXIBLE = [
    pytest.param(schema, id=f"{ApiKey(key).name}-v{version}")
    for key, (low, high) in API_VERSIONS.items()
    for version in range(low, high + 1)
    if not (key == ApiKey.PRODUCE and version in LEGACY_PRODUCE)
    for schema in [load_request_schema(key, version)]
    if schema.__flexible__
]
HUGE = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])  # 2^32 - 1 as an unsigned varint: 2^32 - 2 elements


def _body(schema: type, entity: object) -> bytes:
    out = io.BytesIO()
    entity_writer(schema)(out, entity)
    return out.getvalue()


def _frame(schema: type, body: bytes) -> bytes:
    out = io.BytesIO()
    header = RequestHeaderV2(
        request_api_key=i16(schema.__api_key__),
        request_api_version=i16(schema.__version__),
        correlation_id=i32(7),
        client_id="bounds",
    )
    entity_writer(RequestHeaderV2)(out, header)
    return out.getvalue() + body


def test_every_flexible_request_is_walked():
    assert len(FLEXIBLE) >= 90  # Kafka 4's flexible request versions that the agent serves


@pytest.mark.parametrize("schema", FLEXIBLE)
def test_the_walk_ends_where_kio_ends(schema):
    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_type(schema))
    def agree(entity):
        body = _body(schema, entity)
        _, kio_end = entity_reader(schema)(body, 0)
        assert bounds.check(schema, body, 0) == kio_end == len(body)

    agree()


def _arrays(entity_type: type) -> int:
    """How many array lengths a one-of-everything entity of this type writes."""
    count = 0
    for field in dataclasses.fields(entity_type):
        kind = classify_field(field)
        if isinstance(kind, EntityTupleField | EntityField):
            count += isinstance(kind, EntityTupleField) + _arrays(kind.type_)
        else:
            count += isinstance(kind, PrimitiveTupleField)
    return count


@pytest.mark.parametrize("schema", FLEXIBLE)
def test_a_huge_length_anywhere_is_refused_or_read_never_fatal(schema):
    body = _body(schema, one_of_everything(schema))
    refused_by_the_bound = 0
    for at in range(len(body)):
        frame = _frame(schema, body[:at] + HUGE + body[at + len(HUGE) :])
        try:
            decode_request(frame)
        except FrameError as refused:
            refused_by_the_bound += "elements in" in str(refused)
    # Every array length, overwritten, announces 2^32 - 2 elements; some other positions do
    # too (a string's length read as an array's after the overwrite shifts what follows).
    assert refused_by_the_bound >= _arrays(schema)


def test_a_tagged_field_is_walked_within_the_size_it_announces():
    schema = load_request_schema(ApiKey.FETCH, 17)
    tagged = {f.name: f.default for f in dataclasses.fields(schema) if "tag" in f.metadata}
    untagged = dataclasses.replace(one_of_everything(schema), **tagged)  # defaults: unwritten
    body = bytearray(_body(schema, untagged))
    assert body[-1] == 0  # the request's own tagged fields: none
    replica_state = struct.pack(">iq", 1, 2) + b"\0"  # id, epoch, no tags of its own
    body[-1:] = bytes([1, 1, len(replica_state)]) + replica_state
    assert bounds.check(schema, bytes(body), 0) == len(body)
    body[-len(replica_state) - 1] = 100  # the size it announces now runs past the end
    with pytest.raises(bounds.Malformed, match="100 bytes announced, 13 left"):
        bounds.check(schema, bytes(body), 0)


def test_a_varint_of_more_than_five_bytes_is_malformed():
    schema = load_request_schema(ApiKey.METADATA, 12)
    with pytest.raises(bounds.Malformed, match="five bytes"):
        bounds.check(schema, b"\x80" * 5 + b"\x01", 0)
