"""Kafka's record format: RecordBatch v2 (read, validate, build) and the legacy message sets.

Public API::

    RecordBatchBuilder(compression="none", *, base_offset=0, producer_id=-1, ...)
        .append(key, value, headers=(), timestamp=None) ; .build() -> bytes
    iter_batches(buf) -> BatchReader    # RecordBatch (v2) or LegacyBatch (v0/v1) per entry
    RecordBatch: Kafka's header fields by name, validate(), records() -> [Record]
    Record(offset, timestamp, key, value, headers)
"""

from tidelog.records.batch import ControlRecord, RecordBatch
from tidelog.records.builder import RecordBatchBuilder
from tidelog.records.edits import (
    with_base_offset,
    with_log_append_time,
    with_partition_leader_epoch,
)
from tidelog.records.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    UnsupportedCompressionError,
)
from tidelog.records.legacy import LegacyBatch
from tidelog.records.reader import BatchReader, iter_batches
from tidelog.records.walk import Record

__all__ = [
    "BatchReader",
    "ControlRecord",
    "CorruptRecordError",
    "InvalidRecordError",
    "LegacyBatch",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "RecordTooLargeError",
    "UnsupportedCompressionError",
    "iter_batches",
    "with_base_offset",
    "with_log_append_time",
    "with_partition_leader_epoch",
]
