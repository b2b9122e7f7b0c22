"""The write path: validated batches in, committed offsets out.

    stage the flush object on local disk -> PUT it (If-None-Match: *) -> commit -> offsets

Nothing is acknowledged before the commit. An object whose every partition failed to commit is
recorded as an orphan for garbage collection (this path never deletes).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path

from tidelog.errors import RetriableError
from tidelog.log import flushobject, keys
from tidelog.log.feed import Listener
from tidelog.log.garbage import record_orphan
from tidelog.log.head import high_watermark
from tidelog.log.topics import Topic
from tidelog.log.write.commit import Committer, Sleep
from tidelog.log.write.plan import (
    AppendResult,
    OffsetMismatchError,
    PartitionAppend,
    TransactionalIdRequiredError,
)
from tidelog.log.write.staging import Recovery, StagingArea, recover
from tidelog.log.write.validate import ProducedBatch
from tidelog.storage import (
    MetadataStore,
    ObjectStore,
    StorageUnavailableError,
    put_new,
)
from tidelog.txn.guard import TxnGuard

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AppendRequest:
    """``withdrawn``, once set, withdraws the request if it has not committed yet: its client
    is gone (tidelog.kafka.server). ``guard``: a transaction's request commits only while it
    holds (tidelog.txn.guard)."""

    topic: Topic
    partition: int
    batches: Sequence[ProducedBatch]
    expected_offset: int | None = None
    withdrawn: threading.Event | None = None
    guard: TxnGuard | None = None

    @property
    def is_withdrawn(self) -> bool:
        return self.withdrawn is not None and self.withdrawn.is_set()


@dataclass(frozen=True)
class _Stored:
    object_key: str
    body: bytes
    extents: list[flushobject.Extent]
    staged: Path


@dataclass(frozen=True)
class Upload:
    """A flush whose object is stored (or whose requests already failed), awaiting its commit."""

    writer: Writer
    requests: Sequence[AppendRequest]
    settled: dict[int, AppendResult]  # by request index: failed before any commit
    stored: _Stored | None

    def commit(self, over: Callable[[], None] = lambda: None) -> list[AppendResult]:
        """Results in request order, each with its own batches' offsets. ``over`` is called
        once they are final, before this host's readers are told of the object: its cache's
        write of the whole object to disk, which the next flush need not wait for."""
        live = [r for i, r in enumerate(self.requests) if i not in self.settled]
        committed: list[AppendResult] = []
        if self.stored is None:
            over()
        else:
            committed = self.writer._commit(live, self.stored, over)
        each = iter(committed)
        return [
            self.settled[i] if i in self.settled else next(each) for i in range(len(self.requests))
        ]


class Writer:
    def __init__(
        self,
        meta: MetadataStore,
        objects: ObjectStore,
        staging: StagingArea,
        *,
        clock_ms: Callable[[], int],
        sleep: Sleep,
        jitter: Callable[[], float],
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        put_attempts: int = 5,
        on_committed: Callable[[str, bytes], None] | None = None,
        on_commit: Listener | None = None,
    ) -> None:
        """``on_committed(object_key, body)`` hears of every object the log now references
        (a long-running host caches it for its readers); its failure fails no append.
        ``on_commit`` hears the heads and index entries its commits write
        (tidelog.log.feed)."""
        self._meta = meta
        self._objects = objects
        self._staging = staging
        self._clock_ms = clock_ms
        self._sleep = sleep
        self._new_id = new_id
        self._put_attempts = put_attempts
        self._on_committed = on_committed
        self._committer = Committer(
            meta, clock_ms=clock_ms, sleep=sleep, jitter=jitter, on_commit=on_commit
        )

    def append(self, requests: Sequence[AppendRequest]) -> list[AppendResult]:
        """One flush: every request's batches in one object, committed per partition.
        Results come back in request order, each with its own batches' offsets; requests for
        one partition succeed or fail together."""
        return self.upload(requests).commit()

    def submit(
        self, requests: Sequence[AppendRequest], *, urgent: bool = False
    ) -> list[Future[AppendResult]]:
        """``append``, done by the time it returns (GroupCommitter's interface; every flush
        here is at once)."""
        futures: list[Future[AppendResult]] = []
        for result in self.append(requests):
            future: Future[AppendResult] = Future()
            future.set_result(result)
            futures.append(future)
        return futures

    def upload(self, requests: Sequence[AppendRequest]) -> Upload:
        """A flush's first half: its object staged and stored, nothing committed. Uploads may
        overlap; committing them in the order they were made keeps each partition's order."""
        stale = self._stale_expectations(requests) | _unguarded(requests)
        live = [r for i, r in enumerate(requests) if i not in stale]
        if not live:
            return Upload(self, requests, stale, None)
        merged: dict[tuple[str, int], list[ProducedBatch]] = {}
        for request in live:
            merged.setdefault((request.topic.topic_id, request.partition), []).extend(
                request.batches
            )
        body, extents = flushobject.encode(
            {key: [b.data for b in batches] for key, batches in merged.items()}
        )
        object_key = keys.flush_object_key(self._clock_ms(), self._new_id())
        staged = self._staging.stage(object_key, body)
        try:
            self._put(object_key, body)
        except StorageUnavailableError as exc:
            self._settle_unreferenced(object_key, staged)
            error = RetriableError(f"could not store the batches: {exc.message}; retry")
            failed = {
                i: AppendResult(r.partition, error=error)
                for i, r in enumerate(requests)
                if i not in stale
            }
            return Upload(self, requests, stale | failed, None)
        return Upload(self, requests, stale, _Stored(object_key, body, extents, staged))

    def _commit(
        self, requests: Sequence[AppendRequest], stored: _Stored, over: Callable[[], None]
    ) -> list[AppendResult]:
        merged: dict[tuple[str, int], list[ProducedBatch]] = {}
        topics: dict[tuple[str, int], Topic] = {}
        expected: dict[tuple[str, int], int | None] = {}
        ends: dict[tuple[str, int], list[int]] = {}  # where each request's batches end
        withdrawn: dict[tuple[str, int], list[int]] = {}  # which of them are withdrawn
        guards: dict[tuple[str, int], dict[int, TxnGuard]] = {}  # and their transactions
        slices = []  # each request's batches within its partition's merged list, and its number
        for request in requests:
            key = (request.topic.topic_id, request.partition)
            batches = merged.setdefault(key, [])
            slices.append(
                (key, len(batches), len(batches) + len(request.batches), len(ends.get(key, [])))
            )
            batches.extend(request.batches)
            if request.is_withdrawn:
                withdrawn.setdefault(key, []).append(len(ends.get(key, [])))
            if request.guard is not None:
                guards.setdefault(key, {})[len(ends.get(key, []))] = request.guard
            ends.setdefault(key, []).append(len(batches))
            topics[key] = request.topic
            expected[key] = request.expected_offset
        appends = [
            PartitionAppend(
                topics[key],
                e.partition,
                merged[key],
                e,
                expected[key],
                tuple(ends[key]),
                frozenset(withdrawn.get(key, ())),
                guards.get(key, {}),
            )
            for e in stored.extents
            for key in [(e.topic_id, e.partition)]
        ]
        results, referenced = self._committer.commit(appends, stored.object_key)
        if referenced:
            self._staging.remove(stored.staged)
        else:
            self._settle_unreferenced(stored.object_key, stored.staged)
        over()
        if referenced:
            self._tell_committed(stored.object_key, stored.body)
        return [
            _request_result(results[key], start, end, number) for key, start, end, number in slices
        ]

    def _stale_expectations(self, requests: Sequence[AppendRequest]) -> dict[int, AppendResult]:
        """Conditional appends that cannot succeed fail before anything is uploaded (the
        commit checks again: the head may still move in between)."""
        stale = {}
        for i, request in enumerate(requests):
            if request.expected_offset is None:
                continue
            _, end = high_watermark(self._meta, request.topic.topic_id, request.partition)
            if end != request.expected_offset:
                error = OffsetMismatchError(request.expected_offset, end)
                stale[i] = AppendResult(request.partition, error=error)
        return stale

    def _put(self, object_key: str, body: bytes) -> None:
        for attempt in range(self._put_attempts):
            try:
                put_new(self._objects, object_key, body)  # finds an earlier attempt's object
                return
            except StorageUnavailableError:
                if attempt == self._put_attempts - 1:
                    raise
                self._sleep(0.01 * 2**attempt)

    def _tell_committed(self, object_key: str, body: bytes) -> None:
        if self._on_committed is None:
            return
        try:
            self._on_committed(object_key, body)
        except Exception:
            log.warning("on_committed failed for %s", object_key, exc_info=True)

    def _settle_unreferenced(self, object_key: str, staged: Path) -> None:
        """No index item points at the object (nothing committed, or only retries): record it
        for collection. Until that is done the staging file stays, for recovery to finish."""
        try:
            record_orphan(self._meta, object_key, self._clock_ms())
        except Exception:
            log.warning("could not record orphan %s; staging keeps it", object_key, exc_info=True)
            return
        self._staging.remove(staged)


