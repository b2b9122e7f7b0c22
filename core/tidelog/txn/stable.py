"""A partition's transactions as its log shows them (pure): which are open (the last stable
offset), which were aborted (Kafka's ``.txnindex``), and what a read_committed reader is given.

Kafka's ProducerStateManager follows the same two rules while appending: a producer's first
transactional batch opens its transaction at that batch's base offset, and its marker (a
control batch, COMMIT or ABORT) closes it at the marker's offset; an ABORT adds (producer id,
first offset, marker offset) to the aborted index. The last stable offset is the first offset
of the earliest transaction still open, else the high watermark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class AbortedTxn:
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    producer_id: int
    # The partition's LSO once the marker was written, as Kafka's .txnindex keeps it: no
    # transaction aborted later began below it, which ends a search (see ``search_complete``).
    last_stable_offset: int = field(default=-1, compare=False)


@dataclass(frozen=True)
class Appended:
    """What an append needs to know of one batch."""

    base_offset: int
    last_offset: int
    producer_id: int
    transactional: bool
    marker: str | None = None  # "COMMIT" or "ABORT" for a control batch


def advance(
    open_txns: Mapping[int, int], batches: Iterable[Appended]
) -> tuple[dict[int, int], list[AbortedTxn]]:
    """The open transactions (producer id -> first offset) after ``batches``, in offset order,
    and the transactions they aborted. A marker with no open transaction closes nothing (Kafka
    writes one in every partition of a transaction, even one it never wrote to)."""
    now = dict(open_txns)
    aborted = []
    for batch in batches:
        if batch.marker is not None:
            first = now.pop(batch.producer_id, None)
            if first is not None and batch.marker == "ABORT":
                aborted.append(AbortedTxn(first, batch.last_offset, batch.producer_id))
        elif batch.transactional:
            now.setdefault(batch.producer_id, batch.base_offset)
    return now, aborted


def last_stable_offset(open_txns: Mapping[int, int], high_watermark: int) -> int:
    return min(open_txns.values(), default=high_watermark)


def overlapping(aborted: Iterable[AbortedTxn], start: int, end: int) -> list[AbortedTxn]:
    """The aborted transactions a fetch of ``[start, end)`` must name, as Kafka's
    collectAbortedTxns does: those that end at or after ``start`` and begin before ``end``."""
    return sorted(t for t in aborted if t.last_offset >= start and t.first_offset < end)


def search_complete(txn: AbortedTxn, end: int) -> bool:
    """Whether aborted transactions found in marker order up to ``txn`` are all that overlap
    offsets below ``end``: every transaction aborted after it was open when it was aborted, so
    began at or above its LSO (Kafka's TransactionIndex.collectAbortedTxns)."""
    return txn.last_stable_offset >= end


def visible(batch: Appended, aborted: Iterable[AbortedTxn]) -> bool:
    """Whether a read_committed reader sees this batch's records: never a marker's, never a
    batch of a transaction that was aborted."""
    if batch.marker is not None:
        return False
    if not batch.transactional:
        return True
    return not any(
        t.producer_id == batch.producer_id and t.first_offset <= batch.base_offset <= t.last_offset
        for t in aborted
    )
