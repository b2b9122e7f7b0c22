"""The agent's Kafka listener: asyncio connections, the synchronous core in a bounded pool.

A connection may pipeline requests (Java's clients keep 5 in flight, librdkafka's as many as it
likes). They take effect in the order they came, as on a Kafka broker, which reads a
connection's next request only once it has answered the last (SocketServer mutes the channel):
a request starts only after the one before it has taken effect. A produce has taken effect
once its batches are queued in the group commit, which keeps their order from there, so produce
requests still overlap their uploads and commits; every other request holds its connection's
turn until it is answered, as on Kafka (a client sends what must not wait behind a long poll on
another connection). Answers go back in the same order. Concurrency is across connections,
never within one.

Group commit gathers the produce requests that wait for one flush, so a connection keeps many in
flight: librdkafka, at its defaults, sends a request per partition every linger without waiting
for answers. The number in flight per connection is bounded (produces, whose answers are small,
apart from the others), and so are their bytes, so a client that never reads its answers cannot
grow the agent's memory. A frame that cannot be parsed closes the connection, as Kafka closes
it; nothing is stored.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.kafka.apis import ApiKey
from tidelog.kafka.codec import (
    FrameError,
    Request,
    UnsupportedVersionError,
    code,
    decode_request,
    encode_response,
    encode_response_as,
    field,
)
from tidelog.kafka.framing import Frame, FramedConnection
from tidelog.kafka.handlers import Handlers, api_versions_answer
from tidelog.kafka.handoff import Handoff
from tidelog.kafka.listeners import PLAINTEXT
from tidelog.kafka.principals import ANONYMOUS, PrincipalMappingError
from tidelog.kafka.sasl import Authenticator, SaslSettings, Step
from tidelog.kafka.tls import CHECK_EVERY_S, ServerTls
from tidelog.threads import ContextPool

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = 16  # a connection's requests but produces: their answers may be large (fetches)
MAX_PRODUCES_IN_FLIGHT = 512  # Kafka's queued.max.requests is 500, a broker's
MAX_IN_FLIGHT_BYTES = 16 * 2**20  # of a connection's requests (16 of 1 MB); one always fits
WAITING = frozenset({ApiKey.FETCH, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP})
"""Requests that wait: a fetch's long poll, a member waiting for its group."""
LIVENESS = frozenset({ApiKey.HEARTBEAT, ApiKey.CONSUMER_GROUP_HEARTBEAT})
"""Requests that keep a session alive: a burst of slow commits never holds them up (100
members' auto-commits queued their heartbeats past their sessions)."""


