"""Mangled requests of every advertised API and version, over a socket to a `tidelog dev` agent of
this module's own (what it stores is nobody else's): each is answered with its correlation id or
closes its connection, and never stops the agent answering the next client.

Requests are generated from kio's schemas by Hypothesis, then cut short, overwritten at random
places or followed by garbage. A request that still parses is a request: it is answered like any
other, errors included. Requests that may wait by design (Fetch, JoinGroup, SyncGroup) are given
up on after a moment, as an impatient client gives up; the agent must let them go. Every answer
must parse as its API's response and hold null only where Kafka may send null
(tests/support/nulls.py).
"""

from __future__ import annotations

import dataclasses
import io
import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.admin import DescribeTransactionsResponse
from kafka.protocol.old import produce as old_produce
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import Records, i16, i32
from tests.support import devserver
from tests.support.kafka_wire import receive, receive_frame
from tests.support.nulls import KAFKA_NEVER_NULL, KAFKA_SENDS_NULL, nullable_fields, nulls

from tidelog.kafka.apis import API_VERSIONS, LEGACY_PRODUCE, ApiKey
from tidelog.kafka.codec import (
    FrameError,
    RequestHeaderV1,
    RequestHeaderV2,
    ResponseHeaderV0,
    ResponseHeaderV1,
    decode_request,
)
from tidelog.kafka.server import WAITING

st.register_type_strategy(Records, st.binary(max_size=64))

CASES = [
    pytest.param(key, version, id=f"{key.name}-v{version}")
    for key, (low, high) in API_VERSIONS.items()
    for version in range(low, high + 1)
]
CORRELATION = 0x5EED
ANSWER_S = 10  # nothing but a waiting request takes this long, on a loaded 2-core machine
PATIENCE_S = 0.3  # how long a waiting request is waited for before its client leaves
HUGE = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])  # 2^32 - 1 as an unsigned varint


@pytest.fixture(scope="module")
def agent():
    dev = devserver.start()
    yield dev.bootstrap
    dev.stop()


def _request_schema(key: ApiKey, version: int) -> type:
    """kio's schema of the request; Produce v0-2 (which kio lacks) are v3 without its first
    field, a transactional id, generated null and cut off in ``_frame``."""
    legacy = key == ApiKey.PRODUCE and version in LEGACY_PRODUCE
    return load_request_schema(key, 3 if legacy else version)


def _frame(key: ApiKey, version: int, body: object) -> bytes:
    schema = _request_schema(key, version)
    header_type = RequestHeaderV2 if schema.__flexible__ else RequestHeaderV1
    out = io.BytesIO()
    entity_writer(header_type)(
        out,
        header_type(
            request_api_key=i16(key),
            request_api_version=i16(version),
            correlation_id=i32(CORRELATION),
            client_id="fuzz",
        ),
    )
    header_end = out.tell()
    entity_writer(schema)(out, body)
    frame = out.getvalue()
    if key == ApiKey.PRODUCE and version in LEGACY_PRODUCE:
        frame = frame[:header_end] + frame[header_end + 2 :]  # the null transactional id
    return frame


@st.composite
def mangled(draw: st.DrawFn, frame: bytes) -> bytes:
    """The frame (header kept, so the agent knows what it claims to be) damaged one way."""
    header = 8  # api key, version, correlation id
    how = draw(st.sampled_from(["cut", "overwrite", "huge", "garbage", "whole"]))
    if how == "cut":
        return frame[: draw(st.integers(header, max(header, len(frame) - 1)))]
    if how == "overwrite":
        body = bytearray(frame)
        for _ in range(draw(st.integers(1, 8))):
            if len(body) > header:
                body[draw(st.integers(header, len(body) - 1))] = draw(st.integers(0, 255))
        return bytes(body)
    if how == "huge":  # a length of 2^32 - 2, which kio would allocate before reading
        at = draw(st.integers(header, len(frame)))
        return frame[:at] + HUGE + frame[at + len(HUGE) :]
    if how == "garbage":
        return frame + draw(st.binary(min_size=1, max_size=64))
    return frame


