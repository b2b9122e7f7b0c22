"""What a produce request's batches must be before anything is stored (Kafka's LogValidator,
for magic 2 as tidelog accepts it)."""

from __future__ import annotations

from dataclasses import dataclass

from tidelog.errors import InvalidRequestError
from tidelog.records import (
    CorruptRecordError,
    InvalidRecordError,
    LegacyBatch,
    RecordBatch,
    RecordTooLargeError,
    iter_batches,
    with_log_append_time,
)
from tidelog.records.batch import NO_TIMESTAMP

KEYLESS_ON_COMPACTED = "a compacted topic cannot accept a record without a key"


class InvalidTimestampError(InvalidRequestError):
    default_kafka_error = "INVALID_TIMESTAMP"


class TimestampOutOfRangeError(InvalidRecordError):
    """Records whose CreateTime lies outside the topic's bounds, each named (KIP-467)."""

    default_kafka_error = "INVALID_TIMESTAMP"


@dataclass(frozen=True)
class TimestampBounds:
    """How far a CreateTime record's timestamp may lie from the broker's clock:
    ``message.timestamp.before.max.ms`` into the past and ``message.timestamp.after.max.ms``
    into the future (Kafka's LogValidator). A record without a timestamp (-1) has none to
    check, and a LogAppendTime topic checks none."""

    now_ms: int
    before_ms: int
    after_ms: int

    def outside(self, low: int, high: int) -> bool:
        """Does a timestamp in ``[low, high]`` fall outside the bounds?"""
        return high - self.now_ms > self.after_ms or self.now_ms - low > self.before_ms

    def check(self, batch: RecordBatch, low: int, high: int) -> None:
        """The batch's records, whose timestamps lie in ``[low, high]``, read one by one only
        when those could fall outside."""
        if not self.outside(low, high):
            return
        earliest, latest = self.now_ms - self.before_ms, self.now_ms + self.after_ms
        refused = [
            (
                index,
                f"Timestamp {record.timestamp} of message with offset {record.offset} is out of "
                f"range. The timestamp should be within [{earliest}, {latest}]",
            )
            for index, record in enumerate(batch.records())
            if record.timestamp != NO_TIMESTAMP and self.outside(record.timestamp, record.timestamp)
        ]
        if refused:
            raise TimestampOutOfRangeError(refused[0][1], record_errors=refused)


@dataclass(frozen=True)
class ProducedBatch:
    """One validated batch, with what the commit needs to know of it."""

    data: bytes
    record_count: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    transactional: bool = False
    marker: str | None = None  # a transaction marker's type (COMMIT, ABORT): the log writes those

    @property
    def idempotent(self) -> bool:
        """Judged by the producer's sequence; a marker carries none."""
        return self.producer_id >= 0 and self.marker is None


def validate_batches(
    body: bytes,
    *,
    max_message_bytes: int,
    log_append_time: int | None,
    require_keys: bool = False,
    bounds: TimestampBounds | None = None,
) -> list[ProducedBatch]:
    """The batches of ``body``, each validated; ``log_append_time`` stamps them (LogAppendTime
    topics: the one case where the bytes change), or their timestamps are held to ``bounds``.
    Raises a 4xx error naming the first problem."""
    if not body:
        raise CorruptRecordError("the request holds no record batch")
    reader = iter_batches(body)
    batches = []
    for batch in reader:
        if isinstance(batch, LegacyBatch):
            raise InvalidRecordError(
                f"message format v{batch.magic} is not accepted for produce; send magic 2"
            )
        batches.append(_validate(batch, max_message_bytes, log_append_time, require_keys, bounds))
    if reader.trailing_bytes:
        raise CorruptRecordError(
            f"the request ends inside a batch ({reader.trailing_bytes} bytes left over)"
        )
    return batches


def built_batch(
    data: bytes,
    *,
    max_message_bytes: int,
    log_append_time: int | None,
    bounds: TimestampBounds | None = None,
) -> ProducedBatch:
    """A batch tidelog built itself from records it had checked (JSON produce): well formed by
    construction, so decoding it again would only cost time. What depends on the topic is
    still applied: the size limit, LogAppendTime and the timestamp bounds. It answers as
    :func:`validate_batches` does for the same bytes (a differential test holds them equal)."""
    batch = RecordBatch(data)
    _check_size(batch, max_message_bytes)
    if bounds is not None:  # its lowest timestamp unknown: as low as a record's may be
        bounds.check(batch, NO_TIMESTAMP, batch.max_timestamp)
    return _produced(batch, batch.record_count, log_append_time)


def _check_size(batch: RecordBatch, max_message_bytes: int) -> None:
    if batch.size_in_bytes > max_message_bytes:
        raise RecordTooLargeError(
            f"The request included a message larger than the max message size the server will "
            f"accept: batch of {batch.size_in_bytes} bytes, max.message.bytes "
            f"{max_message_bytes}"
        )


def _validate(
    batch: RecordBatch,
    max_message_bytes: int,
    log_append_time: int | None,
    require_keys: bool,
    bounds: TimestampBounds | None,
) -> ProducedBatch:
    _check_size(batch, max_message_bytes)
    if batch.is_control_batch:
        raise InvalidRecordError("control batches are written by the log, never produced")
    if batch.is_transactional and batch.producer_id < 0:
        raise InvalidRecordError("a transactional batch needs a producer id")
    summary = batch.summary()
    if not summary.records:
        raise InvalidRecordError("a produced batch must hold at least one record")
    # summary() found the offset deltas strictly increasing within 0..lastOffsetDelta: with
    # as many records as lastOffsetDelta + 1, they are exactly 0, 1, 2, ...
    if batch.last_offset_delta != summary.records - 1:
        raise InvalidRecordError("produced record offsets must run 0, 1, 2, ... within a batch")
    if require_keys and summary.keyless:
        keyless = [i for i, r in enumerate(batch.records()) if r.key is None]
        raise InvalidRecordError(
            KEYLESS_ON_COMPACTED,
            record_errors=[
                (i, "Compacted topic cannot accept message without key.") for i in keyless
            ],
        )
    # Kafka's maxTimestamp starts at -1 ("none"), so negative timestamps leave it there.
    newest = max(summary.max_timestamp, NO_TIMESTAMP)
    if batch.timestamp_type == "create" and batch.max_timestamp != newest:
        raise InvalidTimestampError("the batch's maxTimestamp does not match its records")
    if bounds is not None and log_append_time is None:
        bounds.check(batch, summary.min_timestamp, summary.max_timestamp)
    if batch.producer_id >= 0 and (batch.producer_epoch < 0 or batch.base_sequence < 0):
        raise InvalidRecordError("an idempotent batch needs a producer epoch and base sequence")
    return _produced(batch, summary.records, log_append_time)


def _produced(batch: RecordBatch, record_count: int, log_append_time: int | None) -> ProducedBatch:
    data = batch.to_bytes()
    if log_append_time is not None:
        data = with_log_append_time(data, log_append_time)
    return ProducedBatch(
        data=data,
        record_count=record_count,
        max_timestamp=log_append_time if log_append_time is not None else batch.max_timestamp,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        last_sequence=batch.last_sequence,
        transactional=batch.is_transactional,
    )
