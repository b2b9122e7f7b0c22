"""Group commit, for a long-running host: concurrent requests share one object and one commit.

A request that finds the host idle is flushed at once; requests that come while a flush is in
flight wait (acks=all) and go together in the next one. So one client sending one message at a
time waits one PUT and one commit, and many clients get big objects and few PUTs, without a
timer: the flush in flight is the window, and it grows with the load. ``flush_ms``, when set,
is a least window: an idle host gathers that long before it flushes, for fewer PUTs at low
rates (docs/cost.md). Past ``flush_bytes`` waiting, a flush starts at once. In Lambda each
request is its own flush.

One flush at a time caps a host at one object per PUT and commit; where their latency is what
limits it, up to ``in_flight`` flushes may overlap: their uploads run side by side, and they
commit strictly in the order they were taken, so each partition keeps its order (and an
idempotent producer its sequence). Only the first starts on an idle host; one more starts beside
it only once ``flush_bytes`` are waiting, so objects stay big and PUTs per GiB stay few.

A flush is made for every request in it: in ``tidelog dev``, where functions share this
process, its calls name the roles of all of them (:data:`tidelog.principals.acting_for`), and each
role must allow them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from tidelog import principals
from tidelog.log.write.plan import AppendResult, WithdrawnError
from tidelog.log.write.writer import AppendRequest, Upload, Writer

log = logging.getLogger(__name__)

# A flush slower than this is logged with where its time went: Kafka clients time a request
# out after 30 s by default, and many users set 5.
SLOW_FLUSH_S = 5.0


class GroupCommitter:
    def __init__(self, writer: Writer, *, flush_ms: int, flush_bytes: int, in_flight: int) -> None:
        self._writer = writer
        self._flush_s = flush_ms / 1000
        self._flush_bytes = flush_bytes
        self._max_in_flight = in_flight
        self._pending: list[tuple[AppendRequest, Future[AppendResult]]] = []
        self._roles: dict[Future[AppendResult], frozenset[str]] = {}  # see the module's doc
        self._bytes = 0
        self._oldest = 0.0
        self._in_flight = 0
        self._urgent = False
        self._wake = threading.Condition()
        self._committed = 0  # flushes committed (or failed), in the order they were taken
        self._turn = threading.Condition()
        # One thread more than flushes: a flush's thread writes its object to the cache once
        # it has committed, while the next flush runs.
        self._uploads = ThreadPoolExecutor(in_flight + 1, thread_name_prefix="tidelog-flush")
        threading.Thread(target=self._run, name="tidelog-group-commit", daemon=True).start()

    def append(self, requests: Sequence[AppendRequest]) -> list[AppendResult]:
        return [future.result() for future in self.submit(requests)]

    def submit(
        self, requests: Sequence[AppendRequest], *, urgent: bool = False
    ) -> list[Future[AppendResult]]:
        """Queue ``requests`` for the next flush: they commit after everything submitted
        before them, and each partition's batches keep the order in which they came.
        ``urgent``: flush without waiting for the window (a transaction's markers: their
        caller waits, and nothing gathers behind them)."""
        futures: list[Future[AppendResult]] = []
        roles = principals.acting_for.get()
        with self._wake:
            if not self._pending:
                self._oldest = time.monotonic()
            self._urgent = self._urgent or urgent
            for request in requests:
                future: Future[AppendResult] = Future()
                self._pending.append((request, future))
                if roles:
                    self._roles[future] = roles
                self._bytes += sum(len(b.data) for b in request.batches)
                futures.append(future)
            self._wake.notify()
        return futures

    def _run(self) -> None:
        taken_so_far = 0
        while True:
            with self._wake:
                while not self._due():
                    self._wake.wait(self._until_due())
                taken = self._take()
                roles = frozenset().union(*(self._roles.pop(f, frozenset()) for _, f in taken))
                self._in_flight += 1
            self._uploads.submit(self._flush_for, roles, taken_so_far, taken)
            taken_so_far += 1

    def _due(self) -> bool:
        if not self._pending or self._in_flight >= self._max_in_flight:
            return False
        if self._bytes >= self._flush_bytes:
            return True
        return self._in_flight == 0 and (
            self._urgent or time.monotonic() >= self._oldest + self._flush_s
        )

    def _until_due(self) -> float | None:
        """How long the window has left; None: only a flush ending or a request can change
        anything."""
        if not self._pending or self._in_flight > 0:
            return None
        return max(0.0, self._oldest + self._flush_s - time.monotonic())

    def _take(self) -> list[tuple[AppendRequest, Future[AppendResult]]]:
        """Everything pending, except that a conditional append never shares its partition's
        flush with another request (its expected offset is about the partition alone). What
        is kept for a partition keeps everything after it too: a partition's order is the
        order its requests came in. Withdrawn requests are dropped."""
        taken: list[tuple[AppendRequest, Future[AppendResult]]] = []
        kept: list[tuple[AppendRequest, Future[AppendResult]]] = []
        seen: dict[tuple[str, int], bool] = {}
        waiting: set[tuple[str, int]] = set()
        for request, future in self._pending:
            if request.is_withdrawn:
                error = WithdrawnError("the client is gone: its request was withdrawn unsent")
                future.set_result(AppendResult(request.partition, error=error))
                self._roles.pop(future, None)
                continue
            key = (request.topic.topic_id, request.partition)
            conditional = request.expected_offset is not None
            if key in waiting or (key in seen and (conditional or seen[key])):
                kept.append((request, future))
                waiting.add(key)
                continue
            seen[key] = conditional
            taken.append((request, future))
        self._pending = kept
        self._bytes = sum(len(b.data) for r, _ in kept for b in r.batches)
        self._oldest = time.monotonic()
        self._urgent = False
        return taken

    def _flush_for(
        self,
        roles: frozenset[str],
        number: int,
        taken: list[tuple[AppendRequest, Future[AppendResult]]],
    ) -> None:
        with principals.acting_as(roles):
            self._flush(number, taken)

    def _flush(self, number: int, taken: list[tuple[AppendRequest, Future[AppendResult]]]) -> None:
        """Upload now; commit once every flush taken before this one has committed. The flush
        is over once committed: what the writer does after that (its cache's write of the
        object) runs beside the next flush."""
        upload: Upload | BaseException
        started = time.monotonic()
        try:
            upload = self._writer.upload([request for request, _ in taken])
        except BaseException as exc:  # noqa: BLE001 - waiting requests must hear of any failure
            upload = exc
        uploaded = time.monotonic()
        with self._turn:
            while self._committed != number:
                self._turn.wait()
        turn = time.monotonic()
        ended = False

        def end() -> None:
            nonlocal ended
            ended = True
            self._over(started, uploaded, turn, len(taken))

        try:
            if isinstance(upload, BaseException):
                raise upload
            results = upload.commit(end)
        except BaseException as exc:  # noqa: BLE001 - see above
            for _, future in taken:
                future.set_exception(exc)
        else:
            for (_, future), result in zip(taken, results, strict=True):
                future.set_result(result)
        finally:
            if not ended:
                end()

    def _over(self, started: float, uploaded: float, turn: float, requests: int) -> None:
        """A flush is over: the next may commit, and another may start."""
        with self._turn:
            self._committed += 1
            self._turn.notify_all()
        done = time.monotonic()
        if done - started > SLOW_FLUSH_S:
            log.warning(
                "slow flush of %d requests: %.1f s (upload %.1f s, waiting for the flush "
                "before %.1f s, commit %.1f s)",
                requests,
                done - started,
                uploaded - started,
                turn - uploaded,
                done - turn,
            )
        with self._wake:
            self._in_flight -= 1
            self._wake.notify()
