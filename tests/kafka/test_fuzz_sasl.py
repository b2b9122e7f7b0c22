"""The protocol fuzzer against a SASL listener: before a login, no request of any advertised API
and version reaches a handler (the connection closes unanswered, as Kafka's authenticator closes
it), except ApiVersions and SASL's own; mangled SASL tokens fail the login or close their
connection; and the agent goes on answering others."""

from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from tests.kafka.test_fuzz import ANSWER_S, CORRELATION, _frame, _request_schema, mangled
from tests.support import devserver
from tests.support.agents import AgentProcess
from tests.support.dynamodb_local import free_port
from tests.support.kafka_wire import receive, receive_frame

from tidelog.kafka.apis import API_VERSIONS, LEGACY_PRODUCE, ApiKey
from tidelog.kafka.codec import code

ALLOWED = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
GATED = [
    pytest.param(key, version, id=f"{key.name}-v{version}")
    for key, (low, high) in API_VERSIONS.items()
    if key not in ALLOWED and not (key == ApiKey.PRODUCE and low in LEGACY_PRODUCE)
    for version in range(max(low, 3) if key == ApiKey.PRODUCE else low, high + 1)
]


@pytest.fixture(scope="module")
def listener():
    dev = devserver.start()
    port = free_port()
    agent = AgentProcess(dev, "--listeners", f"SASL_PLAINTEXT://:{port}")
    yield "127.0.0.1", port
    agent.stop()
    dev.stop()


def _send(host, port, *frames):
    """Send the frames on one connection; every answer until it closes (or goes quiet)."""
    answers = []
    with socket.create_connection((host, port), timeout=ANSWER_S) as sock:
        for frame in frames:
            sock.sendall(struct.pack(">i", len(frame)) + frame)
        while True:
            try:
                prefix = receive(sock, 4)
            except (ConnectionResetError, TimeoutError):
                break
            if len(prefix) < 4:
                break
            answers.append(receive(sock, struct.unpack(">i", prefix)[0]))
    return answers


def _handshake(version=1):
    schema = load_request_schema(ApiKey.SASL_HANDSHAKE, version)
    return _frame(ApiKey.SASL_HANDSHAKE, version, schema(mechanism="SCRAM-SHA-256"))


@pytest.mark.parametrize(("key", "version"), GATED)
def test_no_request_before_a_login_is_answered(listener, key, version):
    host, port = listener

    @settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_type(_request_schema(key, version)).map(lambda b: _frame(key, version, b)))
    def unanswered(frame):
        assert _send(host, port, frame) == []

    unanswered()


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mangled_tokens_fail_the_login_and_nothing_else(listener, data):
    host, port = listener
    schema = load_request_schema(ApiKey.SASL_AUTHENTICATE, 2)
    body = data.draw(st.from_type(schema))
    token = data.draw(mangled(_frame(ApiKey.SASL_AUTHENTICATE, 2, body)))
    answers = _send(host, port, _handshake(), token)
    assert len(answers) <= 2
    assert answers[0][4:6] == b"\0\0"  # the handshake: NONE
    if len(answers) == 2:
        (error,) = struct.unpack_from(">h", answers[1], 5)  # after the flexible header's tags
        assert error in (code("SASL_AUTHENTICATION_FAILED"), 0)
    _still_answers(host, port)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(min_size=8, max_size=200))
def test_bare_garbage_after_a_v0_handshake_closes_its_connection(listener, token):
    host, port = listener
    answers = _send(host, port, _handshake(version=0), token)
    assert answers[0][4:6] == b"\0\0"
    assert len(answers) <= 2
    _still_answers(host, port)


def _still_answers(host, port):
    frame = _frame(ApiKey.API_VERSIONS, 0, load_request_schema(ApiKey.API_VERSIONS, 0)())
    with socket.create_connection((host, port), timeout=ANSWER_S) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        answer = receive_frame(sock)
    assert struct.unpack_from(">ih", answer) == (CORRELATION, 0)
