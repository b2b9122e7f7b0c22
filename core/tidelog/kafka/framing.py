"""A Kafka connection's bytes as frames: each request received where it will be read.

asyncio's streams copy a request several times on its way to a frame: the transport's read
into a new object, that into the reader's buffer (grown, and so copied again, as a large
request arrives), out of the buffer, then into ``bytes`` for kio. They also pause and resume
the socket whenever more than 128 KiB waits. Under librdkafka's produce load that was a fifth
of the agent's time holding the GIL (docs/decisions.md). Here each frame's size prefix says
where its bytes go: small frames are cut from one read buffer the connection reuses; a large
one is received straight into a buffer of its own size (``recv_into``) and handed on as it is,
a very large one into memory mapped for it, which is only the agent's as its bytes arrive.

A frame is ``bytes``, or a read-only ``memoryview`` of its own buffer (what kio reads without
copying). The connection reads ahead at most ``read_ahead`` frames its server has not taken,
so a client that sends faster than it is served holds up its own socket, not the agent's
memory.
"""

from __future__ import annotations

import asyncio
import collections
import mmap
from collections.abc import Callable, Coroutine
from typing import Any

from tidelog.kafka.codec import FrameError, frame_size

PREFIX = 4
READ_BUFFER = 16 * 1024
OWN_BUFFER_FROM = 4 * 1024
"""A frame this large or larger is received into a buffer of its own: cutting it from the read
buffer would be one more copy of it. Smaller ones share reads (a client pipelines them)."""
MAPPED_FROM = 1 << 20
"""A frame this large or larger (more than a client sends at its defaults: librdkafka's and
Java's requests stop at 1 MB) is received into memory mapped for it alone, whose pages the
kernel provides only as bytes land in them: a client that announces a frame of 100 MB holds no
more of the agent's memory than it has sent. Kafka allocates each announced frame whole (its
memory pool is unbounded by default); smaller frames are allocated whole here too, from the
heap, whose pages are warm (fresh mapped pages cost this machine's agent a fifth more CPU per
message)."""
READ_AHEAD = 2

Frame = bytes | memoryview


class FramedConnection(asyncio.BufferedProtocol):
    """One Kafka connection: frames to read, answers to write. ``serve`` runs once it is
    made, in a task of its own (``task``), and is handed the connection."""

    def __init__(
        self,
        serve: Callable[[FramedConnection], Coroutine[Any, Any, None]],
        *,
        read_ahead: int = READ_AHEAD,
    ) -> None:
        self._serve = serve
        self._read_ahead = read_ahead
        self._transport: asyncio.BaseTransport | None = None
        self.task: asyncio.Task[None] | None = None
        self._buffer = bytearray(READ_BUFFER)
        self._view = memoryview(self._buffer)
        self._held = 0  # bytes of _buffer received and not yet framed
        self._frame: memoryview | None = None  # a large frame being received into its own buffer
        self._filled = 0
        self._ready: collections.deque[Frame] = collections.deque()
        self._ended: FrameError | None = None  # after the ready frames: the end, or why
        self._at_end = False
        self._reader: asyncio.Future[None] | None = None
        self._paused = False
        self._writable: asyncio.Future[None] | None = None  # while the transport is full
        self._lost = False
        self._closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    # The protocol's side, called by the transport.

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        # Held here: the loop keeps only a weak reference to a task.
        self.task = asyncio.get_running_loop().create_task(self._serve(self))

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame is not None:
            return self._frame[self._filled :]
        return self._view[self._held :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is not None:
            self._filled += nbytes
            if self._filled == len(self._frame):
                self._deliver(self._frame.toreadonly())
                self._frame = None
            return
        self._held += nbytes
        self._cut()

    def eof_received(self) -> bool:
        """The client has sent all it will. Its answers still go back over plain TCP (as
        asyncio's streams kept the socket open for them); over TLS the transport closes."""
        self._end()
        return self._transport_of().get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._end()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        if not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        if self._writable is None or self._writable.done():
            self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    # The server's side.

    async def read_frame(self) -> Frame | None:
        """The next request frame, without its size prefix; None once the client has gone.
        FrameError when a frame's prefix announces a size no request may have."""
        while not self._ready:
            if self._at_end:
                if self._ended is not None:
                    raise self._ended
                return None
            self._reader = asyncio.get_running_loop().create_future()
            await self._reader
        frame = self._ready.popleft()
        if self._paused and len(self._ready) < self._read_ahead and not self._at_end:
            self._paused = False
            self._transport_of().resume_reading()  # type: ignore[attr-defined]
        return frame

    def write(self, data: bytes) -> None:
        self._transport_of().write(data)  # type: ignore[attr-defined]

    async def drain(self) -> None:
        """Once the transport has room again; ConnectionResetError when the client is gone."""
        if self._writable is not None:
            await self._writable
        if self._lost:
            raise ConnectionResetError("the Kafka client closed its connection")

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    async def wait_closed(self) -> None:
        await self._closed

    def get_extra_info(self, name: str) -> Any:
        return self._transport_of().get_extra_info(name)

    # Within.

    def _cut(self) -> None:
        """Frame what the read buffer holds; keep the rest at its start."""
        view, at, held = self._view, 0, self._held
        while held - at >= PREFIX:
            try:
                size = frame_size(view[at : at + PREFIX])
            except FrameError as exc:
                self._ended = exc
                self._end()
                self._transport_of().pause_reading()  # type: ignore[attr-defined]
                return
            start = at + PREFIX
            if size >= OWN_BUFFER_FROM:
                own = memoryview(mmap.mmap(-1, size) if size >= MAPPED_FROM else bytearray(size))
                received = min(held - start, size)
                own[:received] = view[start : start + received]
                at = start + received
                if received == size:
                    self._deliver(own.toreadonly())
                    continue
                self._frame, self._filled = own, received
                break
            if held - start < size:
                break
            self._deliver(bytes(view[start : start + size]))
            at = start + size
        if at:
            view[: held - at] = view[at:held]
        self._held = held - at

    def _deliver(self, frame: Frame) -> None:
        self._ready.append(frame)
        if len(self._ready) >= self._read_ahead and not self._paused and not self._at_end:
            self._paused = True
            self._transport_of().pause_reading()  # type: ignore[attr-defined]
        self._wake()

    def _end(self) -> None:
        self._at_end = True
        self._wake()

    def _wake(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.set_result(None)

    def _transport_of(self) -> asyncio.BaseTransport:
        assert self._transport is not None, "not connected"
        return self._transport
