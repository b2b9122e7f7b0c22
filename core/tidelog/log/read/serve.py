"""Answering fetch and ListOffsets requests: long polls, many partitions, JSON within Lambda's
response limit.

- A fetch at the high watermark waits up to ``max_wait_ms`` for a commit (tailing consumers).
- A multi-partition fetch answers once ``min_bytes`` are there or the wait is over, and keeps the
  whole response within ``max_bytes`` (the first batch always goes: a consumer never stalls).
- JSON records: ``utf8`` gives keys, values and header values as text (a record that is not
  UTF-8 names ``base64`` in its error); ``base64`` gives them as base64 text. Control batches are
  skipped, as Kafka's consumers skip them, and so are records before the fetched offset (a batch
  is returned whole).
- read_committed (``committed``) reads below the last stable offset only, and filters on the
  server what a Kafka consumer filters itself: an aborted transaction's batches and every
  marker are left out, JSON and raw alike, leaving gaps in the offsets as compaction does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pybase64
from pydantic_core import to_json

from tidelog.errors import InvalidRequestError, TidelogError
from tidelog.log.head import Head
from tidelog.log.read.fetch import FetchedBatch, LogReader, PartitionData, wait_until
from tidelog.log.topics import Topic, TopicCache
from tidelog.records import RecordTooLargeError
from tidelog.threads import ContextPool
from tidelog.txn.markers import appended
from tidelog.txn.stable import visible

RECORD_BATCH_TYPE = "application/vnd.kafka.record-batch"
DEFAULT_PARTITION_MAX_BYTES = 1024 * 1024  # Kafka's max.partition.fetch.bytes
# Lambda answers at most 6 MB: raw batches go out base64-encoded (x4/3), JSON has its envelope.
MAX_FETCH_BYTES = 4 * 1024 * 1024
JSON_BUDGET = 5 * 1024 * 1024
MAX_WAIT_MS = 20_000  # API Gateway gives up at 29 s
TIMESTAMP_TYPES = {"create": "CreateTime", "log_append": "LogAppendTime"}


def fetch_one(
    reader: LogReader,
    topic: Topic,
    partition: int,
    offset: int,
    *,
    max_bytes: int,
    max_wait_ms: int,
    committed: bool = False,
) -> PartitionData:
    data = _fetch(reader, topic.topic_id, partition, offset, max_bytes, committed=committed)
    if data.batches or max_wait_ms <= 0:
        return data
    deadline = time.monotonic() + max_wait_ms / 1000
    wait_until(
        lambda: _readable_end(reader, topic.topic_id, partition, committed) > offset, deadline
    )
    return _fetch(reader, topic.topic_id, partition, offset, max_bytes, committed=committed)


def _fetch(
    reader: LogReader,
    topic_id: str,
    partition: int,
    offset: int,
    max_bytes: int,
    *,
    committed: bool,
) -> PartitionData:
    data = reader.fetch(topic_id, partition, offset, max_bytes, committed=committed)
    if committed:
        data.batches = [
            b
            for b in data.batches
            if not b.batch.is_control_batch and visible(appended(b.batch), data.aborted)
        ]
    return data


def _readable_end(reader: LogReader, topic_id: str, partition: int, committed: bool) -> int:
    head = reader.full_head(topic_id, partition)
    return head.last_stable_offset if committed else head.next_offset


def render_partition(
    data: PartitionData, offset: int, encoding: str, budget: int = JSON_BUDGET
) -> tuple[bytes, int]:
    """The records as a JSON array, and the offset to fetch next (earlier than the data's when
    the budget cut it short)."""
    rendered = render(data.batches, offset, encoding, budget)
    return rendered.json, data.next_offset if rendered.cut_at is None else rendered.cut_at


@dataclass(frozen=True)
class Wanted:
    topic: str
    partition: int
    offset: int
    max_bytes: int


@dataclass(frozen=True)
class Answer:
    records_json: bytes  # a JSON array
    high_watermark: int
    log_start_offset: int
    next_offset: int
    last_stable_offset: int


_pool = ContextPool(8, thread_name_prefix="tidelog-fetch")


def fetch_many(
    reader: LogReader,
    topics: TopicCache,
    wanted: Sequence[Wanted],
    *,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    encoding: str,
    committed: bool = False,
) -> list[Answer | TidelogError]:
    """Each partition's answer or error, in request order."""
    deadline = time.monotonic() + max_wait_ms / 1000

    def one(want: Wanted) -> PartitionData | TidelogError:
        try:
            topic = topics.get(want.topic, want.partition)
            topic.check_partition(want.partition)
            return _fetch(
                reader,
                topic.topic_id,
                want.partition,
                want.offset,
                want.max_bytes,
                committed=committed,
            )
        except TidelogError as exc:
            return exc

    fetched: list[PartitionData | TidelogError] = list(_pool.map(one, wanted))
    while True:
        total = sum(d.size for d in fetched if isinstance(d, PartitionData))
        if total >= min_bytes or time.monotonic() >= deadline:
            break
        # Not enough yet: sleep a little, then look again at the partitions that had nothing
        # (one head read each); what was already read is kept, not fetched again.
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        empty = [i for i, d in enumerate(fetched) if isinstance(d, PartitionData) and not d.batches]
        for i, data in zip(empty, _pool.map(one, [wanted[i] for i in empty]), strict=True):
            fetched[i] = data
    return _shape(wanted, fetched, max_bytes, encoding)