class KafkaServer:
    """One listener: plaintext, or TLS with ``tls``, and SASL with ``sasl``
    (tidelog.kafka.listeners)."""

    def __init__(
        self,
        handlers: Handlers,
        *,
        workers: int = 32,
        waiters: int = 1024,
        producers: int = 1024,
        listener: str = PLAINTEXT,
        tls: ServerTls | None = None,
        sasl: SaslSettings | None = None,
    ) -> None:
        self.handlers = handlers
        self.listener = listener
        self._tls = tls
        self._sasl = sasl
        self._refresher: asyncio.Task[None] | None = None
        self._pool = ContextPool(workers, thread_name_prefix="tidelog-kafka")
        # Requests that wait (a fetch's long poll, a member waiting for its group) do so in
        # threads of their own, so they never hold up the requests they are waiting for; so do
        # heartbeats, which must never wait for a thread (LIVENESS). As many as a big group's
        # members joining at once: one that waited for a thread would join after the others'
        # generation, and start the next (threads start when needed).
        self._waiting_pool = ContextPool(waiters, thread_name_prefix="tidelog-wait")
        # A produce holds its thread until its flush commits (a PUT and a transaction: tens of
        # ms, a hundred on AWS), and group commit needs many waiting on one flush. In the 32
        # shared threads (and 16 in flight a connection), a librdkafka producer at its
        # defaults, steady at 1,000 records a second over six partitions, fell further behind
        # every second: a request a partition every linger, all waiting their turn to be read.
        self._producing_pool = ContextPool(producers, thread_name_prefix="tidelog-produce")
        self._handoff: Handoff | None = None  # the loop's, once bound
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], FramedConnection] = {}
        self._requests: set[asyncio.Future[bytes | None]] = set()  # answers being made

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (0 picks a free port); the port listened on."""
        port = await self.bind(host, port)
        await self.serve()
        return port

    async def bind(self, host: str, port: int) -> int:
        """Bind ``host:port`` without accepting yet: the port listened on."""
        self._handoff = Handoff(asyncio.get_running_loop())
        self._server = await asyncio.get_running_loop().create_server(
            lambda: FramedConnection(self._serve),
            host,
            port,
            start_serving=False,
            ssl=self._tls.context if self._tls is not None else None,
        )
        return int(self._server.sockets[0].getsockname()[1])

    async def serve(self) -> None:
        assert self._server is not None, "bind first"
        await self._server.start_serving()
        if self._tls is not None:
            self._refresher = asyncio.create_task(self._refresh(self._tls))

    @staticmethod
    async def _refresh(tls: ServerTls) -> None:
        """Rotated certificates, picked up in the loop that makes the handshakes."""
        while True:
            await asyncio.sleep(CHECK_EVERY_S)
            tls.refresh()

    async def stop(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for connection in self._connections.values():
            connection.close()  # each connection's read ends, and its loop with it
        await asyncio.gather(*self._connections, return_exceptions=True)
        for request in self._requests:
            request.cancel()  # answers nobody will read: a closed connection's
        await asyncio.gather(*self._requests, return_exceptions=True)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._waiting_pool.shutdown(wait=False, cancel_futures=True)
        self._producing_pool.shutdown(wait=False, cancel_futures=True)

    async def _serve(self, connection: FramedConnection) -> None:
        task = asyncio.current_task()
        assert task is not None
        principal = self._principal(connection)
        if principal is None:
            connection.close()
            return
        self._connections[task] = connection
        peer = connection.get_extra_info("peername")
        host = f"/{peer[0]}" if isinstance(peer, tuple) else ""
        auth = (
            Authenticator(self._sasl, encrypted=self._tls is not None)
            if self._sasl is not None
            else None
        )
        who = _Who(host, self.listener, principal, auth)
        answers: asyncio.Queue[_Pending | None] = asyncio.Queue(
            MAX_IN_FLIGHT + MAX_PRODUCES_IN_FLIGHT
        )
        budget = _Budget(MAX_IN_FLIGHT_BYTES)
        others = asyncio.Semaphore(MAX_IN_FLIGHT)
        responder = asyncio.create_task(self._respond(answers, connection, budget))
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        turn.set_result(None)  # the first request may start at once
        gone = threading.Event()
        try:
            while (frame := await connection.read_frame()) is not None:
                await budget.take(len(frame))
                pending, turn = self._answer(frame, who, gone, turn)
                pending.size = len(frame)
                if not pending.produces:
                    await others.acquire()
                    pending.slot = others
                await answers.put(pending)
                if pending.closes:
                    break
        except FrameError as exc:
            log.info("closing a Kafka connection: %s", exc)
        finally:
            gone.set()  # what it asked and has not committed need not be (see Handlers.produce)
            await answers.put(None)  # the responder drains the queue whatever happened
            await responder
            connection.close()
            await connection.wait_closed()
            self._connections.pop(task, None)

    def _principal(self, connection: FramedConnection) -> str | None:
        """Who the connection is: its client certificate's principal over TLS, else
        ANONYMOUS; None when its certificate maps to no principal (the connection closes)."""
        if self._tls is None:
            return ANONYMOUS
        ssl_object = connection.get_extra_info("ssl_object")
        peer = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        try:
            return self._tls.principal(peer)
        except PrincipalMappingError as exc:
            log.info("closing a Kafka connection: %s", exc)
            return None

    def _answer(
        self, frame: Frame, who: _Who, gone: threading.Event, turn: asyncio.Future[None]
    ) -> tuple[_Pending, asyncio.Future[None]]:
        """The request's answer to come, and the turn of the request after it: done once this
        one has taken effect. A request that is answered here takes no turn."""
        loop = asyncio.get_running_loop()
        if who.auth is not None and who.auth.raw and not who.auth.authenticated:
            return self._bare_token(bytes(frame), who.auth, turn, loop)
        try:
            request = dataclasses.replace(
                decode_request(frame),
                client_host=who.host,
                listener=who.listener,
                principal=who.principal,
                gone=gone,
            )
        except UnsupportedVersionError as exc:
            # ApiVersions at a version we do not know is answered at v0 with our versions
            # (KIP-511); any other API at a version we did not advertise closes the connection.
            if exc.api_key != ApiKey.API_VERSIONS:
                log.info("closing a Kafka connection: %s", exc)
                return _Pending.closing(loop), turn
            answer = api_versions_answer(code("UNSUPPORTED_VERSION"))
            frame = encode_response_as(ApiKey.API_VERSIONS, 0, exc.correlation_id, answer)
            return _Pending.ready(loop, frame), turn
        except FrameError as exc:
            log.info("closing a Kafka connection: %s", exc)
            return _Pending.closing(loop), turn
        taken: asyncio.Future[None] = loop.create_future()

        def took_effect(_: object = None) -> None:
            if not taken.done():
                taken.set_result(None)

        handoff = self._handoff_of()
        queued = functools.partial(handoff.call_soon, took_effect)
        pending = _Pending(loop.create_future(), produces=request.api_key == ApiKey.PRODUCE)
        pending.future.add_done_callback(took_effect)  # answered, or failed: the next may start
        self._requests.add(pending.future)
        pending.future.add_done_callback(self._requests.discard)
        pool = self._pool_for(request.api_key)
        if who.auth is None:
            # No step of its own on the loop: handed to its pool when its turn comes, with
            # no task of its own (under a flood of small requests, a task each and asyncio's
            # executor bridge were about a third of the loop's time).
            def start(_: object = None) -> None:
                if not pending.future.done():  # cancelled: the server is stopping
                    handoff.run_into(pending.future, pool, self._handle, request, queued)

            if turn.done():
                start()
            else:
                turn.add_done_callback(start)
            return pending, taken
        auth = who.auth
        # A request sent before its session ended may wait its turn behind slow ones past
        # the end (a produce taking a second, as librdkafka renews at 90% of the session).
        expired = auth.expired()

        async def in_turn() -> bytes | None:
            await turn
            step = await self._sasl_step(request, auth, expired=expired)
            if step is not None:
                await asyncio.sleep(step.delay_s)
                pending.then_close = step.closes
                return encode_response(request, step.answer)
            now = dataclasses.replace(request, principal=auth.principal)
            return await handoff.run(pool, self._handle, now, queued)

        task = asyncio.ensure_future(in_turn())
        task.add_done_callback(functools.partial(_copy_outcome, pending.future))
        pending.future.add_done_callback(lambda answer: answer.cancelled() and task.cancel())
        return pending, taken

    def _pool_for(self, api_key: int) -> ContextPool:
        if api_key == ApiKey.PRODUCE:
            return self._producing_pool
        if api_key in WAITING or api_key in LIVENESS:
            return self._waiting_pool
        return self._pool

    def _bare_token(
        self,
        token: bytes,
        auth: Authenticator,
        turn: asyncio.Future[None],
        loop: asyncio.AbstractEventLoop,
    ) -> tuple[_Pending, asyncio.Future[None]]:
        """A SASL token after a v0 handshake, answered bare; a failure closes unanswered."""
        pending = _Pending(loop.create_future())
        answered: asyncio.Future[None] = loop.create_future()  # the next frame waits for it

        async def in_turn() -> bytes | None:
            await turn
            try:
                answer, delay_s = await self._handoff_of().run(
                    self._pool, auth.authenticate_raw, token
                )
                await asyncio.sleep(delay_s)
            finally:
                answered.set_result(None)
            if answer is None:
                raise UnauthenticatedError("a SASL token failed (v0 handshake): closing")
            return struct.pack(">i", len(answer)) + answer

        task = asyncio.ensure_future(in_turn())
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)
        pending.future = task
        return pending, answered

    async def _sasl_step(
        self,
        request: Request,
        auth: Authenticator,
        *,
        expired: bool,
    ) -> Step | None:
        """A SASL listener's gate: the handshake and the mechanism's exchange answered here;
        None for a request to serve (ApiVersions, or any once authenticated). Anything else
        before authentication closes the connection, as Kafka's authenticator closes it;
        so does a request that arrived after its session ended (``expired``: judged when it
        arrived, not when its turn came, as Kafka judges it on receipt)."""
        if request.api_key == ApiKey.SASL_HANDSHAKE:
            return auth.handshake(request)
        if request.api_key == ApiKey.SASL_AUTHENTICATE:
            return await self._handoff_of().run(self._pool, auth.authenticate, request)
        if expired:  # KIP-368: a session that was not renewed in time
            raise UnauthenticatedError("the SASL session expired without re-authentication")
        if auth.authenticated or request.api_key == ApiKey.API_VERSIONS:
            return None
        raise UnauthenticatedError(
            f"unexpected {request.api_key.name} during SASL authentication: closing"
        )

    def _handoff_of(self) -> Handoff:
        assert self._handoff is not None, "bind first"
        return self._handoff

    def _handle(self, request: Request, queued: Callable[[], None]) -> bytes | None:
        try:
            answer = self.handlers.handle(request, queued)
        except Exception:
            log.exception("%s v%d failed", request.api_key.name, request.api_version)
            raise
        if request.api_key == ApiKey.PRODUCE and int(field(request.body, "acks", -1)) == 0:
            return None  # acks=0: the client reads no answer
        return encode_response(request, answer)

    @staticmethod
    async def _respond(
        answers: asyncio.Queue[_Pending | None], connection: FramedConnection, budget: _Budget
    ) -> None:
        """Write the answers in order until the connection must close; after that, keep
        taking them from the queue unanswered, so the reading side never waits on it."""
        writing = True
        while (pending := await answers.get()) is not None:
            if not writing:
                # Unanswered, but its outcome read: a failure after the close (each pipelined
                # request of an expired session fails alike) is no "never retrieved" error.
                pending.future.add_done_callback(_outcome_read)
                pending.future.add_done_callback(functools.partial(_release, budget, pending))
                continue
            closes = pending.closes
            try:
                frame = await pending.future
            except UnauthenticatedError as exc:
                log.info("closing a Kafka connection: %s", exc)
                frame, closes = None, True
            except Exception:  # noqa: BLE001 - logged where it was raised
                frame, closes = None, True  # a handler failed: Kafka closes the connection too
            if frame is not None and not closes:
                try:
                    connection.write(frame)
                    await connection.drain()
                except ConnectionError:
                    closes = True  # the client went away
            _release(budget, pending)
            if not (closes or pending.then_close):
                continue
            writing = False
            connection.close()  # the reading side sees the end and stops


class _Budget:
    """The bytes of a connection's requests in flight, held to ``limit``: reading waits until
    answers free enough (a request larger than the whole budget goes alone)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._used = 0
        self._freed = asyncio.Event()

    async def take(self, size: int) -> None:
        while self._used and self._used + size > self._limit:
            self._freed.clear()
            await self._freed.wait()
        self._used += size

    def give(self, size: int) -> None:
        self._used -= size
        self._freed.set()


