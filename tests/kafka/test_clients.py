"""Real Kafka clients, unmodified, against the agent that `tidelog dev` runs: kafka-python,
aiokafka and librdkafka (confluent-kafka). What they write over Kafka's protocol, the HTTP API
reads, and the other way round, byte for byte.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import io
import socket
import struct
import time
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as RdTopicPartition
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.request_header.v2.header import RequestHeader
from kio.serial import entity_writer
from kio.static.primitive import i16, i32, i64
from tests.functional.test_fetch_api import fetch, produce
from tests.functional.test_produce_api import call
from tests.support.kafka_wire import receive_frame

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from tidelog.kafka.apis import API_VERSIONS, ApiKey

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture
def topic(dev):
    name = f"k-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": 3})[0] == 201
    return name


def consume_all(dev, topic, expected, partitions=3):
    consumer = KafkaConsumer(
        bootstrap_servers=dev.bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < expected and time.monotonic() < deadline:
        got += list(consumer)
    consumer.close()
    return got


def test_kafka_python_produces_and_consumes(dev, topic):
    producer = KafkaProducer(bootstrap_servers=dev.bootstrap, acks="all", linger_ms=5)
    sent = [
        producer.send(
            topic, key=f"user-{i % 7}".encode(), value=f"click {i}".encode(), headers=[("h", b"v")]
        )
        for i in range(60)
    ]
    producer.flush()
    placed = {(m.partition, m.offset) for m in (f.get(10) for f in sent)}
    producer.close()
    assert len(placed) == 60
    got = consume_all(dev, topic, 60)
    assert sorted(m.value for m in got) == sorted(f"click {i}".encode() for i in range(60))
    assert {(m.partition, m.offset) for m in got} == placed
    assert all(m.headers == [("h", b"v")] for m in got)
    # The key decides the partition, as Kafka's default partitioner does (murmur2).
    by_key = {}
    for message in got:
        by_key.setdefault(message.key, set()).add(message.partition)
    assert all(len(partitions) == 1 for partitions in by_key.values())


@pytest.mark.parametrize("codec", CODECS)
def test_librdkafka_produces_with_every_codec_idempotently(dev, topic, codec):
    producer = Producer(
        {
            "bootstrap.servers": dev.bootstrap,
            "linger.ms": 5,
            "compression.type": codec,
            "enable.idempotence": True,
        }
    )
    delivered, failed = [], []

    def report(error, message):
        (failed if error else delivered).append(error or (message.partition(), message.offset()))

    for i in range(200):
        producer.produce(topic, key=f"k{i}", value=f"{codec} {i}", on_delivery=report)
    assert producer.flush(30) == 0
    assert failed == []
    assert len(set(delivered)) == 200
    consumer = Consumer(
        {
            "bootstrap.servers": dev.bootstrap,
            "group.id": f"unused-{codec}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([RdTopicPartition(topic, p, 0) for p in range(3)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 200 and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is None:
            continue
        if message.error():
            raise KafkaException(message.error())
        got.append(message.value())
    consumer.close()
    assert sorted(got) == sorted(f"{codec} {i}".encode() for i in range(200))


def test_aiokafka_produces_and_consumes(dev, topic):
    async def scenario():
        producer = AIOKafkaProducer(
            bootstrap_servers=dev.bootstrap, enable_idempotence=True, compression_type="lz4"
        )
        await producer.start()
        try:
            sent = [
                await producer.send_and_wait(topic, f"a{i}".encode(), key=b"k") for i in range(5)
            ]
        finally:
            await producer.stop()
        assert [m.offset for m in sent] == list(range(5))
        consumer = AIOKafkaConsumer(
            bootstrap_servers=dev.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
        )
        await consumer.start()
        try:
            consumer.assign([AioTopicPartition(topic, sent[0].partition)])
            batch = await consumer.getmany(timeout_ms=5000)
        finally:
            await consumer.stop()
        return [m.value for messages in batch.values() for m in messages]

    assert asyncio.run(scenario()) == [f"a{i}".encode() for i in range(5)]


def test_what_kafka_writes_http_reads_and_the_other_way_round(dev, topic):
    producer = KafkaProducer(bootstrap_servers=dev.bootstrap)
    producer.send(topic, key=b"from-kafka", value=b"\x00\xffbinary", partition=1).get(10)
    producer.close()
    status, body = fetch(dev, topic, 0, partition=1, encoding="base64")
    assert status == 200, body
    (record,) = body["records"]
    assert base64.b64decode(record["key"]) == b"from-kafka"
    assert base64.b64decode(record["value"]) == b"\x00\xffbinary"

    produce(dev, topic, ["from-http"], partition=2)
    (message,) = [m for m in consume_all(dev, topic, 2) if m.partition == 2]
    assert (message.key, message.value, message.offset) == (b"kfrom-http", b"from-http", 0)


def test_offsets_by_time_earliest_and_latest(dev, topic):
    producer = KafkaProducer(bootstrap_servers=dev.bootstrap)
    base = 1_700_000_000_000
    for i in range(4):
        producer.send(topic, value=b"x", partition=0, timestamp_ms=base + i * 1000).get(10)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=dev.bootstrap)
    tp = TopicPartition(topic, 0)
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.end_offsets([tp]) == {tp: 4}
    found = consumer.offsets_for_times({tp: base + 1500})[tp]
    assert (found.offset, found.timestamp) == (2, base + 2000)
    assert consumer.offsets_for_times({tp: base + 10_000})[tp] is None
    consumer.close()


def test_an_unknown_topic_is_reported_not_created(dev):
    name = f"absent-{uuid.uuid4().hex[:6]}"
    consumer = KafkaConsumer(bootstrap_servers=dev.bootstrap)
    try:
        assert not consumer.partitions_for_topic(name)
    finally:
        consumer.close()
    assert call(dev, "GET", f"/v1/topics/{name}")[0] == 404


def _api_versions_frame(version: int) -> bytes:
    request = ApiVersionsRequest[version](client_software_name="t", client_software_version="1")
    request.with_header(correlation_id=3, client_id="raw")
    return bytes(request.encode(header=True, framed=True))


def test_malformed_frames_close_only_their_connection(dev):
    host, port = dev.bootstrap.split(":")
    mangled = [
        b"\x00\x00\x00\x01x",  # shorter than any header
        struct.pack(">i", 14) + struct.pack(">hhi", 3, 9, 1) + b"\xff\xff\xff\xff",  # garbage body
        struct.pack(">i", 2**31 - 1),  # announces 2 GiB
        _api_versions_frame(3)[:-3] + b"\x00",  # truncated, then lying about its size
    ]
    for frame in mangled:
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(frame)
            sock.shutdown(socket.SHUT_WR)
            assert sock.recv(4) == b"", frame  # closed without an answer
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(_api_versions_frame(3))
        answer = ApiVersionsResponse.decode(receive_frame(sock), version=3, header=True)
    assert answer.error_code == 0


def test_an_api_versions_request_newer_than_ours_gets_our_versions_at_v0(dev):
    host, port = dev.bootstrap.split(":")
    newest = API_VERSIONS[ApiKey.API_VERSIONS][1]
    frame = bytearray(_api_versions_frame(newest))
    struct.pack_into(">h", frame, 6, newest + 1)  # a client newer than kafka-python's classes
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(frame)
        answer = ApiVersionsResponse.decode(receive_frame(sock), version=0, header=True)
    assert answer.error_code == 35  # UNSUPPORTED_VERSION
    assert {k.api_key for k in answer.api_keys} >= {0, 1, 2, 3, 18}


def _long_poll_frame(topic: str, correlation_id: int) -> bytes:
    """A Fetch v12 at the end of an empty partition, willing to wait 20 s."""
    out = io.BytesIO()
    entity_writer(RequestHeader)(
        out,
        RequestHeader(
            request_api_key=i16(1),
            request_api_version=i16(12),
            correlation_id=i32(correlation_id),
            client_id="waiting",
        ),
    )
    partition = fetch_v12.FetchPartition(
        partition=i32(0), fetch_offset=i64(0), partition_max_bytes=i32(1 << 20)
    )
    request = fetch_v12.FetchRequest(
        max_wait=datetime.timedelta(seconds=20),
        min_bytes=i32(1),
        topics=(fetch_v12.FetchTopic(topic=topic, partitions=(partition,)),),
        forgotten_topics_data=(),
    )
    entity_writer(fetch_v12.FetchRequest)(out, request)
    body = out.getvalue()
    return struct.pack(">i", len(body)) + body


def test_consumers_waiting_for_data_never_hold_up_producers(dev, topic):
    host, port = dev.bootstrap.split(":")
    waiting = [socket.create_connection((host, int(port)), timeout=30) for _ in range(40)]
    try:
        for n, sock in enumerate(waiting):
            sock.sendall(_long_poll_frame(topic, n))
        time.sleep(1)  # every long poll is now waiting in the agent
        producer = KafkaProducer(bootstrap_servers=dev.bootstrap, max_block_ms=10_000)
        try:
            # Far sooner than the 20 s the fetches wait: they hold no thread produce needs.
            producer.send(topic, b"wake up", partition=0).get(timeout=10)
        finally:
            producer.close()
        for sock in waiting:
            receive_frame(sock)  # each long poll ends with the record, not its timeout
    finally:
        for sock in waiting:
            sock.close()


def test_an_idempotent_producer_gets_an_id_of_its_own(dev):
    ids = set()
    host, port = dev.bootstrap.split(":")
    for _ in range(3):
        request = InitProducerIdRequest[4](
            transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1
        )
        request.with_header(correlation_id=9, client_id="raw")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(bytes(request.encode(header=True, framed=True)))
            answer = InitProducerIdResponse.decode(receive_frame(sock), version=4, header=True)
        assert answer.error_code == 0
        ids.add(answer.producer_id)
    assert len(ids) == 3


def test_librdkafka_out_of_range_resets_to_the_earliest_offset(dev, topic):
    # librdkafka 2.16 read nothing here while error partitions were answered with null records.
    produce(dev, topic, [f"r{i}" for i in range(5)])
    consumer = Consumer(
        {
            "bootstrap.servers": dev.bootstrap,
            "group.id": f"reset-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([RdTopicPartition(topic, 0, 1000)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append((message.offset(), message.value()))
    consumer.close()
    assert got == [(i, f"r{i}".encode()) for i in range(5)]


def test_librdkafka_learns_which_records_of_a_batch_were_refused(dev):
    """KIP-467: a batch with keyless records to a compacted topic is refused, naming the
    records at fault; librdkafka fails those with INVALID_RECORD and the rest of the batch with
    _INVALID_DIFFERENT_RECORD, so the application knows which ones to send again."""
    name = f"c-{uuid.uuid4().hex[:8]}"
    configs = {"cleanup.policy": "compact"}
    assert call(dev, "POST", "/v1/topics", {"name": name, "configs": configs})[0] == 201
    producer = Producer({"bootstrap.servers": dev.bootstrap, "linger.ms": 200})
    outcomes: dict[bytes, int] = {}

    def delivered(error, message) -> None:
        outcomes[message.value()] = error.code() if error is not None else 0

    for i, key in enumerate([b"k0", None, b"k2", None]):
        producer.produce(name, value=b"v%d" % i, key=key, partition=0, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert outcomes == {
        b"v0": KafkaError._INVALID_DIFFERENT_RECORD,
        b"v1": KafkaError.INVALID_RECORD,
        b"v2": KafkaError._INVALID_DIFFERENT_RECORD,
        b"v3": KafkaError.INVALID_RECORD,
    }
    records = call(dev, "GET", f"/v1/topics/{name}/partitions/0/records?offset=0")[1]
    assert records["high_watermark"] == 0  # nothing of the batch was stored
