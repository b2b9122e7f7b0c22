"""Transactions over the HTTP API, through tidelog.client's Producer (confluent-kafka's calls)
and the routes themselves: what one transaction writes is read whole or not at all, by the
HTTP API's read_committed reads and by a Kafka client alike."""

from __future__ import annotations

import uuid

import pytest
from tests.functional.test_produce_api import call

from kafka import KafkaConsumer, TopicPartition
from tidelog.client import Admin, GroupMetadata, Http, Producer
from tidelog.errors import TidelogError


@pytest.fixture
def topic(dev):
    name = f"htx-{uuid.uuid4().hex[:10]}"
    with Admin(dev.api_url) as admin:
        admin.create_topic(name, 2)
    return name


def read(dev, topic, partition, isolation="read_committed"):
    out, offset = [], 0
    with Http(dev.api_url) as http:
        while True:
            page = http.get(
                f"/v1/topics/{topic}/partitions/{partition}/records",
                offset=offset,
                isolation=isolation,
            )
            out += [r["value"] for r in page["records"]]
            if page["next_offset"] == offset:
                return out, page
            offset = page["next_offset"]


def test_a_transaction_is_read_whole_or_not_at_all(dev, topic):
    with Producer(url=dev.api_url, transactional_id=f"t-{topic}") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(4):
            producer.produce(topic, f"c{i}", partition=i % 2)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(4):
            producer.produce(topic, f"a{i}", partition=i % 2)
        producer.abort_transaction()
        producer.begin_transaction()
        producer.produce(topic, "open", partition=0)
        producer.flush()
        committed, page = read(dev, topic, 0)
        assert committed == ["c0", "c2"]  # the open transaction holds the rest back
        assert page["last_stable_offset"] < page["high_watermark"]
        uncommitted, _ = read(dev, topic, 0, "read_uncommitted")
        assert uncommitted == ["c0", "c2", "a0", "a2", "open"]
        producer.commit_transaction()
    assert read(dev, topic, 0)[0] == ["c0", "c2", "open"]
    assert read(dev, topic, 1)[0] == ["c1", "c3"]
    kafka = KafkaConsumer(
        bootstrap_servers=dev.bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        consumer_timeout_ms=2500,
    )
    kafka.assign([TopicPartition(topic, p) for p in range(2)])
    assert sorted(m.value for m in kafka) == [b"c0", b"c1", b"c2", b"c3", b"open"]
    kafka.close()


def test_offsets_sent_to_a_transaction_commit_with_it(dev, topic):
    group = f"g-{topic}"
    with Producer(url=dev.api_url, transactional_id=f"t-{topic}") as producer:
        producer.init_transactions()
        for offset, commit in ((5, False), (8, True)):
            producer.begin_transaction()
            producer.produce(topic, f"v{offset}", partition=0)
            producer.send_offsets_to_transaction([(topic, 0, offset)], GroupMetadata(group))
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    status, body = call(dev, "GET", f"/v1/groups/{group}/offsets")
    assert status == 200, body
    assert [(o["partition"], o["offset"]) for o in body["offsets"]] == [(0, 8)]


def test_a_new_instance_fences_the_old_one(dev, topic):
    tid = f"t-{topic}"
    with (
        Producer(url=dev.api_url, transactional_id=tid) as zombie,
        Producer(url=dev.api_url, transactional_id=tid) as successor,
    ):
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.produce(topic, "zombie", partition=0)
        zombie.flush()
        successor.init_transactions()
        with pytest.raises(TidelogError) as fenced:
            zombie.commit_transaction()
        assert fenced.value.kafka_error.name == "PRODUCER_FENCED"
        successor.begin_transaction()
        successor.produce(topic, "successor", partition=0)
        successor.commit_transaction()
    assert read(dev, topic, 0)[0] == ["successor"]


def test_calls_out_of_order_are_refused(dev, topic):
    with Producer(url=dev.api_url, transactional_id=f"t-{topic}") as producer:
        with pytest.raises(TidelogError, match="init_transactions"):
            producer.begin_transaction()
        producer.init_transactions()
        with pytest.raises(TidelogError, match="begin_transaction"):
            producer.produce(topic, "outside", partition=0)
        with pytest.raises(TidelogError, match="no transaction is open"):
            producer.commit_transaction()


def test_the_routes_list_describe_abort_and_refuse(dev, topic):
    tid = f"t-{topic}"
    status, ids = call(dev, "POST", f"/v1/transactions/{tid}/init", {})
    assert status == 200, ids
    identity = {"producer_id": ids["producer_id"], "producer_epoch": ids["producer_epoch"]}
    status, body = call(
        dev,
        "POST",
        f"/v1/transactions/{tid}/partitions",
        {**identity, "partitions": [{"topic": topic, "partition": 1}]},
    )
    assert (status, body["state"], body["partitions"]) == (
        200,
        "Ongoing",
        [{"topic": topic, "partition": 1}],
    )
    status, listed = call(dev, "GET", "/v1/transactions?state=ongoing")
    assert tid in [t["transactional_id"] for t in listed["transactions"]]
    status, aborted = call(dev, "POST", f"/v1/transactions/{tid}/abort")
    assert (status, aborted["state"]) == (200, "CompleteAbort")
    status, described = call(dev, "GET", f"/v1/transactions/{tid}")
    assert (described["state"], described["producer_epoch"]) == (
        "CompleteAbort",
        identity["producer_epoch"] + 1,
    )
    status, fenced = call(dev, "POST", f"/v1/transactions/{tid}/end", {**identity, "commit": True})
    assert (status, fenced["error"]) == (409, "PRODUCER_FENCED")
    status, missing = call(dev, "GET", f"/v1/transactions/never-{tid}")
    assert (status, missing["error"]) == (404, "TRANSACTIONAL_ID_NOT_FOUND")
    status, too_long = call(
        dev, "POST", f"/v1/transactions/{tid}/init", {"transaction_timeout_ms": 10**9}
    )
    assert (status, too_long["error"]) == (400, "INVALID_TRANSACTION_TIMEOUT")