def _release(budget: _Budget, pending: _Pending, _: object = None) -> None:
    """What an answered request held: its bytes, and its slot if it is not a produce."""
    budget.give(pending.size)
    if pending.slot is not None:
        pending.slot.release()


def _copy_outcome(into: asyncio.Future[bytes | None], done: asyncio.Future[bytes | None]) -> None:
    if into.done():  # cancelled: the server is stopping
        _outcome_read(done)  # nobody will read it: no "never retrieved" error either
        return
    if done.cancelled():
        into.cancel()
    elif (error := done.exception()) is not None:
        into.set_exception(error)
    else:
        into.set_result(done.result())


def _outcome_read(future: asyncio.Future[bytes | None]) -> None:
    if not future.cancelled():
        future.exception()


@dataclass(frozen=True)
class _Who:
    """Where a connection came from, on which listener, as whom."""

    host: str  # as Kafka names it: "/10.0.0.7"
    listener: str
    principal: str
    auth: Authenticator | None = None  # a SASL listener's: who it becomes once authenticated


class UnauthenticatedError(Exception):
    """A request other than ApiVersions and SASL's own before authentication."""


@dataclass
class _Pending:
    """A request's answer, in the order the requests came: its frame, None for no answer
    (acks=0), and whether the connection closes there."""

    future: asyncio.Future[bytes | None]
    closes: bool = False  # without answering
    then_close: bool = False  # once its answer is written (a failed login)
    produces: bool = False  # a produce: its answer is small, and it waits on a flush
    size: int = 0  # of its request, counted against the connection's budget until answered
    slot: asyncio.Semaphore | None = None  # held until answered, by requests but produces

    @classmethod
    def ready(cls, loop: asyncio.AbstractEventLoop, frame: bytes) -> _Pending:
        future: asyncio.Future[bytes | None] = loop.create_future()
        future.set_result(frame)
        return cls(future)

    @classmethod
    def closing(cls, loop: asyncio.AbstractEventLoop) -> _Pending:
        future: asyncio.Future[bytes | None] = loop.create_future()
        future.set_result(None)
        return cls(future, closes=True)
