"""Planning a partition's append, pure: given the head, the producers' states and the
transactional ids as read, which batches are retries (they keep the offsets they were given),
which are new (they get the next offsets), which are refused (a whole request at a time, the
rest of the flush going on), and what the commit's transaction must write for it: the head
compared and set (its open transactions moved by transactional batches and markers), an index
item per run of contiguous stored bytes, the producers' new states, an aborted-index item per
transaction an ABORT marker closes, the transactions' guards checked, the housekeeping mark and
the topic's existence checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from tidelog.errors import ConflictError, RetriableError, TidelogError
from tidelog.log import due, keys
from tidelog.log.entries import LogEntry
from tidelog.log.flushobject import Extent
from tidelog.log.head import Head, put_head
from tidelog.log.topics import Topic
from tidelog.log.write.producers import (
    BatchRecord,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    ProducerState,
    SequenceGapError,
    new_state,
)
from tidelog.log.write.validate import ProducedBatch
from tidelog.records import InvalidRecordError
from tidelog.storage import Compare, ItemAbsent, Put, Write
from tidelog.txn.guard import TxnGuard
from tidelog.txn.stable import AbortedTxn, Appended, advance, last_stable_offset
from tidelog.txn.state import InvalidTxnStateError, State, Txn


class OffsetMismatchError(ConflictError):
    """A conditional append's ``expected_offset`` is not the partition's end (HTTP 412)."""

    http_status = 412

    def __init__(self, expected: int, high_watermark: int) -> None:
        super().__init__(
            f"expected_offset {expected} is not the partition's end: its high watermark is "
            f"{high_watermark}"
        )
        self.high_watermark = high_watermark

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "high_watermark": self.high_watermark}


@dataclass(frozen=True)
class PartitionAppend:
    """What one flush appends to one partition: its batches, in order, at ``extent``.

    ``requests`` are where each request's batches end in ``batches`` (empty: one request).
    A request's batches are accepted or refused together, and one request's refusal (an
    idempotent producer's bad sequence or epoch) is its own: the others commit. ``withdrawn``
    requests (by number) are left out: their clients are gone. ``guards`` (by request number)
    are what a transaction's request needs still true of its transactional id.
    """

    topic: Topic
    partition: int
    batches: Sequence[ProducedBatch]
    extent: Extent
    expected_offset: int | None = None
    requests: tuple[int, ...] = ()
    withdrawn: frozenset[int] = frozenset()
    guards: Mapping[int, TxnGuard] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic.topic_id, self.partition)

    @property
    def has_markers(self) -> bool:
        return any(b.marker is not None for b in self.batches)

    @property
    def request_ends(self) -> tuple[int, ...]:
        return self.requests or (len(self.batches),)


@dataclass(frozen=True)
class AppendResult:
    """``refused``: by request (see PartitionAppend.requests), those refused while the
    partition's others committed; a refused request's batches have no offsets (-1, -1)."""

    partition: int
    batch_offsets: tuple[tuple[int, int], ...] = ()  # (base, last) of each batch, in order
    error: TidelogError | None = None
    refused: Mapping[int, TidelogError] = field(default_factory=dict)
    log_start_offset: int = -1  # the partition's, as the commit found it; -1: not known

    @property
    def base_offset(self) -> int:
        return self.batch_offsets[0][0]

    @property
    def last_offset(self) -> int:
        return self.batch_offsets[-1][1]


REFUSED = (-1, -1)


@dataclass(frozen=True)
class Run:
    """Contiguous new batches: one index item."""

    base_offset: int
    last_offset: int
    start: int
    end: int
    batches: int
    max_timestamp: int


ProducerStates = dict[int, tuple[ProducerState | None, ProducerState]]


@dataclass
class Plan:
    append: PartitionAppend
    head: Head | None
    next_offset: int
    open_txns: dict[int, int] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    states: ProducerStates = field(default_factory=dict)
    offsets: list[tuple[int, int]] = field(default_factory=list)
    aborted: list[AbortedTxn] = field(default_factory=list)
    guards: list[TxnGuard] = field(default_factory=list)
    # A refusal writes nothing: it stands on the producer states as read (strongly
    # consistently), so it needs no condition in the commit.
    refused: dict[int, TidelogError] = field(default_factory=dict)
    # Some verdict writes nothing (a duplicate, a refusal): no compare-and-set checks what it
    # stands on, so the caller must have read that strongly.
    judged_unwritten: bool = False

    @property
    def result(self) -> AppendResult:
        return AppendResult(
            self.append.partition,
            tuple(self.offsets),
            refused=self.refused,
            log_start_offset=self.head.log_start_offset if self.head is not None else 0,
        )

    @property
    def new_head(self) -> Head:
        head = self.head or Head(0, 0)
        last_abort = max([t.last_offset for t in self.aborted], default=head.last_abort)
        return replace(
            head.resized(sum(run.end - run.start for run in self.runs)),
            next_offset=self.next_offset,
            open_txns=dict(self.open_txns),
            last_abort=last_abort,
        )

    def entries(self, object_key: str, appended_ms: int) -> list[LogEntry]:
        """The index entries the plan's runs are written as."""
        return [
            LogEntry(
                run.base_offset,
                run.last_offset,
                object_key,
                run.start,
                run.end,
                run.batches,
                run.max_timestamp,
                appended_ms=appended_ms,
            )
            for run in self.runs
        ]

    def writes(self, object_key: str, appended_ms: int) -> list[Write]:
        if not self.runs:
            return []
        pk = keys.log_pk(*self.append.key)
        writes: list[Write] = [put_head(pk, self.new_head, self.head)]
        writes += [
            Put(entry.to_item(pk), ItemAbsent()) for entry in self.entries(object_key, appended_ms)
        ]
        # Housekeeping visits only partitions marked so (tidelog.log.due).
        writes.append(due.active(self.append.topic.name, *self.append.key, appended_ms))
        for old, new in self.states.values():
            condition = ItemAbsent() if old is None else Compare("version", "=", old.version)
            writes.append(
                Put(
                    {"pk": pk, "sk": keys.producer_sk(new.producer_id), **new.to_attributes()},
                    condition,
                )
            )
        for txn in self.aborted:
            item = {
                "pk": pk,
                "sk": keys.aborted_sk(txn.last_offset),
                "producer_id": txn.producer_id,
                "first_offset": txn.first_offset,
                "last_stable_offset": txn.last_stable_offset,
            }
            writes.append(Put(item, ItemAbsent()))
        writes += [guard.check() for guard in dict.fromkeys(self.guards)]
        return writes


class WithdrawnError(RetriableError):
    """A request whose client went away before it committed (nobody hears this answer)."""

    default_kafka_error = "REQUEST_TIMED_OUT"


class TransactionalIdRequiredError(InvalidRecordError):
    """Transactional batches came without the transactional id they were produced under."""


class StaleMarkerError(ConflictError):
    """A marker for a transaction that is no longer being ended (another writer ended it):
    nothing to write."""

    default_kafka_error = "INVALID_TXN_STATE"


class TransactionOverError(InvalidTxnStateError):
    """A transactional batch whose transaction ended (or whose producer was fenced) before it
    could commit: it belongs to no transaction now."""


REFUSALS = (
    TransactionalIdRequiredError,
    StaleMarkerError,
    TransactionOverError,
    WithdrawnError,
    OutOfOrderSequenceError,
    SequenceGapError,
    InvalidProducerEpochError,
    DuplicateSequenceError,
)


def plan(
    append: PartitionAppend,
    head: Head | None,
    states: Mapping[int, ProducerState],
    txns: Mapping[str, Txn | None] | None = None,
) -> Plan:
    """Offsets for ``append`` given the partition's head, its producers' states and the
    transactional ids its guards name (pure)."""
    next_offset = head.next_offset if head else 0
    if append.expected_offset is not None and append.expected_offset != next_offset:
        raise OffsetMismatchError(append.expected_offset, next_offset)
    result = Plan(append, head, next_offset, dict(head.open_txns) if head else {})
    position = append.extent.start
    current: list[int] | None = None  # [base, last, start, end, batches, max_ts]
    first = 0
    for number, end in enumerate(append.request_ends):
        batches = append.batches[first:end]
        first = end
        before = (
            result.next_offset,
            len(result.offsets),
            len(result.runs),
            dict(result.states),
            dict(result.open_txns),
            len(result.aborted),
        )
        open_run = None if current is None else list(current)
        try:
            if number in append.withdrawn:
                raise WithdrawnError("the client is gone: its request was withdrawn uncommitted")
            guard = append.guards.get(number)
            _check_guard(guard, batches, txns or {})
            current = _plan_request(result, batches, states, position, current)
            if guard is not None:
                result.guards.append(guard)
        except REFUSALS as exc:
            # Refused whole, as Kafka refuses a partition's records: undo what its earlier
            # batches planned, and leave its bytes out of every run.
            result.next_offset, planned, runs, result.states, result.open_txns, aborted = before
            del result.offsets[planned:]
            del result.runs[runs:]
            del result.aborted[aborted:]
            _close(result, open_run)
            current = None
            result.refused[number] = exc
            result.offsets += [REFUSED] * len(batches)
            result.judged_unwritten = True
        position += sum(len(b.data) for b in batches)
    _close(result, current)
    return result


def _check_guard(
    guard: TxnGuard | None, batches: Sequence[ProducedBatch], txns: Mapping[str, Txn | None]
) -> None:
    """Refuse a transaction's request whose transaction, as read, is not the one it was sent
    in (the commit checks the same again, atomically)."""
    if guard is None:
        if any(b.transactional for b in batches):
            raise TransactionalIdRequiredError(
                "transactional batches must be produced with their transactional id"
            )
        return
    txn = txns.get(guard.transactional_id)
    if guard.holds(txn):
        return
    if guard.state != State.ONGOING:
        raise StaleMarkerError(f"{guard.transactional_id}'s transaction was ended already")
    raise TransactionOverError(
        f"the transaction of {guard.transactional_id!r} this request was sent in is over "
        "(ended, timed out or fenced)"
    )


def _plan_request(
    result: Plan,
    batches: Sequence[ProducedBatch],
    states: Mapping[int, ProducerState],
    position: int,
    current: list[int] | None,
) -> list[int] | None:
    """Plan one request's batches into ``result``; the run still open after them. A request
    holding a batch written before whose offsets are no longer kept is refused whole:
    DUPLICATE_SEQUENCE_NUMBER if all its batches were written before, else out of order."""
    forgotten = written = 0
    for batch in batches:
        size = len(batch.data)
        if batch.marker is not None and batch.producer_id not in result.open_txns:
            # Nothing of this transaction here (or another writer of the marker was first):
            # a marker would close nothing.
            result.offsets.append(REFUSED)
            _close(result, current)
            current = None
            position += size
            continue
        if batch.idempotent:
            old = states.get(batch.producer_id)
            state = (
                result.states[batch.producer_id][1]
                if batch.producer_id in result.states
                else (old or new_state(batch.producer_id))
            )
            duplicate = state.duplicate_of(
                batch.producer_epoch, batch.base_sequence, batch.last_sequence
            )
            if duplicate is not None:
                result.judged_unwritten = True
                result.offsets.append((duplicate.base_offset, duplicate.last_offset))
                _close(result, current)
                current = None
                position += size
                continue
            if state.written_before(batch.producer_epoch, batch.base_sequence, batch.last_sequence):
                forgotten += 1
                result.offsets.append(REFUSED)
                position += size
                continue
            state.check(batch.producer_epoch, batch.base_sequence)
        base, last = result.next_offset, result.next_offset + batch.record_count - 1
        result.next_offset = last + 1
        result.offsets.append((base, last))
        if batch.transactional:
            result.open_txns, aborted = advance(
                result.open_txns,
                [Appended(base, last, batch.producer_id, True, batch.marker)],
            )
            result.aborted += [
                replace(t, last_stable_offset=last_stable_offset(result.open_txns, last + 1))
                for t in aborted
            ]
        if batch.idempotent:
            record = BatchRecord(
                batch.base_sequence, batch.last_sequence, base, last, batch.max_timestamp
            )
            result.states[batch.producer_id] = (old, state.appended(batch.producer_epoch, record))
        if current is None:
            current = [base, last, position, position + size, 1, batch.max_timestamp]
        else:
            current[1], current[3] = last, position + size
            current[4] += 1
            current[5] = max(current[5], batch.max_timestamp)
        position += size
        written += 1
    if forgotten and written:
        raise OutOfOrderSequenceError(
            f"a request mixes {forgotten} batch(es) written before with {written} new one(s)"
        )
    if forgotten:
        raise DuplicateSequenceError(
            f"{forgotten} batch(es) of this request were written before; their offsets are no "
            "longer kept"
        )
    return current


def _close(result: Plan, current: list[int] | None) -> None:
    if current is not None:
        result.runs.append(Run(*current))
