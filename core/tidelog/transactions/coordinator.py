"""Kafka's TransactionCoordinator, served by whichever agent or function a request reaches.

Each request reads its transactional id's item, computes the transition (tidelog.txn.state)
and writes it on condition that the item did not move (tidelog.transactions.store); if it did,
the request computes again from what is there. Ending a transaction is three steps, each safe
to repeat by anyone:

1. the decision: Ongoing -> PrepareCommit or PrepareAbort, durable from here on;
2. the markers, one per partition the transaction wrote to, appended through the log's commit
   path, each guarded by the decision (tidelog.txn.guard); then the transaction's offsets
   moved into their groups (or dropped);
3. Complete*, which ends the transaction and lets the id begin the next.

The agent that decides goes on to 2 and 3 before answering, so a commit's data is readable
when EndTxn returns. If it dies between them, the next request for that id (the client's
retry, as CONCURRENT_TRANSACTIONS makes it) or the timeout sweep finds the decision older than
``resume_after_ms`` and finishes it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence

from tidelog.errors import RetriableError, TidelogError
from tidelog.groups.consumer.model import ConsumerGroup
from tidelog.groups.model import Group
from tidelog.log.topics import Topic, UnknownTopicError
from tidelog.log.write.plan import AppendResult, StaleMarkerError
from tidelog.log.write.validate import ProducedBatch
from tidelog.log.write.writer import AppendRequest
from tidelog.storage import ConditionFailedError, MetadataStore
from tidelog.transactions import offsets
from tidelog.transactions.offsets import PendingOffset
from tidelog.transactions.store import Superseded, TxnStore
from tidelog.txn import keys, state
from tidelog.txn.guard import TxnGuard
from tidelog.txn.markers import marker_batch
from tidelog.txn.state import (
    ConcurrentTransactionsError,
    InvalidTxnStateError,
    State,
    TopicPartition,
    Txn,
)

log = logging.getLogger(__name__)

ATTEMPTS = 20
RESUME_AFTER_MS = 1000

Append = Callable[[Sequence[AppendRequest]], list[AppendResult]]


class TransactionalIdNotFoundError(TidelogError):
    default_kafka_error = "TRANSACTIONAL_ID_NOT_FOUND"
    http_status = 404


class TransactionCoordinator:
    def __init__(
        self,
        meta: MetadataStore,
        *,
        append: Append,
        topic: Callable[[str], Topic],
        group: Callable[[str], Group | ConsumerGroup],
        clock_ms: Callable[[], int],
        new_producer_id: Callable[[], int],
        max_timeout_ms: int = state.DEFAULT_MAX_TIMEOUT_MS,
        resume_after_ms: int = RESUME_AFTER_MS,
    ) -> None:
        """``append`` writes markers (the write path); ``topic`` finds a topic by name;
        ``group`` reads a consumer group as it is now (KIP-447's fencing)."""
        self._meta = meta
        self._store = TxnStore(meta)
        self._append = append
        self._topic = topic
        self._group = group
        self._clock_ms = clock_ms
        self._new_producer_id = new_producer_id
        self._max_timeout_ms = max_timeout_ms
        self._resume_after_ms = resume_after_ms

    # -- the client's requests -----------------------------------------------------------

    def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None = None
    ) -> Txn:
        """InitProducerId: the id's producer, its epoch bumped (a new one: fencing any older
        instance), its open transaction aborted first."""
        state.check_timeout(timeout_ms, self._max_timeout_ms)
        for _ in range(ATTEMPTS):
            current = self._current(transactional_id)
            transition = state.init_producer_id(
                current,
                transactional_id,
                timeout_ms,
                now_ms=self._clock_ms(),
                new_producer_id=self._new_producer_id,
                expected=expected,
            )
            if transition.txn is None:
                assert current is not None
                return current
            try:
                written = self._store.put(
                    current, transition.txn, finish_by_ms=self._finish_by(transition.txn)
                )
            except Superseded:
                continue
            if not transition.fenced:
                return written
            self._finish_or_retry(written)  # the fenced transaction aborted: now bump again
        raise ConcurrentTransactionsError(f"{transactional_id} kept changing; retry")

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> Txn:
        wanted = frozenset(partitions)
        return self._move(
            transactional_id,
            lambda txn, now: state.add_partitions(txn, producer_id, epoch, wanted, now_ms=now),
        )

    def add_offsets(self, transactional_id: str, producer_id: int, epoch: int, group: str) -> Txn:
        return self._move(
            transactional_id,
            lambda txn, now: state.add_offsets(txn, producer_id, epoch, group, now_ms=now),
        )

    def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> Txn:
        """EndTxn: decide, then write the markers and complete. The decision is the answer:
        once it is durable, a failure after it is finished by the next request or the sweep."""
        txn = self._move(
            transactional_id,
            lambda txn, now: state.end_txn(txn, producer_id, epoch, commit, now_ms=now),
        )
        if txn.state.preparing:
            try:
                self._finish(txn)
            except TidelogError as exc:
                log.warning("%s: decided, not yet finished (%s)", transactional_id, exc)
        return txn

    def guard(
        self, transactional_id: str, producer_id: int, epoch: int, partition: TopicPartition
    ) -> TxnGuard:
        """What a transactional produce to ``partition`` must still find true when it commits
        (KIP-890 part 1's verification: the partition is in the producer's open transaction)."""
        return verify(self.read(transactional_id), producer_id, epoch, partition)

    def read(self, transactional_id: str) -> Txn | None:
        """The id's item as it is (None: never seen), read strongly consistently."""
        return self._store.get(transactional_id)

    def commit_offsets(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        group: str,
        pending: Sequence[PendingOffset],
        *,
        member_id: str = "",
        generation: int = -1,
    ) -> None:
        """TxnOffsetCommit: the offsets commit with the transaction (AddOffsetsToTxn added the
        group), checked against the group's membership as KIP-447 asks. A partition named
        twice is held once, at the last offset named, as Kafka's coordinator reads them into a
        map."""
        pending = list({(o.topic, o.partition): o for o in pending}.values())
        for _ in range(ATTEMPTS):
            txn = state.check_producer(self._store.get(transactional_id), producer_id, epoch)
            if txn.state != State.ONGOING or group not in txn.groups:
                raise InvalidTxnStateError(
                    f"group {group!r} is not in {transactional_id}'s open transaction: add it "
                    "first (AddOffsetsToTxn)"
                )
            offsets.check_member(self._group(group), member_id, generation)
            try:
                offsets.hold(self._meta, group, TxnGuard.of(txn), pending, now_ms=self._clock_ms())
            except ConditionFailedError:
                continue  # the transaction moved (a partition added, or it ended): look again
            return
        raise ConcurrentTransactionsError(f"{transactional_id} kept changing; retry")

    def describe(self, transactional_id: str) -> Txn:
        txn = self._store.get(transactional_id)
        if txn is None:
            raise TransactionalIdNotFoundError(f"no transactional id {transactional_id!r}")
        return txn

    def list(self) -> list[Txn]:
        return sorted(self._store.list(), key=lambda t: t.transactional_id)

    def abort(self, transactional_id: str) -> Txn:
        """An operator's abort of a hanging transaction (KIP-664): fenced and aborted as a
        timeout would."""
        for _ in range(ATTEMPTS):
            txn = self.describe(transactional_id)
            if txn.state != State.ONGOING:
                raise InvalidTxnStateError(f"{transactional_id} has no open transaction")
            fenced = state.fence(txn, self._clock_ms())
            try:
                written = self._store.put(txn, fenced, finish_by_ms=self._finish_by(fenced))
            except Superseded:
                continue
            try:
                self._finish(written)
            except TidelogError as exc:  # decided: the sweep finishes it
                log.warning("%s: abort decided, not yet finished (%s)", transactional_id, exc)
            return self._store.get(transactional_id) or written
        raise ConcurrentTransactionsError(f"{transactional_id} kept changing; retry")

    # -- timeouts ------------------------------------------------------------------------

    def expire(self, mine: Callable[[str], bool] = lambda _: True) -> int:
        """Abort every transaction open past its timeout, fencing its producer, and finish
        every decision left unfinished; the number of transactions ended. ``mine``: the
        transactional ids this host coordinates. Their clients' requests, and so the clock
        that stamped their start, are this host's: another host's clock, running ahead, would
        abort a transaction early."""
        now = self._clock_ms()
        ended = 0
        for transactional_id, due_sk in list(self._store.due(now)):
            if not mine(transactional_id):
                continue
            txn = self._store.get(transactional_id)
            try:
                if txn is not None and txn.state.preparing:
                    self._finish(txn)
                    ended += 1
                elif txn is not None:
                    transition = state.timed_out(txn, now_ms=now)
                    if transition.txn is not None:
                        fenced = transition.txn
                        self._finish(
                            self._store.put(txn, fenced, finish_by_ms=self._finish_by(fenced))
                        )
                        ended += 1
                        log.info("%s: transaction timed out, aborted", transactional_id)
            except (Superseded, TidelogError) as exc:
                log.info("%s: timeout left to the next sweep (%s)", transactional_id, exc)
                continue
            txn = self._store.get(transactional_id)
            due_ms = keys.parse_due_sk(due_sk)[0]
            waiting = (
                txn is not None
                and txn.state == State.ONGOING
                and txn.started_ms + txn.timeout_ms == due_ms
                and not txn.expired(now)  # by this clock: another agent's ran ahead
            )
            if not waiting:
                self._store.forget_due(transactional_id, due_sk)
        return ended

    # -- inside --------------------------------------------------------------------------

    def _current(self, transactional_id: str) -> Txn | None:
        """The id's item, a decision left unfinished long enough finished first."""
        txn = self._store.get(transactional_id)
        if txn is not None and txn.state.preparing:
            if self._clock_ms() - txn.updated_ms < self._resume_after_ms:
                raise ConcurrentTransactionsError(
                    f"{transactional_id}'s last transaction is completing; retry"
                )
            self._finish_or_retry(txn)
            txn = self._store.get(transactional_id)
        return txn

    def _finish_or_retry(self, txn: Txn) -> None:
        """``_finish``, its failure told to the client as Kafka's coordinator tells it while
        markers are still being written: retry."""
        try:
            self._finish(txn)
        except RetriableError as exc:
            raise ConcurrentTransactionsError(
                f"{txn.transactional_id}'s last transaction is still being ended ({exc.message}); "
                "retry"
            ) from exc

    def _move(
        self, transactional_id: str, transition: Callable[[Txn | None, int], state.Transition]
    ) -> Txn:
        for _ in range(ATTEMPTS):
            current = self._current(transactional_id)
            moved = transition(current, self._clock_ms())
            if moved.txn is None:
                assert current is not None
                return current
            try:
                return self._store.put(current, moved.txn, finish_by_ms=self._finish_by(moved.txn))
            except Superseded:
                continue
        raise ConcurrentTransactionsError(f"{transactional_id} kept changing; retry")

    def _finish_by(self, txn: Txn) -> int | None:
        """A decided end's due time: the sweep finishes it then, if nobody has."""
        return txn.updated_ms + self._resume_after_ms if txn.state.preparing else None

    def _finish(self, txn: Txn) -> None:
        """Steps 2 and 3 of ending ``txn`` (see the module's docstring)."""
        commit = txn.state == State.PREPARE_COMMIT
        now = self._clock_ms()
        guard = TxnGuard.of(txn)
        requests = []
        for name, partition in sorted(txn.partitions):
            try:
                topic = self._topic(name)
                topic.check_partition(partition)
            except UnknownTopicError:
                continue  # deleted since: nothing there to end
            data = marker_batch(txn.producer_id, txn.epoch, commit=commit, timestamp_ms=now)
            marker = ProducedBatch(
                data,
                1,
                now,
                txn.producer_id,
                txn.epoch,
                -1,
                -1,
                transactional=True,
                marker="COMMIT" if commit else "ABORT",
            )
            requests.append(AppendRequest(topic, partition, [marker], guard=guard))
        results = self._append(requests) if requests else []
        failed = [r.error for r in results if r.error and not isinstance(r.error, StaleMarkerError)]
        if failed:
            raise RetriableError(f"markers of {txn.transactional_id} not all written: {failed[0]}")
        offsets.settle(self._meta, txn.groups, txn.transactional_id, commit=commit, now_ms=now)
        with contextlib.suppress(Superseded):  # another agent finished it first
            self._store.put(txn, state.complete(txn, now_ms=now))


def verify(txn: Txn | None, producer_id: int, epoch: int, partition: TopicPartition) -> TxnGuard:
    """The guard of a transactional produce to ``partition``, if ``txn`` (as read) lets it in."""
    current = state.check_producer(txn, producer_id, epoch)
    if current.state != State.ONGOING or partition not in current.partitions:
        raise InvalidTxnStateError(
            f"partition {partition[1]} of {partition[0]!r} is not in "
            f"{current.transactional_id}'s open transaction: add it first (AddPartitionsToTxn)"
        )
    return TxnGuard.of(current)
