"""The asyncio twins of ``Producer`` and ``Consumer``, in aiokafka's shape: ``async with``,
``await send()``, ``getmany()``, ``async for``.

Each runs its synchronous twin on a worker thread of its own, so the event loop never waits on
the network and the two stay one implementation: the same batching, retries, heartbeats and
rebalance rules. A consumer's calls run on its thread in the order they were made; the ones
aiokafka makes plain methods (``subscribe``, ``assign``, ``seek``, ``pause``, ``resume``) are
queued there and return at once, and an error one of them meets is raised by the next awaited
call. A rebalance listener's methods may be coroutines: they run on the event loop, and the
rebalance waits for them, as in aiokafka.
"""

from __future__ import annotations

import abc
import asyncio
import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, Protocol, Self, TypeVar

from tidelog.client.consumed import OFFSET_BEGINNING, OFFSET_END, ConsumerRecord, TopicPartition
from tidelog.client.consumer import Consumer
from tidelog.client.producer import Producer, RecordMetadata

_T = TypeVar("_T")
_Client = TypeVar("_Client", Producer, Consumer)


class RebalanceListener(Protocol):
    """aiokafka's ConsumerRebalanceListener: either method may be ``async``."""

    def on_partitions_revoked(self, revoked: list[TopicPartition]) -> Any: ...

    def on_partitions_assigned(self, assigned: list[TopicPartition]) -> Any: ...


