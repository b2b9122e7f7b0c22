"""A transactional id's state and the transitions Kafka's TransactionCoordinator makes (pure).

Kafka keeps this state in memory on the coordinator of the id's ``__transaction_state``
partition, behind a lock, and appends each transition to that log. tidelog keeps it in one
DynamoDB item per transactional id, and any agent may serve any id: a transition is computed
here from the item as read, then written on condition that the item is still that version, so
two agents never both make a transition from one state.

The states and the rules are Kafka's (``TransactionMetadata``, ``TransactionCoordinator`` for
transaction version 1, which today's Python clients use):

    Empty ──AddPartitions──▶ Ongoing ──EndTxn(commit)──▶ PrepareCommit ──markers──▶ CompleteCommit
                                │      ──EndTxn(abort)──▶ PrepareAbort  ──markers──▶ CompleteAbort
                                └─InitProducerId / timeout: epoch bumped, then PrepareAbort

Complete* and Empty start the next transaction the same way. A fence (InitProducerId while a
transaction is open, or its timeout) bumps the epoch in the same transition as PrepareAbort:
Kafka's PrepareEpochFence is that one write here, never a state an item rests in.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from tidelog.errors import ConflictError, InvalidRequestError, RetriableError

NO_PRODUCER_ID, NO_EPOCH = -1, -1
MAX_EPOCH = 2**15 - 1
DEFAULT_MAX_TIMEOUT_MS = 15 * 60 * 1000  # Kafka's transaction.max.timeout.ms

TopicPartition = tuple[str, int]


class State(enum.Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"

    @property
    def preparing(self) -> bool:
        return self in (State.PREPARE_COMMIT, State.PREPARE_ABORT)

    @property
    def complete(self) -> bool:
        return self in (State.EMPTY, State.COMPLETE_COMMIT, State.COMPLETE_ABORT)


class ConcurrentTransactionsError(RetriableError):
    """Markers of the last transaction are still being written: back off and retry."""

    default_kafka_error = "CONCURRENT_TRANSACTIONS"


class ProducerFencedError(ConflictError):
    default_kafka_error = "PRODUCER_FENCED"


class InvalidProducerIdMappingError(InvalidRequestError):
    default_kafka_error = "INVALID_PRODUCER_ID_MAPPING"


class InvalidTxnStateError(ConflictError):
    default_kafka_error = "INVALID_TXN_STATE"


class InvalidTransactionTimeoutError(InvalidRequestError):
    default_kafka_error = "INVALID_TRANSACTION_TIMEOUT"


@dataclass(frozen=True)
class Txn:
    """One transactional id as its item holds it."""

    transactional_id: str
    producer_id: int
    epoch: int
    state: State
    timeout_ms: int
    updated_ms: int
    started_ms: int = -1  # when the open transaction began (Ongoing and Prepare*)
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    groups: frozenset[str] = field(default_factory=frozenset)  # AddOffsetsToTxn
    previous_producer_id: int = NO_PRODUCER_ID  # KIP-360: a retried rotation is recognised
    last_epoch: int = NO_EPOCH  # KIP-360: the epoch before the last bump, for its retries
    begun: int = 0  # transactions begun under this id: which one an append was sent in
    version: int = 0  # the item's, for the conditional write

    @property
    def epoch_exhausted(self) -> bool:
        return self.epoch >= MAX_EPOCH - 1

    def expired(self, now_ms: int) -> bool:
        return self.state == State.ONGOING and now_ms > self.started_ms + self.timeout_ms

    def to_attributes(self) -> dict[str, object]:
        """The item's attributes (its keys are the store's to choose)."""
        return {
            "transactional_id": self.transactional_id,
            "producer_id": self.producer_id,
            "epoch": self.epoch,
            "state": self.state.value,
            "timeout_ms": self.timeout_ms,
            "updated_ms": self.updated_ms,
            "started_ms": self.started_ms,
            "partitions": sorted([t, p] for t, p in self.partitions),
            "groups": sorted(self.groups),
            "previous_producer_id": self.previous_producer_id,
            "last_epoch": self.last_epoch,
            "begun": self.begun,
            "version": self.version,
        }

    @classmethod
    def from_attributes(cls, item: Mapping[str, object]) -> Txn:
        def number(name: str) -> int:
            return int(str(item[name]))

        partitions = item.get("partitions") or []
        groups = item.get("groups") or []
        if not isinstance(partitions, list) or not isinstance(groups, list):
            raise ValueError(f"a transaction item with malformed sets: {item!r}")
        return cls(
            transactional_id=str(item["transactional_id"]),
            producer_id=number("producer_id"),
            epoch=number("epoch"),
            state=State(str(item["state"])),
            timeout_ms=number("timeout_ms"),
            updated_ms=number("updated_ms"),
            started_ms=number("started_ms"),
            partitions=frozenset((str(t), int(str(p))) for t, p in partitions),
            groups=frozenset(str(g) for g in groups),
            previous_producer_id=number("previous_producer_id"),
            last_epoch=number("last_epoch"),
            begun=number("begun"),
            version=number("version"),
        )


@dataclass(frozen=True)
class Transition:
    """What a request does: the item's next value (None: nothing to write, the request is
    answered from the item as it is) and whether the open transaction must now be aborted,
    its markers written, before the client hears more than CONCURRENT_TRANSACTIONS."""

    txn: Txn | None
    fenced: bool = False


def check_timeout(timeout_ms: int, max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS) -> int:
    if not 0 < timeout_ms <= max_timeout_ms:
        raise InvalidTransactionTimeoutError(
            f"transaction.timeout.ms {timeout_ms} must be above 0 and at most "
            f"transaction.max.timeout.ms ({max_timeout_ms})"
        )
    return timeout_ms


def init_producer_id(
    current: Txn | None,
    transactional_id: str,
    timeout_ms: int,
    *,
    now_ms: int,
    new_producer_id: Callable[[], int],
    expected: tuple[int, int] | None = None,
) -> Transition:
    """InitProducerId with a transactional id (``expected``: KIP-360's producer id and epoch,
    sent by a producer recovering its identity)."""
    if not transactional_id:
        raise InvalidRequestError("a transactional id must not be empty")
    check_timeout(timeout_ms)
    if current is None:
        return Transition(
            Txn(transactional_id, new_producer_id(), 0, State.EMPTY, timeout_ms, now_ms)
        )
    if expected is not None and not _recognised(current, *expected):
        raise ProducerFencedError(
            f"producer {expected[0]} epoch {expected[1]} is not {transactional_id}'s current one"
        )
    if current.state.preparing:
        raise ConcurrentTransactionsError(
            f"{transactional_id}'s last transaction is completing; retry"
        )
    if current.state == State.ONGOING:
        return Transition(fence(current, now_ms), fenced=True)
    if current.epoch_exhausted and (expected is None or expected[1] == current.epoch):
        rotated = replace(
            current,
            producer_id=new_producer_id(),
            epoch=0,
            previous_producer_id=current.producer_id,
            last_epoch=NO_EPOCH,
        )
        return Transition(_restarted(rotated, timeout_ms, now_ms))
    if expected is not None and expected[0] == current.producer_id:
        if expected[1] == current.last_epoch and current.state == State.EMPTY:
            return Transition(None)  # a retry of the bump it never heard: answer the current
        if expected[1] != current.epoch:
            raise ProducerFencedError(
                f"epoch {expected[1]} of producer {expected[0]} is not the current {current.epoch}"
            )
    bumped = replace(current, epoch=current.epoch + 1, last_epoch=current.epoch)
    return Transition(_restarted(bumped, timeout_ms, now_ms))


def _recognised(current: Txn, producer_id: int, epoch: int) -> bool:
    """Kafka's isValidProducerId: the current producer, or the previous one retrying a
    rotation whose answer it never heard."""
    return producer_id == current.producer_id or (
        producer_id == current.previous_producer_id and epoch >= MAX_EPOCH - 1
    )


def _restarted(txn: Txn, timeout_ms: int, now_ms: int) -> Txn:
    return replace(
        txn,
        state=State.EMPTY,
        timeout_ms=timeout_ms,
        updated_ms=now_ms,
        started_ms=-1,
        partitions=frozenset(),
        groups=frozenset(),
    )


def fence(txn: Txn, now_ms: int) -> Txn:
    """The open transaction aborted with the epoch bumped, in one transition: its producer's
    requests are refused from here on, and its markers are written at the new epoch."""
    return replace(txn, epoch=txn.epoch + 1, state=State.PREPARE_ABORT, updated_ms=now_ms)


def check_producer(txn: Txn | None, producer_id: int, epoch: int) -> Txn:
    if txn is None or txn.producer_id != producer_id:
        raise InvalidProducerIdMappingError(
            f"producer {producer_id} is not the transactional id's current producer"
        )
    if txn.epoch != epoch:
        raise ProducerFencedError(
            f"epoch {epoch} of producer {producer_id} is fenced by epoch {txn.epoch}"
        )
    return txn


def add_partitions(
    txn: Txn | None,
    producer_id: int,
    epoch: int,
    partitions: Iterable[TopicPartition],
    *,
    now_ms: int,
) -> Transition:
    """AddPartitionsToTxn: the partitions join the open transaction, or begin one."""
    return _add(txn, producer_id, epoch, now_ms, partitions=frozenset(partitions))


def add_offsets(
    txn: Txn | None, producer_id: int, epoch: int, group: str, *, now_ms: int
) -> Transition:
    """AddOffsetsToTxn: the group's offsets commit with the transaction."""
    return _add(txn, producer_id, epoch, now_ms, groups=frozenset({group}))


