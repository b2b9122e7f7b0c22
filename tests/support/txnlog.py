"""A TinyLog with a transaction coordinator over the same in-memory stores, and a
read_committed reader that filters as Kafka's consumers do (the aborted transactions a fetch
names, dropped producer by producer until their ABORT marker)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.log import TinyLog, tiny_log

from tidelog.groups.model import Group, empty_group
from tidelog.log.read import serve
from tidelog.log.read.abortedcache import AbortedCache
from tidelog.log.read.fetch import LogReader
from tidelog.log.write.plan import AppendResult
from tidelog.log.write.validate import validate_batches
from tidelog.log.write.writer import AppendRequest
from tidelog.records import Record, RecordBatchBuilder
from tidelog.transactions.coordinator import TransactionCoordinator
from tidelog.txn.guard import TxnGuard


@dataclass
class TxnProducer:
    """A transactional producer's view: its id, epoch and next sequence per partition."""

    transactional_id: str
    producer_id: int
    epoch: int
    sequences: dict[int, int] = field(default_factory=dict)

    def batch(self, partition: int, values: Sequence[bytes], stamp: int) -> bytes:
        builder = RecordBatchBuilder(
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequences.get(partition, 0),
            is_transactional=True,
        )
        for value in values:
            builder.append(value, value, (), stamp)
        self.sequences[partition] = self.sequences.get(partition, 0) + len(values)
        return builder.build()


@dataclass
class TxnLog:
    log: TinyLog
    coordinator: TransactionCoordinator
    groups: dict[str, Group] = field(default_factory=dict)

    @property
    def topic(self):
        return self.log.topic

    def producer(self, transactional_id: str, timeout_ms: int = 60_000) -> TxnProducer:
        txn = self.coordinator.init_producer_id(transactional_id, timeout_ms)
        return TxnProducer(transactional_id, txn.producer_id, txn.epoch)

    def begin(self, producer: TxnProducer, partitions: Sequence[int]) -> None:
        self.coordinator.add_partitions(
            producer.transactional_id,
            producer.producer_id,
            producer.epoch,
            [(self.topic.name, p) for p in partitions],
        )

    def guard(self, producer: TxnProducer, partition: int) -> TxnGuard:
        return self.coordinator.guard(
            producer.transactional_id,
            producer.producer_id,
            producer.epoch,
            (self.topic.name, partition),
        )

    def request(
        self, producer: TxnProducer, partition: int, values: Sequence[bytes]
    ) -> AppendRequest:
        """A transactional produce as the agent takes it in: verified, guarded, not yet sent."""
        guard = self.guard(producer, partition)
        data = producer.batch(partition, values, self.log.clock.now)
        batches = validate_batches(data, max_message_bytes=10**8, log_append_time=None)
        return AppendRequest(self.topic, partition, batches, guard=guard)

    def send(self, producer: TxnProducer, partition: int, values: Sequence[bytes]) -> AppendResult:
        (result,) = self.log.writer.append([self.request(producer, partition, values)])
        return result

    def end(self, producer: TxnProducer, *, commit: bool) -> None:
        self.coordinator.end_txn(
            producer.transactional_id, producer.producer_id, producer.epoch, commit
        )

    def read_committed(self, partition: int) -> list[Record]:
        """Every record a read_committed consumer sees, fetch by fetch, from the log start."""
        return self._read(partition, committed=True)

    def read_served(self, partition: int) -> list[Record]:
        """What the HTTP API serves read_committed (filtered on the server), fetch by fetch."""
        reader = self.log.reader
        position, _ = reader.head(self.topic.topic_id, partition)
        out: list[Record] = []
        while True:
            data = serve.fetch_one(
                reader,
                self.topic,
                partition,
                position,
                max_bytes=300,
                max_wait_ms=0,
                committed=True,
            )
            if data.next_offset == position:
                return out
            for fetched in data.batches:
                out += [r for r in fetched.batch.records() if r.offset >= position]
            position = data.next_offset

    def read_uncommitted(self, partition: int) -> list[Record]:
        return self._read(partition, committed=False)

    def _read(self, partition: int, *, committed: bool) -> list[Record]:
        reader, topic_id = self.log.reader, self.topic.topic_id
        position, _ = reader.head(topic_id, partition)
        out: list[Record] = []
        while True:
            data = reader.fetch(topic_id, partition, position, 300, committed=committed)
            if not data.batches:
                return out
            out += consume(data.batches, data.aborted, position)
            position = data.next_offset


def consume(batches, aborted, position: int) -> list[Record]:
    """Kafka's consumer filter (Fetcher's CompletedFetch): an aborted transaction's batches
    are skipped from its first offset until its producer's ABORT marker; markers are never
    records."""
    pending = sorted(aborted, key=lambda t: t.first_offset)
    skipping: set[int] = set()
    out: list[Record] = []
    for fetched in batches:
        batch = fetched.batch
        while pending and pending[0].first_offset <= batch.last_offset:
            skipping.add(pending.pop(0).producer_id)
        if batch.is_control_batch:
            if batch.control_record().type == "ABORT":
                skipping.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in skipping:
            continue
        out += [r for r in batch.records() if r.offset >= position]
    return out


def txn_log(tmp_path: Path, *, partitions: int = 2, cached: int | None = None, **kwargs) -> TxnLog:
    """``cached``: read through an AbortedCache keeping up to that many per partition."""
    log = tiny_log(tmp_path, partitions=partitions, **kwargs)
    if cached is not None:
        cache = AbortedCache(log.meta, per_partition=cached)
        log.reader = LogReader(log.meta, log.objects, aborted_cache=cache)
    ids = itertools.count(1000)
    groups: dict[str, Group] = {}
    coordinator = TransactionCoordinator(
        log.meta,
        append=log.writer.append,
        topic=log.topics.get,
        group=lambda name: groups.get(name) or empty_group(name),
        clock_ms=log.clock,
        new_producer_id=lambda: next(ids),
    )
    return TxnLog(log, coordinator, groups)
