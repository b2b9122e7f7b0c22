"""What a Kafka Fetch costs the table: the Fetch handler over in-memory stores, counted."""

from __future__ import annotations

import time

import pytest
from kio.index import load_request_schema
from tests.support.counting import CountingStore
from tests.support.log import tiny_log

from tidelog import runtime
from tidelog.kafka.apis import ApiKey
from tidelog.kafka.codec import Request, build, encode_response_as
from tidelog.kafka.handlers import Handlers
from tidelog.kafka.node import Node
from tidelog.kafka.registry import Solo
from tidelog.log.read.fetch import LogReader
from tidelog.log.topics import TopicCache
from tidelog.records import RecordBatch, iter_batches

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
    return log, counting


def fetch(partitions: dict[int, int], version: int = 12) -> dict:
    body = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 10**6,
        "isolation_level": 0,
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
    handlers = Handlers(Solo(Node(1, "h", 9092)))
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