def _add(
    txn: Txn | None,
    producer_id: int,
    epoch: int,
    now_ms: int,
    *,
    partitions: frozenset[TopicPartition] = frozenset(),
    groups: frozenset[str] = frozenset(),
) -> Transition:
    current = check_producer(txn, producer_id, epoch)
    if current.state.preparing:
        raise ConcurrentTransactionsError("the last transaction is completing; retry")
    if (
        current.state == State.ONGOING
        and partitions <= current.partitions
        and groups <= current.groups
    ):
        return Transition(None)  # already in: nothing to write
    ongoing = current.state == State.ONGOING
    return Transition(
        replace(
            current,
            state=State.ONGOING,
            begun=current.begun if ongoing else current.begun + 1,
            started_ms=current.started_ms if ongoing else now_ms,
            updated_ms=now_ms,
            partitions=(current.partitions if ongoing else frozenset()) | partitions,
            groups=(current.groups if ongoing else frozenset()) | groups,
        )
    )


def end_txn(
    txn: Txn | None, producer_id: int, epoch: int, commit: bool, *, now_ms: int
) -> Transition:
    """EndTxn: Ongoing prepares to commit or abort; a retry of what already happened is
    answered as it was; anything else is INVALID_TXN_STATE."""
    current = check_producer(txn, producer_id, epoch)
    done, preparing = (
        (State.COMPLETE_COMMIT, State.PREPARE_COMMIT)
        if commit
        else (State.COMPLETE_ABORT, State.PREPARE_ABORT)
    )
    if current.state == State.ONGOING:
        return Transition(replace(current, state=preparing, updated_ms=now_ms))
    if current.state == done:
        return Transition(None)
    if current.state == preparing:
        raise ConcurrentTransactionsError("the markers are being written; retry")
    raise InvalidTxnStateError(
        f"{'commit' if commit else 'abort'} of a transaction in state {current.state.value}"
    )


def complete(txn: Txn, *, now_ms: int) -> Txn:
    """Every marker is written: the transaction is over, and its partitions with it."""
    if not txn.state.preparing:
        raise InvalidTxnStateError(f"nothing to complete in state {txn.state.value}")
    state = State.COMPLETE_COMMIT if txn.state == State.PREPARE_COMMIT else State.COMPLETE_ABORT
    return replace(
        txn,
        state=state,
        updated_ms=now_ms,
        started_ms=-1,
        partitions=frozenset(),
        groups=frozenset(),
    )


def timed_out(txn: Txn, *, now_ms: int) -> Transition:
    """A transaction open past its timeout is aborted and its producer fenced, as Kafka's
    abortTimedOutTransactions does; otherwise nothing."""
    if not txn.expired(now_ms):
        return Transition(None)
    return Transition(fence(txn, now_ms), fenced=True)
