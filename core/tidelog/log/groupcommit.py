"""Group commit, for a long-running host: concurrent requests share one object and one commit.

Each request waits (acks=all) while the flusher gathers everything pending for up to
``flush_ms``, or until ``flush_bytes`` are waiting, then writes it all as one flush. Fewer, larger
objects and transactions: far fewer S3 PUTs per GiB. In Lambda each request is its own flush.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future

from tidelog.log.commit import AppendResult
from tidelog.log.writer import AppendRequest, Writer


class GroupCommitter:
    def __init__(self, writer: Writer, *, flush_ms: int, flush_bytes: int) -> None:
        self._writer = writer
        self._flush_s = flush_ms / 1000
        self._flush_bytes = flush_bytes
        self._pending: list[tuple[AppendRequest, Future[AppendResult]]] = []
        self._bytes = 0
        self._oldest = 0.0
        self._wake = threading.Condition()
        threading.Thread(target=self._run, name="tidelog-group-commit", daemon=True).start()

    def append(self, requests: Sequence[AppendRequest]) -> list[AppendResult]:
        futures: list[Future[AppendResult]] = []
        with self._wake:
            if not self._pending:
                self._oldest = time.monotonic()
            for request in requests:
                future: Future[AppendResult] = Future()
                self._pending.append((request, future))
                self._bytes += sum(len(b.data) for b in request.batches)
                futures.append(future)
            self._wake.notify()
        return [future.result() for future in futures]

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._due():
                    timeout = (
                        None
                        if not self._pending
                        else max(0.0, self._oldest + self._flush_s - time.monotonic())
                    )
                    self._wake.wait(timeout)
                taken = self._take()
            self._flush(taken)

    def _due(self) -> bool:
        return bool(self._pending) and (
            self._bytes >= self._flush_bytes or time.monotonic() >= self._oldest + self._flush_s
        )

    def _take(self) -> list[tuple[AppendRequest, Future[AppendResult]]]:
        """Everything pending, except that a conditional append never shares its partition's
        flush with another request (its expected offset is about the partition alone)."""
        taken: list[tuple[AppendRequest, Future[AppendResult]]] = []
        kept: list[tuple[AppendRequest, Future[AppendResult]]] = []
        seen: dict[tuple[str, int], bool] = {}
        for request, future in self._pending:
            key = (request.topic.topic_id, request.partition)
            conditional = request.expected_offset is not None
            if key in seen and (conditional or seen[key]):
                kept.append((request, future))
                continue
            seen[key] = conditional
            taken.append((request, future))
        self._pending = kept
        self._bytes = sum(len(b.data) for r, _ in kept for b in r.batches)
        self._oldest = time.monotonic()
        return taken

    def _flush(self, taken: list[tuple[AppendRequest, Future[AppendResult]]]) -> None:
        try:
            results = self._writer.append([request for request, _ in taken])
        except BaseException as exc:  # noqa: BLE001 - waiting requests must hear of any failure
            for _, future in taken:
                future.set_exception(exc)
            return
        for (_, future), result in zip(taken, results, strict=True):
            future.set_result(result)
