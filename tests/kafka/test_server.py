"""The listener's own duties, with stand-in handlers: answers in request order, a failing
handler closes its connection (as Kafka's broker does), and a connection that is gone leaves
nothing behind, however many requests it had in flight."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time

import pytest
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from tidelog.kafka.server import MAX_IN_FLIGHT, KafkaServer


class StandIn:
    """Answers Metadata with an empty cluster after ``delay`` s; fails when asked to."""

    def __init__(self, delay: float = 0.0, fail_on: int | None = None) -> None:
        self.delay, self.fail_on = delay, fail_on

    def handle(self, request):
        time.sleep(self.delay * (request.correlation_id % 3))  # later requests may finish first
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

    yield start
    for server in servers:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def _metadata(correlation_id: int) -> bytes:
    request = MetadataRequest[1](topics=None)
    request.with_header(correlation_id=correlation_id, client_id="t")
    return bytes(request.encode(header=True, framed=True))


def _read(sock: socket.socket) -> bytes:
    prefix = sock.recv(4, socket.MSG_WAITALL)
    if not prefix:
        return b""
    return sock.recv(struct.unpack(">i", prefix)[0], socket.MSG_WAITALL)


def test_pipelined_requests_are_answered_in_the_order_they_came(serve):
    _, port = serve(StandIn(delay=0.02))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"".join(_metadata(n) for n in range(30)))
        order = [MetadataResponse.decode(_read(sock), version=1, header=True) for _ in range(30)]
    assert [r._header.correlation_id for r in order] == list(range(30))


def test_a_failing_handler_closes_its_connection_and_nothing_is_left(serve):
    server, port = serve(StandIn(fail_on=3))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        # More than fit in flight, none read: the failure must still end the connection.
        sock.sendall(b"".join(_metadata(n) for n in range(MAX_IN_FLIGHT * 3)))
        answers = []
        while frame := _read(sock):
            answers.append(MetadataResponse.decode(frame, version=1, header=True))
    assert [a._header.correlation_id for a in answers] == [0, 1, 2]
    deadline = time.monotonic() + 10
    while server._connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not server._connections
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_metadata(7))
        assert (
            MetadataResponse.decode(_read(sock), version=1, header=True)._header.correlation_id == 7
        )


def test_a_client_that_never_reads_and_leaves_leaves_nothing_behind(serve):
    server, port = serve(StandIn(delay=0.01))
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"".join(_metadata(n) for n in range(MAX_IN_FLIGHT * 4)))
    sock.close()
    deadline = time.monotonic() + 10
    while server._connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not server._connections
