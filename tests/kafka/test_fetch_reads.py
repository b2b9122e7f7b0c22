"""What a Kafka Fetch costs the table: the Fetch handler over in-memory stores, counted."""

from __future__ import annotations

import itertools
import threading
import time

import pytest
from kio.index import load_request_schema
from tests.support.counting import CountingStore
from tests.support.log import tiny_log

from tidelog import runtime
from tidelog.kafka import fetch as fetch_module
from tidelog.kafka.apis import ApiKey
from tidelog.kafka.codec import Request, build, encode_response_as
from tidelog.kafka.handlers import Handlers
from tidelog.kafka.node import Node
from tidelog.kafka.registry import Solo
from tidelog.log import keys
from tidelog.log.feed import CommitFeed
from tidelog.log.head import read_heads
from tidelog.log.read.fetch import LogReader
from tidelog.log.read.indexcache import DEFAULT_TTL_MS, IndexCache
from tidelog.log.topics import TopicCache
from tidelog.log.write.staging import StagingArea
from tidelog.log.write.writer import Writer
from tidelog.records import RecordBatch, iter_batches
from tidelog.storage import Put

PARTITIONS = 6


@pytest.fixture
def stack(tmp_path, monkeypatch):
    log = tiny_log(tmp_path, partitions=PARTITIONS)
    for p in range(PARTITIONS):
        for i in range(3):
            log.produce(p, [(None, b"p%d-%d" % (p, i))])
    counting = CountingStore(log.meta)
    cache = TopicCache(log.topics, ttl_s=60, clock_s=time.monotonic)
    monkeypatch.setattr(runtime, "topic_cache", lambda: cache)
    reader = LogReader(counting, log.objects)
    monkeypatch.setattr(runtime, "log_reader", lambda: reader)
    monkeypatch.setattr(runtime, "metadata_store", lambda: log.meta)  # the watcher's, uncounted
    return log, counting


def agent_commits(log, counting, tmp_path, monkeypatch, clock_ms) -> None:
    """The log written and read as `tidelog agent` wires it (tidelog.runtime): each commit
    publishes its head and index entries, which the reader remembers (its clock ``clock_ms``)
    and the long-poll watcher hears."""
    feed = CommitFeed()
    monkeypatch.setattr(runtime, "commit_feed", lambda: feed)
    reader = LogReader(counting, log.objects, index_cache=IndexCache(clock_ms))
    feed.subscribe(reader.remember_committed)
    monkeypatch.setattr(runtime, "log_reader", lambda: reader)
    writer = Writer(
        log.meta,
        log.objects,
        StagingArea(tmp_path / "agent"),
        clock_ms=log.clock,
        sleep=time.sleep,
        jitter=lambda: 0.5,
        on_commit=feed.publish,
    )
    monkeypatch.setattr(log, "writer", writer)


