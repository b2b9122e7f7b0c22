"""Transaction markers, as Kafka writes them into every partition of a transaction when it
ends: a control batch (transactional and control bits set) of the producer's id and epoch,
holding one record whose key names COMMIT or ABORT and whose value carries the coordinator
epoch. And each appended batch as the last-stable-offset rules see it."""

from __future__ import annotations

from tidelog.records import RecordBatch, RecordBatchBuilder
from tidelog.records.batch import control_record_bytes
from tidelog.txn.stable import Appended

COORDINATOR_EPOCH = 0  # there is no coordinator to elect: one epoch, forever


def marker_batch(producer_id: int, epoch: int, *, commit: bool, timestamp_ms: int) -> bytes:
    """A COMMIT or ABORT marker for ``producer_id`` at ``epoch``, its offset set at commit."""
    builder = RecordBatchBuilder(
        producer_id=producer_id,
        producer_epoch=epoch,
        is_transactional=True,
        is_control_batch=True,
    )
    key, value = control_record_bytes("COMMIT" if commit else "ABORT", COORDINATOR_EPOCH)
    builder.append(key, value, (), timestamp_ms)
    return builder.build()


def appended(batch: RecordBatch) -> Appended:
    """What the open-transaction and aborted-index rules need of a committed batch."""
    return Appended(
        base_offset=batch.base_offset,
        last_offset=batch.last_offset,
        producer_id=batch.producer_id,
        transactional=batch.is_transactional,
        marker=batch.control_record().type if batch.is_control_batch else None,
    )
