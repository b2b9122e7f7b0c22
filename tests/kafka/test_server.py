"""The listener's own duties, with stand-in handlers: a connection's requests take effect and
are answered in the order they came, a failing handler closes its connection (as Kafka's broker
does), and a connection that is gone leaves nothing behind, however many requests it had in
flight."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import socket
import struct
import threading
import time

import pytest
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kio.index import load_request_schema
from tests.kafka.test_fuzz import _frame
from tests.support.kafka_wire import receive_frame

from tidelog.credentials import Credential, Credentials
from tidelog.kafka import server as server_module
from tidelog.kafka.apis import ApiKey
from tidelog.kafka.sasl import SaslSettings
from tidelog.kafka.server import MAX_IN_FLIGHT, KafkaServer
from tidelog.storage.memory import MemoryMetadataStore


class StandIn:
    """Answers Metadata with an empty cluster after ``delay`` s; fails when asked to."""

    def __init__(self, delay: float = 0.0, fail_on: int | None = None) -> None:
        self.delay, self.fail_on = delay, fail_on
        self.effects: list[int] = []  # correlation ids, in the order they took effect
        self.running = 0
        self.most_running = 0
        self.lock = threading.Lock()

    def handle(self, request, queued):
        with self.lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        try:
            return self._answer(request, queued)
        finally:
            with self.lock:
                self.running -= 1

    def _answer(self, request, queued):
        time.sleep(self.delay * (request.correlation_id % 3))  # later requests would go first
        self.effects.append(request.correlation_id)
        if request.correlation_id == self.fail_on:
            raise RuntimeError("a defect")
        return {
            "throttle_time": 0,
            "brokers": [],
            "cluster_id": None,
            "controller_id": -1,
            "topics": [],
            "cluster_authorized_operations": 0,
        }


@pytest.fixture
def serve():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    servers = []

    def start(handlers) -> tuple[KafkaServer, int]:
        server = KafkaServer(handlers)
        port = asyncio.run_coroutine_threadsafe(server.start("127.0.0.1", 0), loop).result(10)
        servers.append(server)
        return server, port

    start.loop = loop
    yield start
    for server in servers:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def _metadata(correlation_id: int) -> bytes:
    request = MetadataRequest[1](topics=None)
    request.with_header(correlation_id=correlation_id, client_id="t")
    return bytes(request.encode(header=True, framed=True))


def test_pipelined_requests_are_answered_in_the_order_they_came(serve):
    _, port = serve(StandIn(delay=0.02))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"".join(_metadata(n) for n in range(30)))
        order = [
            MetadataResponse.decode(receive_frame(sock), version=1, header=True) for _ in range(30)
        ]
    assert [r._header.correlation_id for r in order] == list(range(30))


def test_a_connections_requests_take_effect_one_at_a_time_in_the_order_they_came(serve):
    # Kafka reads a connection's next request only once it has answered the last; clients
    # (librdkafka's idempotent producer above all) rely on it. Before this held, a handler
    # that was slower for earlier requests let later ones take effect first.
    handlers = StandIn(delay=0.02)
    _, port = serve(handlers)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"".join(_metadata(n) for n in range(12)))
        for _ in range(12):
            receive_frame(sock)
    assert handlers.effects == list(range(12))
    assert handlers.most_running == 1


class Queueing(StandIn):
    """A produce-like handler: it queues its effect at once (calling ``queued``), then waits
    ``delay`` s for it to complete, as a produce waits for its group commit."""

    queue: list[int]

    def _answer(self, request, queued):
        self.__dict__.setdefault("queue", []).append(request.correlation_id)
        queued()
        time.sleep(self.delay)
        return super()._answer(request, lambda: None)


def test_a_request_that_has_queued_its_effect_lets_the_next_one_start(serve):
    # Produce requests pipeline: the next starts once the one before is queued in order in
    # the group commit, so five in flight overlap their waits rather than add them up.
    handlers = Queueing(delay=0.3)
    _, port = serve(handlers)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"".join(_metadata(n) for n in (0, 3, 6, 9, 12)))  # no delay of their own
        answers = [
            MetadataResponse.decode(receive_frame(sock), version=1, header=True) for _ in range(5)
        ]
    assert [a._header.correlation_id for a in answers] == [0, 3, 6, 9, 12]
    assert handlers.queue == [0, 3, 6, 9, 12]  # queued in the order they came
    assert handlers.most_running == 5


class Flush(StandIn):
    """A produce as group commit handles it: queued at once, then waiting for a flush that
    commits once ``gathered`` produces wait for it (or after ``wait_s``, so a test that never
    gathers them fails on what it saw rather than hangs)."""

    def __init__(self, gathered: int, wait_s: float = 10) -> None:
        super().__init__()
        self.gathered, self.wait_s = gathered, wait_s
        self.flushed = threading.Event()

    def _answer(self, request, queued):
        queued()
        with self.lock:
            if self.running >= self.gathered:
                self.flushed.set()
        self.flushed.wait(self.wait_s)
        return {"responses": [], "throttle_time": 0}


def _sized(key: ApiKey, version: int, **body) -> bytes:
    """The request's frame, its size first, as it goes on the wire."""
    frame = _frame(key, version, load_request_schema(key, version)(**body))
    return struct.pack(">i", len(frame)) + frame


