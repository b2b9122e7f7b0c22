"""The client's Producer against `tidelog dev`: batches per partition built here, offsets and
callbacks in produce order, Kafka's partitioner, and idempotent retries that write every record
exactly once through seeded 503s and timeouts."""

from __future__ import annotations

import random
import threading
import uuid

import httpx2
import pytest
from tests.support import seeds

from tidelog.client import Admin, Http, Producer
from tidelog.client.producer_config import ProducerConfig
from tidelog.errors import InvalidRequestError, NotFoundError, RetriableError
from tidelog.partitioner import partition_for_key


@pytest.fixture
def topic(dev):
    name = f"producer-{uuid.uuid4().hex[:10]}"
    with Admin(dev.api_url) as admin:
        admin.create_topic(name, 4)
    return name


def read_partition(dev, topic, partition):
    """Every record of the partition, in offset order: (offset, key, value, headers, ts)."""
    out, offset = [], 0
    with Http(dev.api_url) as http:
        while True:
            page = http.get(f"/v1/topics/{topic}/partitions/{partition}/records", offset=offset)
            out += [
                (r["offset"], r["key"], r["value"], r["headers"], r["timestamp"])
                for r in page["records"]
            ]
            offset = page["next_offset"]
            if offset >= page["high_watermark"]:
                return out


def test_records_land_in_order_with_their_metadata(dev, topic):
    delivered = []
    with Producer({"url": dev.api_url, "linger.ms": 20, "compression.type": "lz4"}) as producer:
        futures = [
            producer.produce(
                topic,
                f"v{i}",
                key=f"user-{i % 7}",
                headers={"n": str(i).encode()},
                timestamp=1_700_000_000_000 + i,
                on_delivery=lambda err, md: delivered.append((err, md)),
            )
            for i in range(200)
        ]
        assert producer.flush(30) == 0
        assert len(producer) == 0
    results = [f.result() for f in futures]
    assert all(err is None for err, _ in delivered)
    for i, md in enumerate(results):
        assert md.partition == partition_for_key(f"user-{i % 7}".encode(), 4), "Kafka's murmur2"
        assert md.timestamp == 1_700_000_000_000 + i
    by_partition = {}
    for i, md in enumerate(results):
        by_partition.setdefault(md.partition, []).append((md.offset, i))
    for partition, placed in by_partition.items():
        assert [offset for offset, _ in placed] == list(range(len(placed))), "dense, in order"
        stored = read_partition(dev, topic, partition)
        assert [(o, v) for o, _, v, _, _ in stored] == [(o, f"v{i}") for o, i in placed]
        assert stored[0][3] == [{"key": "n", "value": str(placed[0][1])}]
    callback_order = [(md.partition, md.offset) for _, md in delivered]
    for partition in by_partition:
        offsets = [o for p, o in callback_order if p == partition]
        assert offsets == sorted(offsets), "callbacks in order per partition"


def test_keyless_records_stick_to_a_partition_per_batch(dev, topic):
    with Producer(url=dev.api_url, linger_ms=1000, batch_size=1_000) as producer:
        futures = [producer.produce(topic, "x" * 90) for _ in range(40)]
    partitions = [f.result().partition for f in futures]
    runs = [p for i, p in enumerate(partitions) if i == 0 or p != partitions[i - 1]]
    assert len(runs) < 10, "sticky: whole batches to one partition before moving on"


def test_bad_produces_fail_at_once_and_change_nothing(dev, topic):
    with Producer(url=dev.api_url) as producer:
        with pytest.raises(InvalidRequestError) as bad:
            producer.produce("bad!name", "v")  # not created, however the cluster is set
        assert bad.value.kafka_error.name == "INVALID_TOPIC_EXCEPTION"
        with pytest.raises(InvalidRequestError) as far:
            producer.produce(topic, "v", partition=9)
        assert far.value.kafka_error.name == "UNKNOWN_TOPIC_OR_PARTITION"
        with pytest.raises(InvalidRequestError) as big:
            producer.produce(topic, b"x" * 2_000_000)
        assert big.value.kafka_error.name == "MESSAGE_TOO_LARGE"
    assert all(read_partition(dev, topic, p) == [] for p in range(4))