def _shape(
    wanted: Sequence[Wanted],
    fetched: Sequence[PartitionData | TidelogError],
    max_bytes: int,
    encoding: str,
) -> list[Answer | TidelogError]:
    answers: list[Answer | TidelogError] = []
    budget, json_budget = max_bytes, JSON_BUDGET
    first = True  # the first batch of the response always goes
    for want, data in zip(wanted, fetched, strict=True):
        if isinstance(data, TidelogError):
            answers.append(data)
            continue
        kept: list[FetchedBatch] = []
        next_offset = data.next_offset
        for fetched_batch in data.batches:
            if not first and len(fetched_batch.data) > budget:
                next_offset = max(want.offset, fetched_batch.batch.base_offset)
                break
            kept.append(fetched_batch)
            budget -= len(fetched_batch.data)
            first = False
        try:
            rendered = render(
                kept, want.offset, encoding, json_budget, at_least_one=json_budget == JSON_BUDGET
            )
        except TidelogError as exc:
            answers.append(exc)
            continue
        json_budget -= len(rendered.json)
        if rendered.cut_at is not None:
            next_offset = rendered.cut_at
        answers.append(
            Answer(
                rendered.json,
                data.high_watermark,
                data.log_start_offset,
                next_offset,
                data.last_stable_offset,
            )
        )
    return answers


def list_offset(
    reader: LogReader,
    topic: Topic,
    partition: int,
    at: str,
    *,
    committed: bool = False,
    head: Head | None = None,
) -> tuple[int, int]:
    """ListOffsets: ``earliest`` (the log start), ``latest`` (the high watermark: "start from
    right now"; read_committed's is the last stable offset), ``max-timestamp`` (the record with
    the largest timestamp), or a timestamp in ms (the first offset whose record is at least that
    recent). Timestamps answer -1 for earliest and
    latest, and (-1, -1) when no record is that recent, as Kafka's ListOffsets does. ``head``:
    the partition's, when the caller read it with others'."""
    if at == "max-timestamp":
        found = reader.offset_for_max_timestamp(topic.topic_id, partition)
        return found if found is not None else (-1, -1)
    head = head if head is not None else reader.full_head(topic.topic_id, partition)
    if at == "earliest":
        return head.log_start_offset, -1
    if at == "latest":
        return (head.last_stable_offset if committed else head.next_offset), -1
    if not (at.isascii() and at.isdigit()):
        raise InvalidRequestError(
            f"at={at!r}: give earliest, latest, or a timestamp in milliseconds"
        )
    found = reader.offset_for_timestamp(topic.topic_id, partition, int(at))
    return found if found is not None else (-1, -1)


@dataclass(frozen=True)
class Rendered:
    json: bytes  # the records as a JSON array, UTF-8
    count: int
    cut_at: int | None  # the offset the budget cut the records at, if it did


def render(
    batches: Sequence[FetchedBatch],
    offset: int,
    encoding: str,
    budget: int,
    *,
    at_least_one: bool = True,
) -> Rendered:
    """The records from ``offset`` as JSON, within ``budget`` bytes. With ``at_least_one``, a
    first record too large for the budget is an error, not an empty answer (the consumer would
    never get past it). Rendered once, in one call, as the answer sends it; only an answer over
    the budget is measured record by record to find where to cut."""
    items: list[dict[str, Any]] = []
    text_of = _TEXT_OF[encoding]
    at = offset
    try:
        for fetched in batches:
            batch = fetched.batch
            if batch.is_control_batch:
                continue
            timestamp_type = TIMESTAMP_TYPES[batch.timestamp_type]
            for at, timestamp, key, value, headers in batch.records():
                if at < offset:
                    continue
                items.append(
                    {
                        "offset": at,
                        "timestamp": timestamp,
                        "timestamp_type": timestamp_type,
                        "key": None if key is None else text_of(key),
                        "value": None if value is None else text_of(value),
                        "headers": [
                            {"key": name, "value": None if data is None else text_of(data)}
                            for name, data in headers
                        ]
                        if headers
                        else [],
                    }
                )
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(
            f"the record at offset {at} is not UTF-8 text; fetch with encoding=base64"
        ) from exc
    text = to_json(items)
    if len(text) <= budget:
        return Rendered(text, len(items), None)
    kept, size = 0, 1  # the opening "["
    for item in items:
        size += len(to_json(item)) + 1  # and the "," or "]" after it
        if size > budget:
            break
        kept += 1
    if not kept and at_least_one:
        raise RecordTooLargeError(
            f"the record at offset {items[0]['offset']} does not fit in a JSON "
            f"response; fetch it as raw batches (Accept: {RECORD_BATCH_TYPE})"
        )
    return Rendered(to_json(items[:kept]), kept, items[kept]["offset"])


_TEXT_OF: dict[str, Callable[[bytes], str]] = {
    "utf8": bytes.decode,
    "base64": pybase64.b64encode_as_string,
}
