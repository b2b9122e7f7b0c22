"""A connection's bytes cut into frames (tidelog.kafka.framing), fed as a transport feeds them."""

from __future__ import annotations

import asyncio
import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.kafka.codec import MAX_FRAME_BYTES, FrameError
from tidelog.kafka.framing import MAPPED_FROM, OWN_BUFFER_FROM, READ_BUFFER, FramedConnection


class Transport:
    """What the protocol asks of its transport, recorded."""

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def close(self) -> None:
        self.closed = True

    def __init__(self, *, tls: bool = False) -> None:
        self.reading = True
        self.written: list[bytes] = []
        self.closed = False
        self.info = {"peername": ("10.0.0.7", 9092), "sslcontext": object() if tls else None}

    def get_extra_info(self, name: str) -> object:
        return self.info.get(name)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def connect(read_ahead: int = 2) -> tuple[FramedConnection, Transport]:
    connection = FramedConnection(lambda _: asyncio.sleep(0), read_ahead=read_ahead)
    transport = Transport()
    connection.connection_made(transport)  # type: ignore[arg-type]
    await asyncio.sleep(0)
    return connection, transport


def feed(connection: FramedConnection, data: bytes, cuts: list[int]) -> None:
    """``data`` as reads of the sizes in ``cuts`` (then the rest), each no larger than the
    buffer the protocol offers, as recv_into fills it."""
    pos = 0
    sizes = iter(cuts)
    while pos < len(data):
        buffer = connection.get_buffer(-1)
        assert len(buffer) > 0, "the protocol offered no room"
        size = min(next(sizes, len(data)), len(buffer), len(data) - pos)
        buffer[:size] = data[pos : pos + size]
        connection.buffer_updated(size)
        pos += size


async def drain_frames(connection: FramedConnection) -> list[bytes]:
    frames = []
    while (frame := await connection.read_frame()) is not None:
        assert isinstance(frame, bytes) or (isinstance(frame, memoryview) and frame.readonly)
        frames.append(bytes(frame))
    return frames