def test_a_new_topic_is_created_by_its_first_record_as_kafkas_producer_creates_it(dev):
    """`tidelog dev` auto-creates topics (Kafka's default): the producer's metadata lookup
    creates it with num.partitions (1), as a Kafka producer's Metadata request does."""
    name = f"fresh-{uuid.uuid4().hex[:8]}"
    with Producer(url=dev.api_url) as producer:
        sent = producer.produce(name, "first").result(30)
    assert (sent.partition, sent.offset) == (0, 0)
    with Admin(dev.api_url) as admin:
        assert admin.describe_topic(name).partitions == 1
        with pytest.raises(NotFoundError):  # a plain lookup never creates
            admin.describe_topic(f"absent-{uuid.uuid4().hex[:6]}")


def test_configs_are_kafkas_and_checked():
    config, connection = ProducerConfig.parse(
        {"url": "http://x", "linger.ms": "7", "enable.idempotence": "false", "acks": "all"}
    )
    assert (config.linger_ms, config.enable_idempotence, connection) == (
        7,
        False,
        {"url": "http://x"},
    )
    for bad in ({"acks": "1"}, {"linger.ms": "soon"}, {"compression.type": "brotli"}, {"x.y": 1}):
        with pytest.raises(InvalidRequestError):
            ProducerConfig.parse(bad)


class Faults(httpx2.BaseTransport):
    """Fails produce requests at random, seeded: a 503 before anything is written, or a
    timeout after the batch was written (the answer lost)."""

    def __init__(self, seed: int, rate: float) -> None:
        self.inner = httpx2.HTTPTransport()
        self.random = random.Random(seed)
        self.rate = rate
        self.lock = threading.Lock()
        self.injected = {"before": 0, "after": 0}

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if not request.url.path.endswith("/batches"):
            return self.inner.handle_request(request)
        with self.lock:
            roll = self.random.random()
        if roll < self.rate / 2:
            self.injected["before"] += 1
            body = {"error": "KAFKA_STORAGE_ERROR", "error_code": 56, "retriable": True}
            return httpx2.Response(503, json={**body, "message": "injected"}, request=request)
        response = self.inner.handle_request(request)
        if roll < self.rate:
            response.read()
            self.injected["after"] += 1
            raise httpx2.ReadTimeout("injected: the answer was lost", request=request)
        return response


@pytest.mark.parametrize("seed", seeds.draw("idempotent retries", 1, 10**6))
def test_idempotent_retries_write_every_record_once_in_order(dev, topic, seed):
    faults = Faults(seed, rate=0.3)
    http = Http(dev.api_url, transport=faults)
    sent = {}
    with Producer({"linger.ms": 2, "batch.size": 300, "retry.backoff.ms": 1}, http=http) as p:
        for i in range(600):
            p.produce(topic, f"r{i:04d}", key=f"k{i % 13}")
            sent.setdefault(partition_for_key(f"k{i % 13}".encode(), 4), []).append(f"r{i:04d}")
    # About 60 batches (300 bytes each), and their retries: both faults strike, whatever the seed.
    assert faults.injected["before"], f"seed {seed}: no 503s injected"
    assert faults.injected["after"], f"seed {seed}: no lost answers injected"
    for partition, values in sent.items():
        stored = [v for _, _, v, _, _ in read_partition(dev, topic, partition)]
        assert stored == values, f"seed {seed}: partition {partition} differs"


class Down(httpx2.BaseTransport):
    """The API answers metadata, and every produce times out."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/batches"):
            raise httpx2.ConnectTimeout("injected: unreachable", request=request)
        return self.inner.handle_request(request)


def test_records_that_cannot_be_delivered_fail_with_a_kafka_error(dev, topic):
    config = {"delivery.timeout.ms": 300, "retry.backoff.ms": 20, "linger.ms": 0}
    producer = Producer(config, http=Http(dev.api_url, transport=Down()))
    first = producer.produce(topic, "a", partition=0)
    with pytest.raises(RetriableError) as timed_out:
        first.result(10)
    assert timed_out.value.kafka_error.name == "REQUEST_TIMED_OUT"
    queued = [producer.produce(topic, f"q{i}", partition=1) for i in range(3)]
    producer.close(timeout=0)
    for future in queued:
        assert isinstance(future.exception(10), RetriableError)
    assert len(producer) == 0
    with pytest.raises(RuntimeError, match="closed"):
        producer.produce(topic, "late")
