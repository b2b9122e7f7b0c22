"""Planning a partition's append, pure: given the head and the producers' states as read,
which batches are retries (they keep the offsets they were given), which are new (they get the
next offsets), which are refused (a whole request at a time, the rest of the flush going on),
and what the commit's transaction must write for it: the head compared and set, an index item
per run of contiguous stored bytes, the producers' new states, the housekeeping mark and the
topic's existence checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

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
from tidelog.storage import Compare, ItemAbsent, Put, Write


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
    requests (by number) are left out: their clients are gone.
    """

    topic: Topic
    partition: int
    batches: Sequence[ProducedBatch]
    extent: Extent
    expected_offset: int | None = None
    requests: tuple[int, ...] = ()
    withdrawn: frozenset[int] = frozenset()

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic.topic_id, self.partition)

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
    head: Mapping[str, object] | None
    next_offset: int
    runs: list[Run] = field(default_factory=list)
    states: ProducerStates = field(default_factory=dict)
    offsets: list[tuple[int, int]] = field(default_factory=list)
    # A refusal writes nothing: it stands on the producer states as read (strongly
    # consistently), so it needs no condition in the commit.
    refused: dict[int, TidelogError] = field(default_factory=dict)

    @property
    def result(self) -> AppendResult:
        return AppendResult(self.append.partition, tuple(self.offsets), refused=self.refused)

    def writes(self, object_key: str, appended_ms: int) -> list[Write]:
        if not self.runs:
            return []
        pk = keys.log_pk(*self.append.key)
        head = Head.from_item(self.head)
        start = head.log_start_offset if head is not None else 0
        writes: list[Write] = [put_head(pk, Head(start, self.next_offset), head)]
        for run in self.runs:
            entry = LogEntry(
                run.base_offset,
                run.last_offset,
                object_key,
                run.start,
                run.end,
                run.batches,
                run.max_timestamp,
                appended_ms=appended_ms,
            )
            writes.append(Put(entry.to_item(pk), ItemAbsent()))
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
        return writes


class WithdrawnError(RetriableError):
    """A request whose client went away before it committed (nobody hears this answer)."""

    default_kafka_error = "REQUEST_TIMED_OUT"


REFUSALS = (
    WithdrawnError,
    OutOfOrderSequenceError,
    SequenceGapError,
    InvalidProducerEpochError,
    DuplicateSequenceError,
)


def plan(
    append: PartitionAppend,
    head: Mapping[str, object] | None,
    states: Mapping[int, ProducerState],
) -> Plan:
    """Offsets for ``append`` given the partition's head and its producers' states (pure)."""
    next_offset = int(str(head["next_offset"])) if head else 0
    if append.expected_offset is not None and append.expected_offset != next_offset:
        raise OffsetMismatchError(append.expected_offset, next_offset)
    result = Plan(append, head, next_offset)
    position = append.extent.start
    current: list[int] | None = None  # [base, last, start, end, batches, max_ts]
    first = 0
    for number, end in enumerate(append.request_ends):
        batches = append.batches[first:end]
        first = end
        before = (result.next_offset, len(result.offsets), len(result.runs), dict(result.states))
        open_run = None if current is None else list(current)
        try:
            if number in append.withdrawn:
                raise WithdrawnError("the client is gone: its request was withdrawn uncommitted")
            current = _plan_request(result, batches, states, position, current)
        except REFUSALS as exc:
            # Refused whole, as Kafka refuses a partition's records: undo what its earlier
            # batches planned, and leave its bytes out of every run.
            result.next_offset, planned, runs, result.states = before
            del result.offsets[planned:]
            del result.runs[runs:]
            _close(result, open_run)
            current = None
            result.refused[number] = exc
            result.offsets += [REFUSED] * len(batches)
        position += sum(len(b.data) for b in batches)
    _close(result, current)
    return result


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
