"""The local stack's HTTP server (tidelog.local.serving): connections kept, as AWS keeps them,
and every request answered, Expect: 100-continue with an empty body included."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import threading
import time

import pytest

from tidelog.local.serving import Server


def echo_length(environ, start_response):
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    answer = str(len(body)).encode()
    start_response("200 OK", [("Content-Length", str(len(answer)))])
    return [answer]


@pytest.fixture
def server():
    served = Server(echo_length, "127.0.0.1", 0, name="test-serving")
    yield served
    served.stop()


def test_one_connection_serves_request_after_request(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    for body in (b"a", b"bc", b""):
        connection.request("PUT", "/k", body=body)
        answer = connection.getresponse()
        assert answer.read() == str(len(body)).encode()
        assert answer.getheader("Connection") != "close"
    assert connection.sock is not None  # still the first connection


def raw_exchange(port: int, head: bytes, body: bytes = b"") -> bytes:
    """What the server says to a request sent as botocore sends a PUT with Expect: its head
    first, the body only after a 100 Continue; up to the end of the final answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(head)
        said = sock.recv(4096)
        if said == b"HTTP/1.1 100 Continue\r\n\r\n":
            sock.sendall(body)
        while not said.endswith(b"\r\n\r\n" + str(len(body)).encode()):
            more = sock.recv(4096)
            assert more, said
            said += more
        return said


def test_an_empty_body_with_expect_is_answered_at_once(server):
    """waitress alone answered 100 Continue, then waited for the body (botocore's empty S3
    PUTs hung until their read timeout)."""
    said = raw_exchange(
        server.port,
        b"PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nExpect: 100-continue\r\n\r\n",
    )
    assert said.startswith(b"HTTP/1.1 200 OK")
    assert said.endswith(b"\r\n\r\n0")


def test_a_body_with_expect_is_asked_for_then_read(server):
    said = raw_exchange(
        server.port,
        b"PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n",
        b"abc",
    )
    assert said.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK")
    assert said.endswith(b"\r\n\r\n3")


def test_stop_closes_kept_connections_and_the_port():
    served = Server(echo_length, "127.0.0.1", 0, name="test-serving")
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=5)
    connection.request("GET", "/")
    connection.getresponse().read()
    served.stop()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", served.port), timeout=2).close()
    with socket.socket() as again:  # free at once, for a binder without SO_REUSEADDR too
        again.bind(("127.0.0.1", served.port))

    def ask_again():
        connection.request("GET", "/")
        return connection.getresponse().read()

    with pytest.raises((OSError, http.client.HTTPException)):
        ask_again()


def test_stopping_waits_for_requests_in_flight_before_closing_the_loop(monkeypatch):
    """Requests still being answered when the server stops finish first: each wakes the loop
    through its trigger when done, and writing to it once closed raised in their threads
    (and could write into a file descriptor reused since)."""
    failures = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    started = threading.Barrier(5)
    answering = []  # requests inside the app

    def slow(environ, start_response):
        answering.append(1)
        started.wait(5)
        time.sleep(0.2)
        answering.pop()
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    served = Server(slow, "127.0.0.1", 0, name="test-serving")
    trigger = served._server.trigger
    at_close = []
    close = trigger.close

    def recorded_close():
        at_close.append(len(answering))
        close()

    monkeypatch.setattr(trigger, "close", recorded_close)

    def ask():
        with contextlib.suppress(OSError, http.client.HTTPException):
            connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=5)
            connection.request("GET", "/")
            connection.getresponse().read()

    clients = [threading.Thread(target=ask) for _ in range(4)]
    for client in clients:
        client.start()
    started.wait(5)  # four requests are in the app
    served.stop()
    for client in clients:
        client.join(10)
    assert at_close  # closed, and never with a request still in the app
    assert set(at_close) == {0}
    assert failures == []


def test_stop_writes_to_its_trigger_before_the_loop_can_close_it(monkeypatch):
    """The loop, already woken (a finished task's pull), ran the stop's queued close before the
    stop's own write to the trigger, which then failed on the closed pipe: EBADF, once in a
    full run."""
    served = Server(echo_length, "127.0.0.1", 0, name="test-serving")
    trigger = served._server.trigger
    write = trigger._physical_pull

    def woken_first():
        os.write(trigger.trigger, b"x")  # a task's wake-up, already on its way
        time.sleep(0.2)  # the loop reads it meanwhile
        write()

    monkeypatch.setattr(trigger, "_physical_pull", woken_first)
    served.stop()
    assert trigger._closed
