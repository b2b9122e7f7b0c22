"""Idempotent producers, as Kafka's ProducerStateManager judges their batches.

Per producer and partition the log keeps the producer's epoch and its last five batches
(sequence range and offsets). A batch whose sequences match a kept batch of the same epoch is a
retry: it is not written again, and its original offsets are returned. Otherwise it must carry
the current or a newer epoch (INVALID_PRODUCER_EPOCH) and continue the sequence without a gap
(OUT_OF_ORDER_SEQUENCE_NUMBER); a new epoch, or a producer the partition has not seen, starts at 0.

Two cases differ from Kafka, because a Kafka leader never meets them. It serves a connection's
requests one at a time and drops a connection's requests with it, so a batch that is not the
next in sequence proves that the batches before it were never written and never will be.
tidelog's agents go on serving a connection its client gave up on, and several agents may
hold one producer's requests at once, so an earlier batch may still land after a later one
arrives. Kafka's clients answer OUT_OF_ORDER_SEQUENCE_NUMBER by taking the batches they have
no acknowledgement for as unwritten, bumping their epoch and sending them again: a copy still
in flight under the old epoch would then be written twice. So:

- a batch past the next sequence (a gap) is answered REQUEST_TIMED_OUT, retriable: the client
  sends it again, under the same epoch and sequence, once the batches before it have landed
  (librdkafka, kafka-python and Kafka's Java producer retry it so). Kafka answers
  OUT_OF_ORDER_SEQUENCE_NUMBER. A client whose earlier batch failed for good waits for its
  delivery timeout before it starts a new epoch, rather than at once;
- a retry of a batch older than the five kept, whose sequences all lie at or below the last
  written one in its epoch, was certainly written (an epoch's sequences start at 0 and advance
  only by being written): it is answered DUPLICATE_SEQUENCE_NUMBER, which Kafka's clients take
  as delivered, without offsets. Kafka answers OUT_OF_ORDER_SEQUENCE_NUMBER.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tidelog.errors import ConflictError, InvalidRequestError, RetriableError
from tidelog.records.varint import INT32_MAX

RETAINED_BATCHES = 5


class OutOfOrderSequenceError(InvalidRequestError):
    default_kafka_error = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class InvalidProducerEpochError(InvalidRequestError):
    default_kafka_error = "INVALID_PRODUCER_EPOCH"


class SequenceGapError(RetriableError):
    """The batch skips sequences that have not landed yet (see the module's docstring)."""

    default_kafka_error = "REQUEST_TIMED_OUT"


class DuplicateSequenceError(ConflictError):
    """The batch was written before, and its offsets are no longer kept."""

    default_kafka_error = "DUPLICATE_SEQUENCE_NUMBER"


@dataclass(frozen=True)
class BatchRecord:
    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(frozen=True)
class ProducerState:
    producer_id: int
    epoch: int
    batches: tuple[BatchRecord, ...] = field(default_factory=tuple)
    version: int = 0

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1

    def duplicate_of(self, epoch: int, first: int, last: int) -> BatchRecord | None:
        if epoch != self.epoch:
            return None
        for kept in self.batches:
            if (kept.first_sequence, kept.last_sequence) == (first, last):
                return kept
        return None

    def written_before(self, epoch: int, first: int, last: int) -> bool:
        """Were all of ``first``..``last`` written in ``epoch`` already (kept or not)?"""
        return (
            epoch == self.epoch and bool(self.batches) and 0 <= first <= last <= self.last_sequence
        )

    def check(self, epoch: int, first: int) -> None:
        """Raise unless a new batch from ``epoch`` starting at ``first`` may be appended."""
        if epoch < self.epoch:
            raise InvalidProducerEpochError(
                f"Producer {self.producer_id}'s epoch {epoch} is older than the current "
                f"{self.epoch}: it has been fenced"
            )
        fresh = epoch > self.epoch or not self.batches
        expected = 0 if fresh else self.last_sequence + 1
        if first == 0 if fresh else in_sequence(self.last_sequence, first):
            return
        where = f"producer {self.producer_id} at epoch {epoch}: {first}"
        if first > expected:
            raise SequenceGapError(
                f"Sequence gap for {where} (incoming seq. number), {expected} (expected): the "
                "batches before it have not landed yet; retry"
            )
        raise OutOfOrderSequenceError(
            f"Out of order sequence number for {where} (incoming seq. number), "
            f"{self.last_sequence} (current end sequence number)"
        )

    def appended(self, epoch: int, batch: BatchRecord) -> ProducerState:
        kept = self.batches if epoch == self.epoch else ()
        return ProducerState(
            self.producer_id, epoch, (*kept, batch)[-RETAINED_BATCHES:], self.version + 1
        )

    def to_attributes(self) -> dict[str, object]:
        return {
            "epoch": self.epoch,
            "version": self.version,
            "batches": [
                [b.first_sequence, b.last_sequence, b.base_offset, b.last_offset, b.max_timestamp]
                for b in self.batches
            ],
        }

    @classmethod
    def from_attributes(cls, producer_id: int, item: dict[str, object]) -> ProducerState:
        raw = item.get("batches")
        batches = (
            tuple(BatchRecord(*(int(v) for v in b)) for b in raw) if isinstance(raw, list) else ()
        )
        return cls(producer_id, int(str(item["epoch"])), batches, int(str(item["version"])))


def new_state(producer_id: int) -> ProducerState:
    return ProducerState(producer_id, -1, (), 0)


def in_sequence(last: int, first: int) -> bool:
    """Kafka's inSequence: the next sequence, wrapping from Integer.MAX_VALUE to 0."""
    return first == last + 1 or (last == INT32_MAX and first == 0)