def fetch(
    partitions: dict[int, int],
    version: int = 12,
    *,
    handlers: Handlers | None = None,
    max_wait: int = 0,
    min_bytes: int = 0,
    isolation_level: int = 0,
) -> dict:
    body = {
        "replica_id": -1,
        "max_wait": max_wait,
        "min_bytes": min_bytes,
        "max_bytes": 10**6,
        "isolation_level": isolation_level,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": "tiny",
                "partitions": [
                    {
                        "partition": p,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 10**6,
                    }
                    for p, offset in partitions.items()
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    entity = build(load_request_schema(ApiKey.FETCH, version), body)
    handlers = handlers or Handlers(Solo(Node(1, "h", 9092)))
    answer = handlers.handle(Request(ApiKey.FETCH, version, 1, "app", entity))
    encode_response_as(ApiKey.FETCH, version, 1, answer)
    return answer


def values(partition: dict) -> list[bytes]:
    return [
        record.value
        for batch in iter_batches(partition["records"])
        if isinstance(batch, RecordBatch)
        for record in batch.records()
    ]


def test_a_fetch_reads_the_heads_of_all_its_partitions_at_once(stack):
    _, counting = stack
    answer = fetch(dict.fromkeys(range(PARTITIONS), 1))
    (topic,) = answer["responses"]
    by_partition = {p["partition_index"]: p for p in topic["partitions"]}
    for p in range(PARTITIONS):
        assert values(by_partition[p]) == [b"p%d-1" % p, b"p%d-2" % p]
        assert by_partition[p]["high_watermark"] == 3
    assert counting.calls["get_many"] == 1, "one BatchGetItem for six heads"
    assert counting.calls["get"] == 0, "no head read a partition"


def test_a_partition_the_fetch_cannot_name_is_reported_and_the_rest_served(stack):
    answer = fetch({0: 0, 99: 0})
    (topic,) = answer["responses"]
    by_partition = {p["partition_index"]: p for p in topic["partitions"]}
    assert values(by_partition[0]) == [b"p0-0", b"p0-1", b"p0-2"]
    assert by_partition[99]["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION


def partition_of(answer: dict, index: int) -> dict:
    (topic,) = answer["responses"]
    return next(p for p in topic["partitions"] if p["partition_index"] == index)


def test_an_idle_long_poll_waits_on_the_watcher_without_a_read_of_its_own(stack, monkeypatch):
    """The watcher last saw nothing at the fetch's offset: the fetch reads no head of its own,
    and the record that lands while it waits is read from the watcher's head."""
    log, counting = stack
    p0, p5 = (log.topic.topic_id, 0), (log.topic.topic_id, 5)
    other_waits, p0_seen, clean, second = (threading.Event() for _ in range(4))
    produced: list[list[int]] = []

    def reading(partitions):
        if p5 in partitions:
            other_waits.set()
        if p0 in partitions:
            if second.is_set() and not produced:  # after the second fetch came: it waits on 0
                produced.append(log.produce(0, [(None, b"new")]))
            p0_seen.set()
        elif p0_seen.is_set():
            clean.set()  # a read begun once the first fetches were over
        return read_heads(log.meta, partitions)

    monkeypatch.setattr(fetch_module, "_read_heads", reading)
    handlers = Handlers(Solo(Node(1, "h", 9092)))
    # Another consumer waiting all along keeps the watcher reading between the two fetches.
    other = threading.Thread(
        target=fetch,
        args=({5: 3},),
        kwargs={"handlers": handlers, "max_wait": 10_000, "min_bytes": 1},
    )
    other.start()
    assert other_waits.wait(5)
    while not p0_seen.is_set():  # until the watcher has read partition 0 once
        fetch({0: 3}, handlers=handlers, max_wait=100, min_bytes=1)
    assert clean.wait(5)
    second.set()
    before = counting.calls.copy()
    answer = fetch({0: 3}, handlers=handlers, max_wait=10_000, min_bytes=1)
    assert values(partition_of(answer, 0)) == [b"new"]
    assert partition_of(answer, 0)["high_watermark"] == 4
    assert (counting.calls["get"], counting.calls["get_many"]) == (
        before["get"],
        before["get_many"],
    ), "no head read of its own"
    log.produce(5, [(None, b"release")])
    other.join(5)


def test_a_long_poll_is_answered_from_heads_read_after_it_came(stack, monkeypatch):
    """The watcher last saw nothing at offset 3; a record landed before the fetch came, and the
    watcher's next read is late: the fetch reads for itself rather than answer from what the
    watcher saw before it came."""
    log, _ = stack
    gate = threading.Event()
    reads = itertools.count()

    def first_fast_then_held(partitions):
        if next(reads) > 0:
            gate.wait(10)
        return read_heads(log.meta, partitions)

    monkeypatch.setattr(fetch_module, "_read_heads", first_fast_then_held)
    handlers = Handlers(Solo(Node(1, "h", 9092)))
    try:
        fetch({0: 3}, handlers=handlers, max_wait=1000, min_bytes=1)  # the watcher reads 0 once
        log.produce(0, [(None, b"late")])
        answer = fetch({0: 3}, handlers=handlers, max_wait=300, min_bytes=1)
        assert values(partition_of(answer, 0)) == [b"late"]
        assert partition_of(answer, 0)["high_watermark"] == 4
    finally:
        gate.set()


def test_a_long_poll_wakes_on_this_agents_own_commit_without_the_watchers_read(
    stack, monkeypatch, tmp_path
):
    """A record the agent commits itself wakes its waiting fetch at once: every watcher read
    after the first is held past the fetch's answer. The woken fetch reads the record with no
    call to the table: the commit gave its head and its index entry."""
    log, counting = stack
    agent_commits(log, counting, tmp_path, monkeypatch, lambda: 0)
    held, gate = threading.Event(), threading.Event()
    reads = itertools.count()

    def first_fast_then_held(partitions):
        if next(reads) > 0:
            held.set()
            gate.wait(10)
        return read_heads(log.meta, partitions)

    monkeypatch.setattr(fetch_module, "_read_heads", first_fast_then_held)
    handlers = Handlers(Solo(Node(1, "h", 9092)))  # its watcher listens to the feed
    answers: list[dict] = []
    poll = threading.Thread(
        target=lambda: answers.append(
            fetch({0: 3}, handlers=handlers, max_wait=10_000, min_bytes=1)
        )
    )
    poll.start()
    try:
        assert held.wait(5), "the fetch waits, and the watcher's second read is held"
        before = counting.calls.copy()
        log.produce(0, [(None, b"mine")])
        poll.join(5)
        assert answers, "woken by the commit, not by a read"
        assert values(partition_of(answers[0], 0)) == [b"mine"]
        assert partition_of(answers[0], 0)["high_watermark"] == 4
        assert (counting.calls["get"], counting.calls["get_many"]) == (
            before["get"],
            before["get_many"],
        ), "read on from the head the commit gave, not from a head read of its own"
        assert counting.calls["query"] == before["query"], "the commit's entry, not a query"
    finally:
        gate.set()
        poll.join(5)


@pytest.mark.parametrize(("later_ms", "queries"), [(30_000, 0), (DEFAULT_TTL_MS, PARTITIONS)])
def test_a_group_reading_what_this_agent_committed_lately_queries_no_index(
    stack, monkeypatch, tmp_path, later_ms, queries
):
    """An agent commits what it leads: a group that forms on it half a minute later (the 3 s
    initial delay, the joins) reads its records with no query of the index. Past the entries'
    lifetime, each partition is queried once again."""
    log, counting = stack
    clock = [0]
    agent_commits(log, counting, tmp_path, monkeypatch, lambda: clock[0])
    for p in range(PARTITIONS):
        log.produce(p, [(None, b"led-%d" % p)])
    clock[0] += later_ms
    answer = fetch(dict.fromkeys(range(PARTITIONS), 3))
    (topic,) = answer["responses"]
    assert sorted(values(p)[0] for p in topic["partitions"]) == [
        b"led-%d" % p for p in range(PARTITIONS)
    ]
    assert counting.calls["query"] == queries


def test_a_read_committed_long_poll_behind_an_open_transaction_reads_once(stack):
    """Its high watermark is already past its offset (the open transaction's records): it waits
    past the high watermark, which the transaction's marker moves, not reading again and again."""
    log, counting = stack
    pk = keys.log_pk(log.topic.topic_id, 0)
    head = log.meta.get(pk, keys.HEAD_SK)
    assert head is not None
    log.meta.write(Put({**head, "open_txns": {"7": 1}}))  # records 1 and 2: an open transaction's
    answer = fetch({0: 1}, max_wait=300, min_bytes=1, isolation_level=1)
    partition = partition_of(answer, 0)
    assert (partition["high_watermark"], partition["last_stable_offset"]) == (3, 1)
    assert values(partition) == []
    assert counting.calls["get"] + counting.calls["get_many"] == 1


def list_offsets(at: dict[int, int], version: int = 7) -> dict:
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": "tiny",
                "partitions": [
                    {"partition_index": p, "current_leader_epoch": -1, "timestamp": timestamp}
                    for p, timestamp in at.items()
                ],
            }
        ],
    }
    entity = build(load_request_schema(ApiKey.LIST_OFFSETS, version), body)
    handlers = Handlers(Solo(Node(1, "h", 9092)))
    answer = handlers.handle(Request(ApiKey.LIST_OFFSETS, version, 1, "app", entity))
    encode_response_as(ApiKey.LIST_OFFSETS, version, 1, answer)
    return answer


def test_list_offsets_reads_the_heads_of_all_its_partitions_at_once(stack):
    """A wave of consumers starting from the earliest or latest offsets asks for each of its
    partitions in one request: one BatchGetItem, not a read a partition."""
    _, counting = stack
    earliest, latest = -2, -1
    answer = list_offsets({p: earliest if p % 2 else latest for p in range(PARTITIONS)})
    (topic,) = answer["topics"]
    assert {p["partition_index"]: p["offset"] for p in topic["partitions"]} == {
        p: 0 if p % 2 else 3 for p in range(PARTITIONS)
    }
    assert counting.calls["get_many"] == 1
    assert counting.calls["get"] == 0
