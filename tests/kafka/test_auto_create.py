"""Topics created on first use, as Kafka's auto.create.topics.enable creates them (on in
`tidelog dev`): each client's producer sends to a topic that does not exist yet and its
consumer reads it back; Metadata's allow_auto_topic_creation flag, names CreateTopics refuses
and agents racing to create one topic are honoured. And Debian's kcat (librdkafka 2.0.2)
compresses what it sends to a brand-new topic, now that Produce is advertised from v0."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, Producer
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from tests.functional.test_produce_api import call
from tests.support.kafka_wire import exchange

from kafka import KafkaConsumer, KafkaProducer
from tidelog.records import iter_batches

UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION = 3, 17
RAW = {"Accept": "application/vnd.kafka.record-batch"}


def _new() -> str:
    return f"auto-{uuid.uuid4().hex[:8]}"


def _topic(dev, name: str) -> dict | None:
    status, body = call(dev, "GET", f"/v1/topics/{name}")
    return body if status == 200 else None


def test_kafka_python_produces_to_a_new_topic_and_reads_it_back(dev):
    name = _new()
    producer = KafkaProducer(bootstrap_servers=dev.bootstrap, max_block_ms=10_000)
    sent = producer.send(name, value=b"first").get(timeout=10)
    producer.close()
    assert sent.offset == 0
    created = _topic(dev, name)
    assert created is not None
    assert len(created["partitions"]) == 1  # num.partitions
    consumer = KafkaConsumer(
        name,
        bootstrap_servers=dev.bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    assert [m.value for m in consumer][:1] == [b"first"]
    consumer.close()


def test_aiokafka_produces_to_a_new_topic_and_reads_it_back(dev):
    name = _new()

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=dev.bootstrap)
        await producer.start()
        try:
            await producer.send_and_wait(name, b"from aiokafka")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            name, bootstrap_servers=dev.bootstrap, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            message = await asyncio.wait_for(consumer.getone(), 15)
        finally:
            await consumer.stop()
        return [message.value]

    assert asyncio.run(run()) == [b"from aiokafka"]


def test_librdkafka_produces_to_a_new_topic_and_reads_it_back(dev):
    name = _new()
    producer = Producer({"bootstrap.servers": dev.bootstrap})
    delivered = []
    producer.produce(name, b"from librdkafka", on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(15) == 0
    assert delivered == [None]
    consumer = Consumer(
        {
            "bootstrap.servers": dev.bootstrap,
            "group.id": f"g-{name}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([name])
    message = None
    for _ in range(30):
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            break
    consumer.close()
    assert message is not None
    assert message.value() == b"from librdkafka"


def test_http_produce_to_an_unknown_topic_creates_it(dev):
    name = _new()
    status, answer = call(dev, "POST", f"/v1/topics/{name}/records", {"records": [{"value": "x"}]})
    assert status == 200, answer
    assert answer["offsets"][0]["offset"] == 0
    assert _topic(dev, name) is not None


def _metadata(dev, version: int, name: str, **flags):
    request = MetadataRequest[version](
        topics=[MetadataRequest.MetadataRequestTopic(name=name)], **flags
    )
    (topic,) = exchange(dev.bootstrap, request, MetadataResponse, version).topics
    return topic


def test_a_metadata_request_that_does_not_allow_creation_creates_nothing(dev):
    name = _new()
    topic = _metadata(dev, 9, name, allow_auto_topic_creation=False)
    assert topic.error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert _topic(dev, name) is None
    assert _metadata(dev, 9, name, allow_auto_topic_creation=True).error_code == 0
    assert _topic(dev, name) is not None


def test_versions_without_the_flag_create_as_kafka_reads_them(dev):
    name = _new()
    assert _metadata(dev, 1, name).error_code == 0
    assert _topic(dev, name) is not None


@pytest.mark.parametrize("name", ["bad/name", "..", "x" * 250])
def test_a_name_createtopics_refuses_is_invalid_and_creates_nothing(dev, name):
    topic = _metadata(dev, 9, name, allow_auto_topic_creation=True)
    assert topic.error_code == INVALID_TOPIC_EXCEPTION
    assert name not in {t["name"] for t in call(dev, "GET", "/v1/topics")[1]["topics"]}


def test_clients_racing_to_create_one_topic_all_get_the_same_one(dev):
    name = _new()
    with ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(lambda _: _metadata(dev, 10, name, allow_auto_topic_creation=True), range(8))
        )
    assert {a.error_code for a in answers} == {0}
    assert len({a.topic_id for a in answers}) == 1
    assert str(answers[0].topic_id) == _topic(dev, name)["topic_id"]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_debian_kcat_compresses_what_it_sends_to_a_brand_new_topic(dev, codec):
    """librdkafka 2.0.2 compresses only for a broker that lists Produce v0 (issue 4956)."""
    name = _new()
    lines = "".join(f"record {i} " + "abc" * 50 + "\n" for i in range(20))
    produced = subprocess.run(
        ["kcat", "-b", dev.bootstrap, "-P", "-t", name, "-z", codec],
        input=lines,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert produced.returncode == 0, produced.stderr
    request = urllib.request.Request(
        f"{dev.api_url}/v1/topics/{name}/partitions/0/records?offset=0", headers=RAW
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        stored = list(iter_batches(response.read()))
    assert stored
    assert {batch.compression for batch in stored} == {codec}
    assert sum(batch.record_count for batch in stored) == 20
