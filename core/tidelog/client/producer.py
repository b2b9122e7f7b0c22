"""``Producer``: Kafka's producer over the HTTP API.

Records wait in a batch per partition until ``batch.size`` bytes or ``linger.ms``, as Kafka's
RecordAccumulator keeps them; a sender thread then builds each batch (RecordBatch v2, compressed
here) and posts it raw to the partition's batches route. With ``enable.idempotence`` (the
default) the producer takes an id from ``POST /v1/producers`` and numbers each partition's
batches, so a batch sent again after a 503 or a timeout is written once: the API answers a
duplicate with its first offsets.

One batch per partition is in flight at a time (Kafka allows up to five): a partition's batches
are acknowledged, and their callbacks called, strictly in the order they were produced, and a
retry never overtakes the batch behind it. Partitions are sent in parallel.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx2

from tidelog.client import config as settings
from tidelog.client.admin import Admin
from tidelog.client.http import Http
from tidelog.client.producer_config import ProducerConfig
from tidelog.client.transactional import TransactionCalls, Transactions
from tidelog.errors import InvalidRequestError, RetriableError, TidelogError
from tidelog.partitioner import DefaultPartitioner
from tidelog.records import RecordBatchBuilder

log = logging.getLogger(__name__)

BATCH_MEDIA_TYPE = "application/vnd.kafka.record-batch"
DeliveryCallback = Callable[[TidelogError | None, "RecordMetadata | None"], None]
Headers = Sequence[tuple[str, bytes | None]] | Mapping[str, bytes | None]


@dataclass(frozen=True)
class RecordMetadata:
    """Where a record was written (Kafka's RecordMetadata)."""

    topic: str
    partition: int
    offset: int
    timestamp: int


@dataclass
class _Record:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp: int
    future: Future[RecordMetadata]
    callback: DeliveryCallback | None
    size: int


@dataclass
class _Batch:
    records: list[_Record] = field(default_factory=list)
    size: int = 0
    created: float = field(default_factory=time.monotonic)
    identity: tuple[int, int] | None = None  # the producer id and epoch it was numbered under


@dataclass
class _Partition:
    pending: deque[_Batch] = field(default_factory=deque)
    busy: bool = False
    sequence: int = 0


class Producer(TransactionCalls):
    def __init__(
        self, config: Mapping[str, Any] | None = None, *, http: Http | None = None, **overrides: Any
    ) -> None:
        """``config``: Kafka's producer keys, plus ``url``/``cluster``/``sign``/``region`` for
        the API (as tidelog.client.Http); ``overrides`` in Python spelling
        (``linger_ms=0``). ``http``: a connection of the caller's (it is closed with the
        producer)."""
        self.config, connection = ProducerConfig.parse(settings.merged(config, overrides))
        self._http = http or Http(timeout_s=self.config.request_timeout_ms / 1000, **connection)
        self._admin = Admin(http=self._http)
        self._partitioner = DefaultPartitioner(batch_size=self.config.batch_size)
        self._txn = (
            Transactions(
                self._http, self.config.transactional_id, self.config.transaction_timeout_ms
            )
            if self.config.transactional_id
            else None
        )
        self._partitions: dict[tuple[str, int], _Partition] = {}
        self._counts: dict[str, tuple[int, float]] = {}  # topic -> (partitions, read at)
        self._identity: tuple[int, int] | None = None
        self._buffered = 0
        self._unsent = 0  # records produced and not yet completed
        self._lock = threading.Condition()
        self._closed = False
        self._senders = ThreadPoolExecutor(16, thread_name_prefix="tidelog-producer")
        self._thread = threading.Thread(target=self._run, name="tidelog-producer", daemon=True)
        self._thread.start()

    # -- the caller's side ----------------------------------------------------------------

    def produce(  # noqa: PLR0917 - confluent-kafka's signature, positional as there
        self,
        topic: str,
        value: bytes | str | None = None,
        key: bytes | str | None = None,
        partition: int | None = None,
        headers: Headers | None = None,
        timestamp: int | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> Future[RecordMetadata]:
        """Queue a record; the future (and ``on_delivery``, on the producer's thread) tells
        where it was written, or why it was not. A transactional producer produces inside a
        transaction only."""
        if self._txn is not None:
            self._txn.require_open()
        key_bytes, value_bytes = _bytes(key), _bytes(value)
        pairs = list(headers.items() if isinstance(headers, Mapping) else headers or ())
        header_list = [(str(k), _bytes(v)) for k, v in pairs]
        size = (
            21
            + len(key_bytes or b"")
            + len(value_bytes or b"")
            + sum(len(k) + len(v or b"") + 4 for k, v in header_list)
        )
        if size > self.config.max_request_size:
            raise InvalidRequestError(
                f"The message is {size} bytes when serialized which is larger than "
                f"max.request.size ({self.config.max_request_size})",
                kafka_error="MESSAGE_TOO_LARGE",
            )
        count = self._partition_count(topic)
        if partition is None:
            partition = self._partitioner.partition(topic, key_bytes, value_bytes, count)
        elif not 0 <= partition < count:
            raise InvalidRequestError(
                f"partition {partition} of {topic!r}, which has {count}",
                kafka_error="UNKNOWN_TOPIC_OR_PARTITION",
            )
        future: Future[RecordMetadata] = Future()
        stamp = timestamp if timestamp is not None else time.time_ns() // 1_000_000
        record = _Record(key_bytes, value_bytes, header_list, stamp, future, on_delivery, size)
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        with self._lock:
            while self._buffered + size > self.config.buffer_memory and not self._closed:
                if not self._lock.wait(max(0.0, deadline - time.monotonic())):
                    raise BufferError(f"buffer.memory full for {self.config.max_block_ms} ms")
            if self._closed:
                raise RuntimeError("the producer is closed")
            state = self._partitions.setdefault((topic, partition), _Partition())
            if not state.pending or state.pending[-1].size + size > self.config.batch_size:
                state.pending.append(_Batch())
            batch = state.pending[-1]
            batch.records.append(record)
            batch.size += size
            self._buffered += size
            self._unsent += 1
            self._lock.notify_all()
        if key_bytes is None:
            self._partitioner.on_append(topic, partition, size)
        return future

    def flush(self, timeout: float | None = None) -> int:
        """Send everything queued now and wait for it; the number still unsent at timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            self._flushing += 1
            self._lock.notify_all()
            try:
                while self._unsent:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        break
                    self._lock.wait(left)
                return self._unsent
            finally:
                self._flushing -= 1

    def append(
        self,
        topic: str,
        partition: int,
        values: Iterable[bytes | str | tuple[Any, Any] | None],
        *,
        expected_offset: int,
    ) -> list[RecordMetadata]:
        """tidelog's conditional append: ``values`` (each a value or a ``(key, value)`` pair)
        as one batch, written now, and only if the partition's high watermark is exactly
        ``expected_offset``. Otherwise ``ConflictError`` (412), with the partition's
        ``high_watermark`` in its ``details``, and nothing written. A writer that tracks its
        partition's end gets exactly-once appends this way: a retry after a lost answer is
        refused, and the watermark it names says whether the first try landed."""
        builder = RecordBatchBuilder(self.config.compression_type)
        now = time.time_ns() // 1_000_000
        count = 0
        for item in values:
            key, value = item if isinstance(item, tuple) else (None, item)
            builder.append(_bytes(key), _bytes(value), (), now)
            count += 1
        if not count:
            raise InvalidRequestError("append needs at least one record")
        answer = self._post(topic, partition, builder.build(), expected_offset=expected_offset)
        stamp = answer["log_append_time"] if answer["log_append_time"] >= 0 else now
        return [
            RecordMetadata(topic, partition, answer["base_offset"] + i, stamp) for i in range(count)
        ]

    def __len__(self) -> int:
        """Records produced and not yet acknowledged (or failed)."""
        with self._lock:
            return self._unsent

    def close(self, timeout: float | None = None) -> None:
        """Flush (for up to ``timeout``), then stop. Records still queued then fail, as after
        Kafka's close with a timeout; batches already sent finish."""
        self.flush(timeout)
        with self._lock:
            self._closed = True
            abandoned = [
                (key, state.pending.popleft())
                for key, state in self._partitions.items()
                for _ in range(len(state.pending))
            ]
            self._lock.notify_all()
        closed = RetriableError(
            "the producer was closed before this record was sent", kafka_error="REQUEST_TIMED_OUT"
        )
        for key, batch in abandoned:
            self._complete(key, batch, {}, closed)
        self._thread.join()
        self._senders.shutdown(wait=True)
        self._http.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the sender's side ----------------------------------------------------------------

    _flushing = 0  # callers waiting in flush(): send without lingering

    def _run(self) -> None:
        while True:
            with self._lock:
                ready = self._ready()
                while not ready:
                    if self._closed and not any(s.pending for s in self._partitions.values()):
                        return
                    self._lock.wait(self._until_ready())
                    ready = self._ready()
                for key, _ in ready:
                    self._partitions[key].busy = True
            for key, batch in ready:
                self._senders.submit(self._send, key, batch)

    def _ready(self) -> list[tuple[tuple[str, int], _Batch]]:
        """Batches to send now, at most one per partition, taken off their queues."""
        now = time.monotonic()
        linger = self.config.linger_ms / 1000
        ready = []
        for key, state in self._partitions.items():
            if state.busy or not state.pending:
                continue
            first = state.pending[0]
            full = len(state.pending) > 1 or first.size >= self.config.batch_size
            if full or self._flushing or self._closed or now - first.created >= linger:
                ready.append((key, state.pending.popleft()))
        return ready

    def _until_ready(self) -> float | None:
        waits = [
            s.pending[0].created + self.config.linger_ms / 1000 - time.monotonic()
            for s in self._partitions.values()
            if s.pending and not s.busy
        ]
        return max(0.0, min(waits)) if waits else None

    def _send(self, key: tuple[str, int], batch: _Batch) -> None:
        topic, partition = key
        deadline = batch.created + self.config.delivery_timeout_ms / 1000
        error: TidelogError | None = None
        answer: dict[str, Any] = {}
        try:
            if self._txn is not None:
                self._txn.add(topic, partition)
            body = self._build(key, batch)
            attempts = 0
            while True:
                try:
                    answer = self._post(topic, partition, body)
                    break
                except (RetriableError, httpx2.TransportError) as exc:
                    attempts += 1
                    if attempts > self.config.retries or time.monotonic() >= deadline:
                        error = _as_error(exc)
                        break
                    backoff = self.config.retry_backoff_ms / 1000
                    time.sleep(max(0.0, min(backoff, deadline - time.monotonic())))
        except TidelogError as exc:
            if exc.kafka_error.name == "DUPLICATE_SEQUENCE_NUMBER":
                # Written before, its offsets no longer kept: delivered, as Kafka's clients
                # take it, at an offset not known (-1).
                answer = {"base_offset": -1}
            else:
                error = exc
        self._complete(key, batch, answer, error)

    def _build(self, key: tuple[str, int], batch: _Batch) -> bytes:
        """The batch's bytes; an idempotent one numbered under the current producer id (the id
        and the partition's sequence are taken together: a reset between them would send a
        sequence the new id never reached)."""
        while True:
            identity = self._producer_identity() if self.config.enable_idempotence else None
            with self._lock:
                if identity != self._identity and self.config.enable_idempotence:
                    continue
                state = self._partitions[key]
                sequence = state.sequence
                state.sequence += len(batch.records)
                batch.identity = identity
                break
        builder = (
            RecordBatchBuilder(
                self.config.compression_type,
                producer_id=identity[0],
                producer_epoch=identity[1],
                base_sequence=sequence,
                is_transactional=self._txn is not None,
            )
            if identity
            else RecordBatchBuilder(self.config.compression_type)
        )
        for record in batch.records:
            builder.append(record.key, record.value, record.headers, record.timestamp)
        return builder.build()

    def _post(
        self, topic: str, partition: int, body: bytes, *, expected_offset: int | None = None
    ) -> dict[str, Any]:
        response = self._http.request(
            "POST",
            f"/v1/topics/{quote(topic, safe='')}/partitions/{partition}/batches",
            content=body,
            headers={"Content-Type": BATCH_MEDIA_TYPE},
            params=_params(expected_offset, self._txn),
        )
        result: dict[str, Any] = response.json()
        return result

    def _complete(
        self,
        key: tuple[str, int],
        batch: _Batch,
        answer: dict[str, Any],
        error: TidelogError | None,
    ) -> None:
        topic, partition = key
        if error is not None and self._txn is not None:
            self._txn.failed(error)  # the transaction can only abort; its abort takes a new epoch
        elif error is not None and batch.identity is not None:
            # A batch given up leaves a gap in the partition's sequence: start afresh under a
            # new producer id, as Kafka's producer does, so the batches behind it can land.
            with self._lock:
                if self._identity == batch.identity:
                    self._identity = None
                    for state in self._partitions.values():
                        state.sequence = 0
        append_time = int(answer.get("log_append_time", -1)) if answer else -1
        for i, record in enumerate(batch.records):
            if error is None:
                base = int(answer["base_offset"])
                metadata = RecordMetadata(
                    topic,
                    partition,
                    base + i if base >= 0 else -1,
                    append_time if append_time >= 0 else record.timestamp,
                )
                record.future.set_result(metadata)
            else:
                record.future.set_exception(error)
            if record.callback is not None:
                try:
                    record.callback(error, None if error else record.future.result())
                except Exception:
                    log.exception("on_delivery raised for %s[%d]", topic, partition)
        with self._lock:
            self._partitions[key].busy = False
            self._buffered -= batch.size
            self._unsent -= len(batch.records)
            self._lock.notify_all()

    def _producer_identity(self) -> tuple[int, int]:
        if self._txn is not None:
            identity = self._txn.identity
            if identity is None:
                raise InvalidRequestError("call init_transactions() first")
            with self._lock:
                if identity != self._identity:  # a new epoch: every sequence starts again
                    self._identity = identity
                    for state in self._partitions.values():
                        state.sequence = 0
                return identity
        with self._lock:
            if self._identity is not None:
                return self._identity
        answer = self._http.post("/v1/producers")
        identity = (int(answer["producer_id"]), int(answer["producer_epoch"]))
        with self._lock:
            if self._identity is None:
                self._identity = identity
            return self._identity

    def _partition_count(self, topic: str) -> int:
        """The topic's partition count, read again once ``metadata.max.age.ms`` old. As in
        Kafka's producer, a refresh that fails leaves the known count in use (tried again after
        ``retry.backoff.ms``), and with none known a retriable failure is tried again for up
        to ``max.block.ms``. An unknown topic is created where the cluster auto-creates topics,
        as a Kafka producer's Metadata request creates it; elsewhere it is refused at once."""
        max_age_s = self.config.metadata_max_age_ms / 1000
        backoff_s = self.config.retry_backoff_ms / 1000
        known = self._counts.get(topic)
        if known is not None and time.monotonic() - known[1] <= max_age_s:
            return known[0]
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        while True:
            try:
                count = self._admin.describe_topic(topic, create=True).partitions
            except (RetriableError, httpx2.TransportError) as exc:
                if known is not None:
                    log.warning("refreshing %s's partitions: %s; keeping %d", topic, exc, known[0])
                    self._counts[topic] = (known[0], time.monotonic() - max_age_s + backoff_s)
                    return known[0]
                if time.monotonic() + backoff_s >= deadline:
                    raise
                time.sleep(backoff_s)
                continue
            self._counts[topic] = (count, time.monotonic())
            return count


def _bytes(value: bytes | str | None) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return value.encode()


def _params(expected_offset: int | None, txn: Transactions | None) -> dict[str, Any] | None:
    params: dict[str, Any] = {}
    if expected_offset is not None:
        params["expected_offset"] = expected_offset
    if txn is not None:
        params["transactional_id"] = txn.transactional_id
    return params or None


def _as_error(exc: Exception) -> TidelogError:
    if isinstance(exc, TidelogError):
        return exc
    return RetriableError(f"no answer from the API: {exc}", kafka_error="REQUEST_TIMED_OUT")