class _Twin(abc.ABC, Generic[_Client]):
    """A synchronous client, run on a worker thread of its own."""

    def __init__(self, kind: str) -> None:
        self._client: _Client | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"tidelog-aio-{kind}")
        self._queued_error: BaseException | None = None

    @abc.abstractmethod
    async def start(self) -> None:
        """Make the client, on its thread."""

    async def stop(self) -> None:
        if self._client is not None:
            await self._run(self._client.close)
            self._client = None
        self._thread.shutdown(wait=False)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _started(self) -> _Client:
        if self._client is None:
            raise RuntimeError("start() it first (or use async with)")
        return self._client

    def _queue(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Run ``call`` on the thread after what is queued before it; what it raises is raised
        by the next awaited call."""

        def run() -> None:
            try:
                call(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the caller's, at its next await
                self._queued_error = exc

        self._thread.submit(run)

    async def _run(self, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self._thread, lambda: call(*args, **kwargs))
        if self._queued_error is not None:
            error, self._queued_error = self._queued_error, None
            raise error
        return result


class AIOProducer(_Twin[Producer]):
    """``Producer``'s twin: ``await send(...)`` queues a record and gives a future of its
    ``RecordMetadata``; ``await send_and_wait(...)`` waits for it."""

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        super().__init__("producer")
        self._config, self._overrides = config, overrides

    async def start(self) -> None:
        self._client = await self._run(Producer, self._config, **self._overrides)

    async def send(  # noqa: PLR0917 - aiokafka's signature, positional as there
        self,
        topic: str,
        value: bytes | str | None = None,
        key: bytes | str | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Sequence[tuple[str, bytes | None]] | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Queue the record (waiting, off the loop, for buffer room as ``max.block.ms``
        allows); the future resolves once it is committed."""
        producer = self._started()
        queued = await self._run(
            producer.produce, topic, value, key, partition, headers, timestamp_ms
        )
        return asyncio.wrap_future(queued)

    async def send_and_wait(self, *args: Any, **kwargs: Any) -> RecordMetadata:
        """``send``'s arguments; the record's ``RecordMetadata`` once it is committed."""
        return await (await self.send(*args, **kwargs))

    async def append(self, *args: Any, **kwargs: Any) -> list[RecordMetadata]:
        """``Producer.append``'s arguments: the records written only if the partition ends at
        ``expected_offset``."""
        producer = self._started()
        return await self._run(producer.append, *args, **kwargs)

    async def flush(self, timeout: float | None = None) -> int:
        return await self._run(self._started().flush, timeout)


class AIOConsumer(_Twin[Consumer]):
    """``Consumer``'s twin. ``AIOConsumer("clicks", group_id="billing")`` subscribes once
    started; config as ``Consumer`` takes it (Kafka's keys, or Python spelling)."""

    def __init__(
        self, *topics: str, config: Mapping[str, Any] | None = None, **overrides: Any
    ) -> None:
        super().__init__("consumer")
        self._topics = topics
        self._config, self._overrides = config, overrides
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._client = await self._run(Consumer, self._config, **self._overrides)
        if self._topics:
            self.subscribe(self._topics)

    # -- what to consume: queued on the consumer's thread ----------------------------------

    def subscribe(
        self,
        topics: Sequence[str] = (),
        pattern: str | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        consumer = self._started()
        wanted: Sequence[str] | re.Pattern[str] = re.compile(pattern) if pattern else topics
        revoked = assigned = None
        if listener is not None:
            revoked = self._bridge(listener.on_partitions_revoked)
            assigned = self._bridge(listener.on_partitions_assigned)
        self._queue(consumer.subscribe, wanted, on_assign=assigned, on_revoke=revoked)

    def unsubscribe(self) -> None:
        self._queue(self._started().unsubscribe)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self._queue(self._started().assign, list(partitions))

    def seek(self, partition: TopicPartition, offset: int) -> None:
        tp = TopicPartition(partition.topic, partition.partition, offset)
        self._queue(self._started().seek, tp)

    def pause(self, *partitions: TopicPartition) -> None:
        self._queue(self._started().pause, partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self._queue(self._started().resume, partitions)

    def assignment(self) -> set[TopicPartition]:
        return set(self._started().assignment())

    # -- consuming -------------------------------------------------------------------------

    async def getone(self) -> ConsumerRecord:
        consumer = self._started()
        while True:
            record = await self._run(consumer.poll, consumer.config.fetch_max_wait_ms / 1000)
            if record is not None:
                return record

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """What arrives within ``timeout_ms``, by partition (only ``partitions``, when given,
        the others paused meanwhile)."""
        consumer = self._started()

        def fetch() -> list[ConsumerRecord]:
            others = [tp for tp in consumer.assignment() if partitions and tp not in partitions]
            consumer.pause(others)
            try:
                return consumer.consume(max_records or 500, timeout_ms / 1000)
            finally:
                consumer.resume(others)

        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        for record in await self._run(fetch):
            out.setdefault(TopicPartition(record.topic, record.partition), []).append(record)
        return out

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self._records()

    async def _records(self) -> AsyncIterator[ConsumerRecord]:
        while True:
            yield await self.getone()

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        await self._seek_all(partitions, OFFSET_BEGINNING)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        await self._seek_all(partitions, OFFSET_END)

    async def position(self, partition: TopicPartition) -> int:
        (found,) = await self._run(self._started().position, [partition])
        return found.offset

    # -- offsets ---------------------------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commit ``offsets`` (each the next offset to consume), else every position."""
        wanted = None
        if offsets is not None:
            wanted = [TopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()]
        await self._run(self._started().commit, offsets=wanted)

    async def committed(self, partition: TopicPartition) -> int | None:
        (found,) = await self._run(self._started().committed, [partition])
        return None if found.offset < 0 else found.offset

    async def lag(self) -> list[dict[str, Any]]:
        return await self._run(self._started().lag)

    # -- the worker thread -----------------------------------------------------------------

    async def _seek_all(self, partitions: Sequence[TopicPartition], offset: int) -> None:
        consumer = self._started()
        chosen = list(partitions) or consumer.assignment()
        for tp in chosen:
            self.seek(tp, offset)
        await self._run(lambda: None)

    def _bridge(
        self, method: Callable[[list[TopicPartition]], Any]
    ) -> Callable[[Consumer, list[TopicPartition]], None]:
        """A listener method, called from the consumer's thread: a coroutine runs on the
        event loop, and the rebalance waits for it."""

        def call(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            del consumer
            result = method(partitions)
            if inspect.isawaitable(result):
                assert self._loop is not None
                asyncio.run_coroutine_threadsafe(_awaited(result), self._loop).result()

        return call


async def _awaited(result: Awaitable[Any]) -> Any:
    return await result


__all__ = ["AIOConsumer", "AIOProducer", "RebalanceListener"]