payloads = st.lists(
    st.one_of(
        st.binary(min_size=8, max_size=64),
        st.integers(min_value=OWN_BUFFER_FROM - 2, max_value=3 * READ_BUFFER).map(
            lambda n: bytes(range(256)) * (n // 256) + bytes(n % 256)
        ),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(payloads, st.lists(st.integers(min_value=1, max_value=2 * READ_BUFFER), max_size=40))
def test_frames_come_out_as_they_went_in_however_the_bytes_arrive(sent, cuts):
    async def run() -> list[bytes]:
        connection, _ = await connect(read_ahead=len(sent) + 1)
        feed(connection, b"".join(framed(p) for p in sent), cuts)
        connection.eof_received()
        return await drain_frames(connection)

    assert asyncio.run(run()) == sent


@pytest.mark.parametrize("size", [OWN_BUFFER_FROM, MAPPED_FROM - 1, MAPPED_FROM, MAPPED_FROM + 3])
def test_a_large_frame_is_handed_on_in_the_buffer_it_was_received_into(size):
    async def run() -> None:
        connection, _ = await connect()
        payload = (bytes(range(251)) * (size // 251 + 1))[:size]
        feed(connection, framed(payload) + framed(b"after it"), [100, 5000, 70_000])
        frame = await connection.read_frame()
        assert isinstance(frame, memoryview)
        assert frame.readonly
        assert frame.tobytes() == payload
        assert await connection.read_frame() == b"after it"

    asyncio.run(run())


def test_reading_pauses_while_frames_wait_and_resumes_as_they_are_taken():
    async def run() -> None:
        connection, transport = await connect(read_ahead=2)
        feed(connection, framed(b"first---") + framed(b"second--"), [])
        assert not transport.reading
        assert await connection.read_frame() == b"first---"
        assert transport.reading
        feed(connection, framed(b"third---"), [])
        assert not transport.reading
        assert [await connection.read_frame(), await connection.read_frame()] == [
            b"second--",
            b"third---",
        ]
        assert transport.reading

    asyncio.run(run())


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads Linux's /proc")
def test_a_frame_announced_but_not_sent_holds_no_memory_it_has_not_sent():
    """Sixteen clients each announce a 64 MiB frame and send 4 KiB of it: the agent holds about
    what they sent, not the gigabyte they announced (Kafka bounds what it reads, too)."""

    async def run() -> int:
        before = resident_bytes()
        connections = []
        for _ in range(16):
            connection, _ = await connect()
            feed(connection, struct.pack(">i", 64 << 20) + bytes(4096), [])
            connections.append(connection)
        return resident_bytes() - before

    assert asyncio.run(run()) < 64 << 20


@pytest.mark.parametrize("size", [-1, 0, 7, MAX_FRAME_BYTES + 1])
def test_an_impossible_size_ends_the_connection_after_the_frames_before_it(size):
    async def run() -> None:
        connection, transport = await connect(read_ahead=4)
        feed(connection, framed(b"good----") + struct.pack(">i", size) + b"x" * 16, [])
        assert await connection.read_frame() == b"good----"
        with pytest.raises(FrameError):
            await connection.read_frame()
        assert not transport.reading

    asyncio.run(run())


def test_a_client_gone_inside_a_frame_ends_the_frames():
    async def run() -> None:
        connection, _ = await connect()
        feed(connection, framed(b"whole---") + framed(b"cut short")[:-2], [])
        connection.connection_lost(None)
        assert await drain_frames(connection) == [b"whole---"]
        await asyncio.wait_for(connection.wait_closed(), 1)

    asyncio.run(run())


@pytest.mark.parametrize(("tls", "kept_open"), [(False, True), (True, False)])
def test_the_clients_end_ends_the_frames_and_keeps_plain_tcp_open_for_answers(tls, kept_open):
    async def run() -> None:
        connection = FramedConnection(lambda _: asyncio.sleep(0))
        connection.connection_made(Transport(tls=tls))  # type: ignore[arg-type]
        feed(connection, framed(b"last one"), [])
        assert connection.eof_received() is kept_open
        assert await drain_frames(connection) == [b"last one"]

    asyncio.run(run())


def test_a_reader_waiting_for_a_frame_is_woken_by_it():
    async def run() -> None:
        connection, _ = await connect()
        waiting = asyncio.ensure_future(connection.read_frame())
        await asyncio.sleep(0)
        assert not waiting.done()
        feed(connection, framed(b"arrives-"), [3])
        assert await asyncio.wait_for(waiting, 1) == b"arrives-"

    asyncio.run(run())


def test_writing_waits_while_the_transport_is_full_and_fails_once_the_client_is_gone():
    async def run() -> None:
        connection, transport = await connect()
        connection.write(b"answer")
        await connection.drain()
        connection.pause_writing()
        draining = asyncio.ensure_future(connection.drain())
        await asyncio.sleep(0)
        assert not draining.done()
        connection.resume_writing()
        await asyncio.wait_for(draining, 1)
        connection.pause_writing()
        draining = asyncio.ensure_future(connection.drain())
        connection.connection_lost(ConnectionResetError())
        with pytest.raises(ConnectionResetError):
            await asyncio.wait_for(draining, 1)
        assert transport.written == [b"answer"]
        assert connection.get_extra_info("peername") == ("10.0.0.7", 9092)

    asyncio.run(run())


def test_serving_starts_once_the_connection_is_made():
    async def run() -> None:
        served: list[FramedConnection] = []

        async def serve(connection: FramedConnection) -> None:
            served.append(connection)

        connection = FramedConnection(serve)
        connection.connection_made(Transport())  # type: ignore[arg-type]
        assert connection.task is not None
        await connection.task
        assert served == [connection]

    asyncio.run(run())
