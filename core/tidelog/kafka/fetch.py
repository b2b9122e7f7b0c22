"""Fetch: a consumer's read, over the same log reader as the HTTP API's.

A fetch reads the heads of all its partitions at once (one BatchGetItem), then each partition
beside the others. One with fewer bytes than its ``min_bytes`` waits, up to its ``max_wait``,
on the agent's long-poll watcher (tidelog.kafka.watcher) and reads again what moved.

A long poll at the end of the log makes no read of its own when the watcher last saw nothing to
fetch at its offsets: it waits for the watcher's next read, and is answered from heads read
after it came. An idle consumer's fetches then cost the table nothing beyond the watcher's one
read an interval for every partition waited on; its answer is what a read of its own, made
when it came or later, would have given.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence

from tidelog import runtime
from tidelog.errors import TidelogError
from tidelog.kafka.codec import NONE, Answer, Request, field, items
from tidelog.kafka.topicrefs import TopicRef, topic_ref
from tidelog.kafka.watcher import HighWatermarkWatcher, Partition
from tidelog.log.head import Head, OffsetOutOfRangeError, read_heads
from tidelog.log.read.fetch import PartitionData
from tidelog.threads import ContextPool

READ_COMMITTED = 1  # Fetch's and ListOffsets' isolation_level
PARTITION_READS = 16

Wanted = tuple[str, int, int, int]  # (topic, partition, fetch offset, partition max bytes)
Result = PartitionData | TidelogError


class FetchHandler:
    def __init__(self) -> None:
        self._watcher = HighWatermarkWatcher(_read_heads)
        runtime.commit_feed().subscribe(self._watcher.observe)
        # A fetch's partitions are read at once: each read is a few round trips to DynamoDB
        # and S3, and a consumer waits for the slowest partition of its fetch, not their sum.
        self._partition_reads = ContextPool(PARTITION_READS, thread_name_prefix="fetch")

    def fetch(self, request: Request) -> Answer:
        body = request.body
        came = time.monotonic()
        deadline = came + body.max_wait.total_seconds()
        min_bytes = int(body.min_bytes)
        budget = int(field(body, "max_bytes", 2**31 - 1))
        committed = int(field(body, "isolation_level", 0)) == READ_COMMITTED
        refs: list[TopicRef] = []
        wanted: list[Wanted] = []
        for t in items(body.topics):
            ref = topic_ref(t, "topic")
            for p in items(t.partitions):
                refs.append(ref)
                wanted.append(
                    (ref.name, int(p.partition), int(p.fetch_offset), int(p.partition_max_bytes))
                )
        named = [w for w, ref in zip(wanted, refs, strict=True) if ref.error is None]
        watched = self._watched(named, committed, came, deadline) if min_bytes > 0 else None
        read = iter(self._read(named, committed, watched))
        results = [ref.error if ref.error is not None else next(read) for ref in refs]
        while sum(_size(r) for r in results) < min_bytes:
            # Not enough yet: wait for a commit to any partition that had nothing, then read
            # those again; what was already read is kept. A read_committed fetch behind an open
            # transaction waits past the high watermark it saw, which the transaction's marker
            # moves, not past its offset, which the open transaction's records already have.
            empty = [
                i for i, r in enumerate(results) if isinstance(r, PartitionData) and not r.batches
            ]
            ids = {i: _id(wanted[i]) for i in empty}
            waiting = {ids[i]: max(wanted[i][2], _high(results[i])) for i in empty}
            if not waiting or not self._watcher.wait(waiting, deadline):
                break
            # What woke it (the watcher's read, or a commit of this agent's) is a head read
            # since the fetch came: read on from it rather than read the heads again.
            seen = self._watcher.read_since(waiting, came)
            heads = None
            if seen is not None:
                heads = {(wanted[i][0], wanted[i][1]): seen[ids[i]] for i in empty}
            again = self._read([wanted[i] for i in empty], committed, heads)
            for i, result in zip(empty, again, strict=True):
                results[i] = result
        answers: dict[TopicRef, list[Answer]] = {}
        first = True
        for ref, (_, partition, _, _), result in zip(refs, wanted, results, strict=True):
            if isinstance(result, TidelogError):
                answers.setdefault(ref, []).append(fetch_error(partition, result))
                continue
            records = bytearray()
            for batch in result.batches:
                if not first and len(records) + len(batch.data) > budget:
                    break
                records += batch.data
                first = False
            budget -= len(records)
            answers.setdefault(ref, []).append(
                {
                    "partition_index": partition,
                    "error_code": NONE,
                    "high_watermark": result.high_watermark,
                    "last_stable_offset": result.last_stable_offset,
                    "log_start_offset": result.log_start_offset,
                    # Null unless read_committed, as Kafka's: only such a reader skips them.
                    "aborted_transactions": [
                        {"producer_id": t.producer_id, "first_offset": t.first_offset}
                        for t in result.aborted
                    ]
                    if committed
                    else None,
                    "preferred_read_replica": -1,
                    "records": bytes(records),
                }
            )
        return {
            "throttle_time": 0,
            "error_code": NONE,
            "session_id": 0,
            "responses": [
                {"topic": ref.name, "topic_id": ref.topic_id, "partitions": partitions}
                for ref, partitions in answers.items()
            ],
        }

    def _watched(
        self, wanted: Sequence[Wanted], committed: bool, came: float, deadline: float
    ) -> dict[tuple[str, int], Head] | None:
        """Heads for a long poll without a read of its own, when the watcher last saw nothing to
        fetch at any of its offsets: those of the watcher's reads begun since the fetch came,
        waited for until one shows something new or the deadline. None: read them."""
        ids = _ids((name, partition) for name, partition, _, _ in wanted)
        if not wanted or len(ids) < len(wanted) or deadline <= came:
            return None
        offsets = {ids[(name, partition)]: offset for name, partition, offset, _ in wanted}
        past = self._watcher.settled(offsets, committed=committed)
        if past is None:
            return None
        self._watcher.wait(past, deadline)
        heads = self._watcher.read_since(offsets, came)
        return None if heads is None else {key: heads[at] for key, at in ids.items()}

    def _read(
        self,
        wanted: Sequence[Wanted],
        committed: bool,
        heads: Mapping[tuple[str, int], Head] | None = None,
    ) -> list[Result]:
        """Each partition's read from the heads given, or from heads read now (one call, shared
        with the other requests reading heads at once)."""
        if heads is None:
            heads = heads_of((name, partition) for name, partition, _, _ in wanted)
        given = heads
        return list(
            self._partition_reads.map(
                lambda w: self._read_partition(w, given.get((w[0], w[1])), committed), wanted
            )
        )

    @staticmethod
    def _read_partition(wanted: Wanted, head: Head | None, committed: bool) -> Result:
        name, partition, offset, max_bytes = wanted
        try:
            topic = runtime.topic_cache().get(name, partition)
            topic.check_partition(partition)
            reader = runtime.log_reader()
            return reader.fetch(
                topic.topic_id, partition, offset, max(max_bytes, 1), head, committed=committed
            )
        except TidelogError as exc:
            return exc


def fetch_error(partition: int, error: TidelogError) -> Answer:
    """A partition's error, as Kafka's log read answers it: empty records, never null
    (librdkafka 2.0 refuses a whole Fetch response whose records are null)."""
    high_watermark = log_start = -1
    if isinstance(error, OffsetOutOfRangeError):
        high_watermark, log_start = error.high_watermark, error.log_start_offset
    return {
        "partition_index": partition,
        "error_code": error.kafka_error.code,
        "high_watermark": high_watermark,
        "last_stable_offset": -1,
        "log_start_offset": log_start,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": b"",
    }


def _ids(named: Iterable[tuple[str, int]]) -> dict[tuple[str, int], Partition]:
    """(topic id, partition) of each partition the topic cache can name; the others are left to
    their own reads, which report them."""
    ids: dict[tuple[str, int], Partition] = {}
    for name, partition in named:
        with contextlib.suppress(TidelogError):
            ids[(name, partition)] = (
                runtime.topic_cache().get(name, partition).topic_id,
                partition,
            )
    return ids


def _id(wanted: Wanted) -> Partition:
    return runtime.topic_cache().get(wanted[0]).topic_id, wanted[1]


def heads_of(named: Iterable[tuple[str, int]]) -> dict[tuple[str, int], Head]:
    """The heads of the partitions a request names (topic, partition), in one read
    (BatchGetItem) rather than one a partition. Those it cannot name are left out, for their
    own reads to report."""
    ids = _ids(named)
    try:
        found = runtime.log_reader().full_heads(list(set(ids.values())))
    except TidelogError:
        return {}
    return {key: found[at] for key, at in ids.items() if at in found}


def _read_heads(partitions: Sequence[Partition]) -> dict[Partition, Head]:
    return read_heads(runtime.metadata_store(), partitions)


def _high(result: Result) -> int:
    return result.high_watermark if isinstance(result, PartitionData) else -1


def _size(result: Result) -> int:
    return result.size if isinstance(result, PartitionData) else 0
