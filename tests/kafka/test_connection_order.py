"""A connection's requests take effect in the order they were sent, as on a Kafka broker, with
real clients at their defaults (five requests in flight on a connection).

Before the agent kept that order, librdkafka's idempotent producers died within seconds with
OUT_OF_ORDER_SEQUENCE_NUMBER ("sequence desynchronization with broker"), all of them at once:
one producer's refused batch failed the other producers' batches of the same flush.
Non-idempotent producers had their records silently reordered, and pipelined offset commits
could land older-over-newer.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections import defaultdict

import pytest
from confluent_kafka import Producer
from kafka.protocol.consumer import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from tests.functional.test_produce_api import call
from tests.support.kafka_wire import exchange, receive_frame

from kafka import KafkaConsumer, TopicPartition

PARTITIONS = 6
KEYS = 20
RATE = 60  # records a second, per producer
SECONDS = 20  # before the fix every run failed within 4 to 20 s


@pytest.fixture
def topic(dev):
    name = f"order-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": PARTITIONS})[0] == 201
    return name


def produce_steadily(bootstrap, topic, name, config, outcomes, stop):
    """One producer sending ``RATE`` records a second until ``stop``; every outcome recorded."""
    fatal = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "error_cb": lambda error: fatal.append(error) if error.fatal() else None,
            **config,
        }
    )

    def report(error, message):
        outcomes.append(
            (name, message.value().decode(), error, message.partition(), message.offset())
        )

    sent = 0
    start = time.monotonic()
    while not stop.is_set() and not fatal:
        due = int((time.monotonic() - start) * RATE)
        while sent < due:
            value = f"{name}-{sent}"
            producer.produce(topic, key=f"key-{sent % KEYS}", value=value, on_delivery=report)
            sent += 1
        producer.poll(0.005)
    producer.flush(30)
    outcomes.append((name, "fatal", fatal, None, None))


def run_producers(dev, topic, config, count=3):
    outcomes: list = []
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=produce_steadily,
            args=(dev.bootstrap, topic, f"p{i}", config, outcomes, stop),
        )
        for i in range(count)
    ]
    for thread in threads:
        thread.start()
    time.sleep(SECONDS)
    stop.set()
    for thread in threads:
        thread.join(60)
    fatal = [o for o in outcomes if o[1] == "fatal" and o[2]]
    assert not fatal, fatal
    delivered = [o for o in outcomes if o[1] != "fatal"]
    errors = [o for o in delivered if o[2] is not None]
    assert not errors, errors[:5]
    assert len(delivered) >= count * RATE * SECONDS * 0.8
    return delivered


def assert_send_order(delivered, dev, topic):
    """Each producer's records sit in each partition in the order it sent them, each once, at
    the offsets it was told."""
    acknowledged = {value: (partition, offset) for _, value, _, partition, offset in delivered}
    consumer = KafkaConsumer(
        bootstrap_servers=dev.bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000
    )
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    stored = defaultdict(list)
    deadline = time.monotonic() + 60
    count = 0
    while count < len(acknowledged) and time.monotonic() < deadline:
        for record in consumer:
            stored[record.partition].append((record.offset, record.value.decode()))
            count += 1
    consumer.close()
    read = {value: (partition, offset) for partition, r in stored.items() for offset, value in r}
    assert sum(len(r) for r in stored.values()) == len(read)  # no value twice
    assert read == acknowledged
    for records in stored.values():
        by_producer = defaultdict(list)
        for _, value in sorted(records):
            producer, sequence = value.rsplit("-", 1)
            by_producer[producer].append(int(sequence))
        for sequences in by_producer.values():
            assert sequences == sorted(sequences)


def test_idempotent_librdkafka_producers_at_their_defaults_never_desynchronise(dev, topic):
    delivered = run_producers(dev, topic, {"enable.idempotence": True})
    assert_send_order(delivered, dev, topic)


def test_non_idempotent_producers_keep_each_connections_order(dev, topic):
    delivered = run_producers(
        dev, topic, {"enable.idempotence": False, "max.in.flight.requests.per.connection": 5}
    )
    assert_send_order(delivered, dev, topic)


@pytest.mark.parametrize("attempt", range(5))  # before the fix about half the runs failed
def test_pipelined_offset_commits_take_effect_in_the_order_sent(dev, topic, attempt):
    group = f"order-{attempt}-{uuid.uuid4().hex[:6]}"
    host, port = dev.bootstrap.split(":")
    committed = OffsetCommitRequest.OffsetCommitRequestTopic
    frames = []
    for n in range(1, 41):
        partition = committed.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=n, committed_metadata=""
        )
        request = OffsetCommitRequest[2](
            group_id=group,
            generation_id_or_member_epoch=-1,  # a simple consumer's commit: no membership
            member_id="",
            topics=[committed(name=topic, partitions=[partition])],
        )
        request.with_header(correlation_id=n, client_id="committer")
        frames.append(bytes(request.encode(header=True, framed=True)))
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"".join(frames))  # as an asynchronous committer sends them
        for _ in frames:
            answer = OffsetCommitResponse.decode(receive_frame(sock), version=2, header=True)
            assert answer.topics[0].partitions[0].error_code == 0
    wanted = OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])
    fetched = exchange(
        dev.bootstrap,
        OffsetFetchRequest[2](group_id=group, topics=[wanted]),
        OffsetFetchResponse,
        2,
    )
    assert fetched.topics[0].partitions[0].committed_offset == 40