def _unguarded(requests: Sequence[AppendRequest]) -> dict[int, AppendResult]:
    """Transactional batches produced without their transaction fail before anything is
    uploaded (the commit refuses them too: tidelog.log.write.plan)."""
    return {
        i: AppendResult(
            r.partition,
            error=TransactionalIdRequiredError(
                "transactional batches must be produced with their transactional id"
            ),
        )
        for i, r in enumerate(requests)
        if r.guard is None and any(b.transactional and b.marker is None for b in r.batches)
    }


def _request_result(partition: AppendResult, start: int, end: int, number: int) -> AppendResult:
    """One request's share of its partition's result: its batches' offsets, or its error."""
    if partition.error is not None:
        return partition
    if number in partition.refused:
        return AppendResult(partition.partition, error=partition.refused[number])
    return replace(partition, batch_offsets=partition.batch_offsets[start:end], refused={})


def recover_staging(directory: Path, meta: MetadataStore, now_ms: int) -> Recovery:
    """What a restarted host does first: recover its staging area, and record every object a
    previous life may have uploaded without committing as an orphan for collection."""
    report = recover(directory)
    for key in report.orphan_keys:
        record_orphan(meta, key, now_ms)
    if report.entries or report.truncated_bytes:
        log.warning("staging recovery: %s", report)
    return report