def test_an_array_announcing_more_than_the_frame_holds_closes_only_its_connection(agent):
    """2^32 - 2 topics in a 30-byte Metadata: kio's native reader would allocate 34 GB for
    them first, and a failed allocation aborts the process (tidelog.kafka.bounds)."""
    host, port = agent.split(":")
    schema = load_request_schema(ApiKey.METADATA, 12)
    empty = schema(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    header = _frame(ApiKey.METADATA, 12, empty)[:-4]  # its body: null, false, false, no tags
    frame = header + HUGE + bytes(3)
    with socket.create_connection((host, int(port)), timeout=ANSWER_S) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        assert receive(sock, 4) == b""
    _still_answers(host, int(port))


@pytest.mark.parametrize(("key", "version"), CASES)
def test_a_mangled_request_is_answered_or_closes_its_connection(agent, key, version):
    schema = _request_schema(key, version)
    bodies = st.from_type(schema)
    if key == ApiKey.PRODUCE and version in LEGACY_PRODUCE:
        bodies = bodies.map(lambda body: dataclasses.replace(body, transactional_id=None))
    host, port = agent.split(":")

    @settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
    @given(bodies.map(lambda body: _frame(key, version, body)).flatmap(mangled))
    def exchange(frame: bytes) -> None:
        with socket.create_connection((host, int(port)), timeout=ANSWER_S) as sock:
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            silent = _unanswered(frame)  # acks=0: Kafka sends nothing back
            if key in WAITING or silent:
                sock.settimeout(PATIENCE_S)
            try:
                prefix = receive(sock, 4)
            except TimeoutError:
                assert key in WAITING or silent, "no answer and no close"
                return
            assert not silent, "an acks=0 produce was answered"
            if prefix == b"":
                # Closed: what Kafka does with a request it cannot read, and only then.
                assert not _answerable(frame), "a request that parses was not answered"
                return
            sock.settimeout(ANSWER_S)
            (size,) = struct.unpack(">i", prefix)
            answer = receive(sock, size)
            assert len(answer) == size
            assert struct.unpack_from(">i", answer)[0] == CORRELATION
            _check_nulls(key, decode_request(frame).api_version, answer)

    exchange()
    _still_answers(host, int(port))


def _check_nulls(key: ApiKey, version: int, answer: bytes) -> None:
    """The answer parses as the response it claims to be, with null only where Kafka sends it."""
    if key == ApiKey.PRODUCE and version in LEGACY_PRODUCE:  # no null in these versions
        response = getattr(old_produce, f"ProduceResponse_v{version}")
        assert response.decode(answer[4:]).encode() == answer[4:]
        return
    if key == ApiKey.DESCRIBE_TRANSACTIONS:
        # Kafka sends -1 for the start of a transaction not open, which kio refuses to read
        # (a negative timestamp); kafka-python reads it, and the response has no nullable field.
        response = DescribeTransactionsResponse.decode(answer, version=version, header=True)
        assert response.encode(header=True) == answer
        return
    schema = load_response_schema(key, version)
    flexible = schema.__flexible__ and key != ApiKey.API_VERSIONS
    _, used = entity_reader(ResponseHeaderV1 if flexible else ResponseHeaderV0)(answer, 0)
    body, _ = entity_reader(schema)(answer, used)
    assert not {path for path in nulls(body) if (key.name, path) not in KAFKA_SENDS_NULL}


def test_every_nullable_field_is_judged_against_kafka():
    """A newly advertised API or version forces a decision on each of its nullable fields."""
    judged = KAFKA_SENDS_NULL.keys() | KAFKA_NEVER_NULL.keys()
    assert not KAFKA_SENDS_NULL.keys() & KAFKA_NEVER_NULL.keys()
    unjudged = {
        (key.name, path)
        for key, version in ((c.values[0], c.values[1]) for c in CASES)
        if not (key == ApiKey.PRODUCE and version in LEGACY_PRODUCE)
        for path in nullable_fields(load_response_schema(key, version))
    } - judged
    assert not unjudged


def _answerable(frame: bytes) -> bool:
    """The frame parses as a request that gets an answer (an acks=0 produce gets none)."""
    try:
        decode_request(frame)
    except FrameError:
        return False
    return not _unanswered(frame)


def _unanswered(frame: bytes) -> bool:
    """The frame parses as an acks=0 produce, which Kafka never answers."""
    try:
        request = decode_request(frame)
    except FrameError:
        return False
    return request.api_key == ApiKey.PRODUCE and int(request.body.acks) == 0


def _still_answers(host: str, port: int) -> None:
    frame = _frame(ApiKey.API_VERSIONS, 0, load_request_schema(ApiKey.API_VERSIONS, 0)())
    with socket.create_connection((host, port), timeout=ANSWER_S) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        answer = receive_frame(sock)
    assert struct.unpack_from(">ih", answer) == (CORRELATION, 0)  # correlation id, NONE