def _produce() -> bytes:
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout": datetime.timedelta(seconds=30),
        "topic_data": (),
    }
    return _sized(ApiKey.PRODUCE, 9, **body)


def test_a_connection_keeps_as_many_produces_waiting_on_a_flush_as_it_sends(serve):
    # librdkafka at its defaults sends a produce request per partition every linger, without
    # waiting for answers: group commit flushes them together only if they all wait on it.
    # At 16 a connection (and 32 threads for every request), a producer steady at 1,000
    # records a second over six partitions fell further behind every second.
    handlers = Flush(gathered=300)
    _, port = serve(handlers)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(_produce() * 300)
        for _ in range(300):
            receive_frame(sock)
    assert handlers.flushed.is_set()
    assert handlers.most_running == 300


class Held(StandIn):
    """Answers once ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def _answer(self, request, queued):
        self.release.wait(10)
        return super()._answer(request, queued)


def test_requests_but_produces_stay_few_in_flight(serve):
    # Their answers may be large (a fetch's, up to its fetch.max.bytes): a client that sends
    # many and reads none must not make the agent hold hundreds of them.
    handlers = Held()
    server, port = serve(handlers)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"".join(_metadata(n) for n in range(MAX_IN_FLIGHT * 3)))
        deadline = time.monotonic() + 10
        while len(server._requests) <= MAX_IN_FLIGHT and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # time enough to read the rest, were it allowed to
        read = len(server._requests)
        handlers.release.set()
        for _ in range(MAX_IN_FLIGHT * 3):
            receive_frame(sock)
    assert read == MAX_IN_FLIGHT + 1  # and the next, read to learn it is not a produce


def test_a_connections_requests_in_flight_are_bounded_in_bytes(serve, monkeypatch):
    request = _produce()
    monkeypatch.setattr(server_module, "MAX_IN_FLIGHT_BYTES", 3 * len(request))
    handlers = Flush(gathered=4, wait_s=0.3)  # never gathered: each waits its 0.3 s
    _, port = serve(handlers)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request * 9)
        for _ in range(9):
            receive_frame(sock)
    assert not handlers.flushed.is_set()
    assert handlers.most_running == 3


def test_a_failing_handler_closes_its_connection_and_nothing_is_left(serve):
    server, port = serve(StandIn(fail_on=3))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        # More than fit in flight, none read: the failure must still end the connection.
        sock.sendall(b"".join(_metadata(n) for n in range(MAX_IN_FLIGHT * 3)))
        answers = []
        while frame := receive_frame(sock):
            answers.append(MetadataResponse.decode(frame, version=1, header=True))
    assert [a._header.correlation_id for a in answers] == [0, 1, 2]
    deadline = time.monotonic() + 10
    while server._connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not server._connections
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_metadata(7))
        assert (
            MetadataResponse.decode(
                receive_frame(sock), version=1, header=True
            )._header.correlation_id
            == 7
        )


@pytest.mark.parametrize("listener", ["PLAINTEXT", "SASL_PLAINTEXT"])
def test_requests_left_waiting_their_turn_when_the_server_stops_never_take_effect(
    serve, caplog, listener
):
    # A failure closes the connection while the request after it runs and one more waits
    # behind that: stopping the server must not start the last one once the one before it
    # is cancelled, as if its turn had come.
    release = threading.Event()

    class Blocking(StandIn):
        def _answer(self, request, queued):
            if request.correlation_id == 1:
                self.effects.append(1)
                release.wait(10)
            return super()._answer(request, queued)

    handlers = Blocking(fail_on=0)
    with contextlib.ExitStack() as stack:
        if listener == "PLAINTEXT":
            server, port = serve(handlers)
            loop = serve.loop
        else:
            server, loop, port = stack.enter_context(_sasl_listener(handlers))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            if listener != "PLAINTEXT":
                _log_in(sock)
            sock.sendall(b"".join(_metadata(n) for n in range(3)))
            assert receive_frame(sock) == b""  # closed, unanswered: request 0 failed
        deadline = time.monotonic() + 10
        while handlers.effects[:2] != [0, 1] and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        finally:
            release.set()
        time.sleep(0.2)  # what a wrongly started request would take to run
    assert handlers.effects == [0, 1, 1]  # request 1's own, then its answer; never 2
    # Nor handed to a pool that has shut down (the loop logs what its callbacks raise).
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


def test_a_client_that_has_sent_all_it_will_still_reads_its_answers(serve):
    _, port = serve(StandIn(delay=0.02))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"".join(_metadata(n) for n in range(3)))
        sock.shutdown(socket.SHUT_WR)
        answers = [
            MetadataResponse.decode(receive_frame(sock), version=1, header=True) for _ in range(3)
        ]
        assert receive_frame(sock) == b""  # then the agent closes
    assert [a._header.correlation_id for a in answers] == [0, 1, 2]


def test_a_client_that_never_reads_and_leaves_leaves_nothing_behind(serve):
    server, port = serve(StandIn(delay=0.01))
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"".join(_metadata(n) for n in range(MAX_IN_FLIGHT * 4)))
    sock.close()
    deadline = time.monotonic() + 10
    while server._connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not server._connections


class Waiting(StandIn):
    """Holds each request until its connection is gone, and records that it saw it go."""

    def __init__(self) -> None:
        super().__init__()
        self.saw_gone = threading.Event()

    def _answer(self, request, queued):
        if request.gone.wait(10):
            self.saw_gone.set()
        return super()._answer(request, queued)


def test_a_request_hears_that_its_connection_is_gone(serve):
    # A produce waiting in the group commit is withdrawn once its client has left: the client
    # holds the outcome unknown and may send the batches again (Handlers.produce).
    handlers = Waiting()
    _, port = serve(handlers)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_metadata(1))
        time.sleep(0.2)  # the request is being handled
    assert handlers.saw_gone.wait(10)


def test_a_request_sent_before_its_session_ended_is_served_whenever_its_turn_comes(serve):
    """KIP-368: a request that arrives after the session ended closes the connection; one that
    arrived before is served, even when it waits its turn behind slow ones past the end (as a
    producer's did, behind produces taking a second, when librdkafka renewed at 90%)."""
    handlers = StandIn(delay=0.4)  # correlation id 2: 0.8 s; 3: at once
    with _sasl_listener(handlers, max_reauth_s=0.5) as (_, _, port):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        with sock:
            _log_in(sock)
            sock.sendall(_metadata(2) + _metadata(3))  # 3's turn comes at 0.8 s, after the end
            answered = [
                MetadataResponse.decode(receive_frame(sock), version=1, header=True) for _ in "ab"
            ]
            assert [a._header.correlation_id for a in answered] == [2, 3]
            sock.sendall(_metadata(6))  # sent after the end: the connection closes
            assert receive_frame(sock) == b""


@contextlib.contextmanager
def _sasl_listener(handlers, **settings):
    """A SASL_PLAINTEXT listener taking PLAIN for alice (password "secret"), on a loop of its
    own: the server, its loop and its port."""
    meta = MemoryMetadataStore()
    credentials = Credentials(meta)
    credential = Credential.from_password("SCRAM-SHA-256", "secret", b"salt", 4096)
    meta.write(credentials.put("SCRAM-SHA-256", "alice", credential))
    sasl = SaslSettings(("PLAIN",), credentials, plain_over_plaintext=True, **settings)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = KafkaServer(handlers, listener="SASL_PLAINTEXT", sasl=sasl)
    port = asyncio.run_coroutine_threadsafe(server.start("127.0.0.1", 0), loop).result(10)
    try:
        yield server, loop, port
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def _log_in(sock: socket.socket) -> None:
    sock.sendall(_sized(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN"))
    receive_frame(sock)
    sock.sendall(_sized(ApiKey.SASL_AUTHENTICATE, 1, auth_bytes=b"\0alice\0secret"))
    receive_frame(sock)
