"""`tidelog agent` as its own process beside `tidelog dev`'s: agents share nothing but the
cluster's table and bucket, so what one acknowledges, every other serves."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import TopicPartition as RdTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from tests.functional.test_produce_api import call, kafka_python_batch
from tests.support.agents import AgentProcess
from tests.support.kafka_wire import brokers, exchange, leaders
from tests.support.kio_wire import Connection

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from tidelog.kafka.registry import READ_EVERY_MS, SESSION_MS


@pytest.fixture
def second_agent(dev):
    agent = AgentProcess(dev)
    yield agent
    agent.stop()
    # Gone from the dev agent's answers too, which read the registry at most every second:
    # the next test starts with the agents it expects, not one a stale read still lists.
    _until(lambda: agent.node_id not in brokers(dev.bootstrap))


def test_what_one_agent_acknowledges_another_serves(dev, second_agent):
    topic = f"agents-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": topic, "partitions": 2})[0] == 201
    producer = KafkaProducer(bootstrap_servers=second_agent.bootstrap, enable_idempotence=True)
    offsets = [producer.send(topic, value=b"v%d" % i, partition=i % 2).get(10) for i in range(10)]
    producer.close()
    assert [(m.partition, m.offset) for m in offsets][:4] == [(0, 0), (1, 0), (0, 1), (1, 1)]

    consumer = KafkaConsumer(
        bootstrap_servers=dev.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=3000
    )
    consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    got = sorted(m.value for m in consumer)
    consumer.close()
    assert got == sorted(b"v%d" % i for i in range(10))

    # A group coordinated by the second agent: it found the assignment state machine too, and
    # what the group commits there the first agent reads.
    member = KafkaConsumer(
        topic,
        bootstrap_servers=second_agent.bootstrap,
        group_id="across",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
        session_timeout_ms=2000,
        heartbeat_interval_ms=200,
    )
    got, deadline = 0, time.monotonic() + 30
    while got < 10 and time.monotonic() < deadline:  # joining takes a rebalance first
        got += sum(len(records) for records in member.poll(timeout_ms=500).values())
    assert got == 10
    member.commit()
    member.close()
    admin = KafkaAdminClient(bootstrap_servers=dev.bootstrap)
    committed = admin.list_group_offsets({"across": None})["across"]
    admin.close()
    assert sorted(o.offset for o in committed.values()) == [5, 5]


def test_an_agent_will_not_share_a_staging_or_cache_directory_with_a_live_one(
    second_agent, tmp_path
):
    """Recovery on start takes what it finds in staging for a dead process's leftovers: a
    second live process there would take the first one's objects in flight."""
    for setting in ("TIDELOG_STAGING_DIR", "TIDELOG_CACHE_DIR"):
        env = dict(second_agent.env)  # its directory for this setting, a new one for the other
        other = {"TIDELOG_STAGING_DIR", "TIDELOG_CACHE_DIR"} - {setting}
        env.update({name: str(tmp_path / name) for name in other})
        result = subprocess.run(
            [sys.executable, "-m", "tidelog.cli", "agent", "--kafka-port", "0"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert result.returncode == 1, result.stderr
        assert "is in use by another tidelog process" in result.stderr
        assert setting in result.stderr


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--kafka-port", "0"], "no tidelog stack named 'nowhere'"),
        (["--listeners", "SASL_SSL://:0"], "an SSL listener needs a certificate"),
        (
            ["--sasl-enabled-mechanisms", "GSSAPI"],
            "the agent offers SCRAM-SHA-256, SCRAM-SHA-512, PLAIN",
        ),
        (["--listeners", "SSL://:0"], "an SSL listener needs a certificate"),
        (["--ssl-certfile", "agent.pem"], "both --ssl-certfile and --ssl-keyfile"),
    ],
)
def test_an_agent_names_what_it_needs_and_serves_nothing_without_it(args, error):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "TIDELOG_"))}
    env.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_DEFAULT_REGION="us-east-1")
    env["AWS_ENDPOINT_URL_CLOUDFORMATION"] = "http://127.0.0.1:9"  # nothing listens: no AWS call
    result = subprocess.run(
        [sys.executable, "-m", "tidelog.cli", "agent", "--cluster", "nowhere", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert error in result.stderr


def test_an_agent_killed_mid_produce_loses_no_acknowledged_record(dev):
    topic = f"killed-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": topic, "partitions": 3})[0] == 201
    doomed = AgentProcess(dev)
    producer = KafkaProducer(
        bootstrap_servers=doomed.bootstrap,
        acks="all",
        linger_ms=2,
        retries=0,
        request_timeout_ms=5000,
        delivery_timeout_ms=5100,  # what is waiting for the killed agent fails, not hangs
        max_block_ms=5000,
    )
    acknowledged, sent = [], 0
    deadline = time.monotonic() + 30
    while len(acknowledged) < 100:  # acknowledged ones come in while more are in flight
        assert time.monotonic() < deadline
        future = producer.send(topic, value=b"r%d" % sent)
        future.add_callback(lambda meta, value=b"r%d" % sent: acknowledged.append((meta, value)))
        sent += 1
        time.sleep(0.002)
    doomed.process.kill()  # SIGKILL: no shutdown, requests in flight cut off
    doomed.process.wait(10)
    killed = time.monotonic()
    producer.close(timeout=10)
    kept = list(acknowledged)

    # It stops heartbeating and leaves every agent's answers within its session; until then
    # clients are sent to it for the partitions it led, as to a Kafka broker not yet fenced.
    while doomed.node_id in brokers(dev.bootstrap):
        assert time.monotonic() - killed < (SESSION_MS + READ_EVERY_MS) / 1000 + 5
        time.sleep(0.2)
    reader = KafkaConsumer(
        bootstrap_servers=dev.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=3000
    )
    reader.assign([TopicPartition(topic, p) for p in range(3)])
    stored = {(m.partition, m.offset): m.value for m in reader}
    reader.close()
    assert all(stored.get((meta.partition, meta.offset)) == value for meta, value in kept)
    assert len(stored) >= len(kept)


def test_an_idempotent_retry_through_another_agent_is_answered_with_the_first_offsets(
    dev, second_agent
):
    """The same batch (producer id, epoch, sequence) sent to one agent and then, as a retry
    after a lost answer, to another: stored once, and both answers name the same offset."""
    topic = f"retry-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": topic, "partitions": 1})[0] == 201
    init = InitProducerIdRequest[4](
        transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1
    )
    producer = exchange(dev.bootstrap, init, InitProducerIdResponse, 4)
    batch = kafka_python_batch(3, producer.producer_id, producer.producer_epoch, 0)
    produce = ProduceRequest[9](
        transactional_id=None,
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)
                ],
            )
        ],
    )
    first = exchange(dev.bootstrap, produce, ProduceResponse, 9)
    retried = exchange(second_agent.bootstrap, produce, ProduceResponse, 9)
    answers = [r.responses[0].partition_responses[0] for r in (first, retried)]
    assert [(a.error_code, a.base_offset) for a in answers] == [(0, 0), (0, 0)]
    status, body = call(dev, "GET", f"/v1/topics/{topic}/partitions/0/records?offset=0")
    assert status == 200
    assert [r["value"] for r in body["records"]] == ["value 0", "value 1", "value 2"]


PARTITIONS = 24  # random node ids: one agent leads all with probability 2 * 2**-24


def test_agents_find_each_other_and_share_the_partitions_and_zones_keep_to_themselves(dev):
    topic = f"spread-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": topic, "partitions": PARTITIONS})[0] == 201
    (first,) = brokers(dev.bootstrap)
    zoned = AgentProcess(dev, "--zone", "use1-az9")
    try:
        everyone = {first, zoned.node_id}
        _until(lambda: set(brokers(dev.bootstrap)) == everyone)  # each agent reads it anew
        for bootstrap in (dev.bootstrap, zoned.bootstrap):
            assert set(brokers(bootstrap)) == everyone
            assert set(brokers(bootstrap, "app,tidelog_az=use1-az9")) == {zoned.node_id}
            assert set(brokers(bootstrap, "app,tidelog_az=use1-az1")) == everyone
        led = leaders(dev.bootstrap, topic)
        assert led == leaders(zoned.bootstrap, topic)
        assert set(led.values()) == everyone, "both agents lead some"

        # A producer sent to both agents by the leaders: every record stored, read back whole.
        producer = KafkaProducer(bootstrap_servers=dev.bootstrap, linger_ms=5)
        sent = [producer.send(topic, value=b"s%d" % i, partition=i % PARTITIONS) for i in range(80)]
        producer.flush(30)
        assert sorted(f.get(1).partition for f in sent) == sorted(i % PARTITIONS for i in range(80))
        producer.close()
        consumer = KafkaConsumer(
            bootstrap_servers=zoned.bootstrap,
            client_id="reader,tidelog_az=use1-az9",
            auto_offset_reset="earliest",
            consumer_timeout_ms=3000,
        )
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        assert sorted(m.value for m in consumer) == sorted(b"s%d" % i for i in range(80))
        consumer.close()
    finally:
        zoned.stop()
    # A stopped agent leaves the registry at once: the next read no longer lists it.
    _until(lambda: set(brokers(dev.bootstrap)) == {first})


def _until(condition) -> None:
    """Within the time an agent's list of live agents may be stale."""
    deadline = time.monotonic() + READ_EVERY_MS / 1000 + 2
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _epochs(bootstrap: str, topic: str) -> dict[int, tuple[int, int]]:
    """Each partition's (leader, leader epoch), as Metadata v12 shows them."""
    with Connection(bootstrap) as conn:
        answer = conn.call(3, 12, {"topics": [{"name": topic}]})
    (found,) = answer["topics"]
    return {p["partition_index"]: (p["leader_id"], p["leader_epoch"]) for p in found["partitions"]}


def test_leader_epochs_rise_as_agents_come_and_go_and_a_consumer_follows_its_leaders(dev):
    """librdkafka takes Metadata whose epoch is not above the one it holds as stale: a leader
    shown again under an old epoch would strand its fetches on a dead agent (librdkafka#5593).
    Agents join, stop and die under a librdkafka consumer; every epoch ever shown stands for
    one leader per partition, epochs only rise, and the consumer reads every record."""
    topic = f"epochs-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": topic, "partitions": PARTITIONS})[0] == 201
    consumer = RdConsumer(
        {
            "bootstrap.servers": dev.bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 1000,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([RdTopicPartition(topic, p) for p in range(PARTITIONS)])
    producer = KafkaProducer(bootstrap_servers=dev.bootstrap, linger_ms=2)
    shown: dict[tuple[int, int], int] = {}  # (epoch, partition) -> leader
    last_epoch = [-1]
    read: set[bytes] = set()
    sent: list[bytes] = []

    def observe(*bootstraps: str) -> int:
        """Every partition's leader and epoch from each agent named: the lowest epoch any of
        them shows."""
        lowest = None
        for bootstrap in bootstraps:
            epochs = set()
            for p, (leader, e) in _epochs(bootstrap, topic).items():
                assert shown.setdefault((e, p), leader) == leader, f"epoch {e} with two leaders"
                epochs.add(e)
            assert len(epochs) == 1, "one agent shows one epoch for every partition"
            lowest = min(epochs | ({lowest} if lowest is not None else set()))
        assert lowest is not None
        return lowest

    def traffic(count: int) -> None:
        for _ in range(count):
            value = b"e%d" % len(sent)
            producer.send(topic, value=value, partition=len(sent) % PARTITIONS)
            sent.append(value)
        producer.flush(30)
        deadline = time.monotonic() + 30
        while len(read) < len(sent):
            assert time.monotonic() < deadline, f"{len(sent) - len(read)} records never read"
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                read.add(message.value())

    def rises(*bootstraps: str) -> None:
        """Until every agent named shows an epoch above the last one seen everywhere."""

        def higher() -> bool:
            epoch = observe(*bootstraps)
            if epoch > last_epoch[0]:
                last_epoch[0] = epoch
                return True
            return False

        _until(higher)

    try:
        traffic(48)
        rises(dev.bootstrap)
        joined = AgentProcess(dev)
        rises(dev.bootstrap, joined.bootstrap)
        traffic(48)
        joined.stop()  # leaves at once
        rises(dev.bootstrap)
        traffic(48)
        doomed = AgentProcess(dev)
        rises(dev.bootstrap, doomed.bootstrap)
        traffic(48)
        doomed.process.kill()  # expires after its session
        doomed.process.wait(10)
        deadline = time.monotonic() + (SESSION_MS + READ_EVERY_MS) / 1000 + 5
        while doomed.node_id in brokers(dev.bootstrap):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        rises(dev.bootstrap)
        traffic(48)  # the partitions it led are read from their new leader
        assert read == set(sent)
    finally:
        producer.close()
        consumer.close()


def test_a_position_with_an_epoch_is_validated_across_a_leader_change_and_reading_goes_on(dev):
    """A committed offset may carry a leader epoch (a consumer moved from another cluster):
    librdkafka then validates its position with OffsetForLeaderEpoch whenever the leader
    epoch rises, and must find it still in the log, not truncated (KIP-320)."""
    topic = f"validate-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": topic, "partitions": 1})[0] == 201
    producer = KafkaProducer(bootstrap_servers=dev.bootstrap)
    for i in range(10):
        producer.send(topic, value=b"v%d" % i, partition=0)
    producer.flush(30)
    group = f"g-{topic}"
    settings = {
        "bootstrap.servers": dev.bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "topic.metadata.refresh.interval.ms": 500,
        "debug": "fetch",
    }
    committer = RdConsumer(settings)
    committer.commit(offsets=[RdTopicPartition(topic, 0, 4, leader_epoch=7)], asynchronous=False)
    (committed,) = committer.committed([RdTopicPartition(topic, 0)], timeout=10)
    assert (committed.offset, committed.leader_epoch) == (4, 7)
    committer.close()

    validated: list[str] = []
    consumer = RdConsumer({**settings, "logger": _Lines(validated), "auto.offset.reset": "error"})
    consumer.assign([RdTopicPartition(topic, 0)])  # from the committed offset, epoch 7
    values = _read(consumer, 6)
    other = AgentProcess(dev)  # the leader epoch rises: librdkafka validates its position
    try:
        deadline = time.monotonic() + 20
        while not any("querying broker for epoch validation" in line for line in validated):
            assert time.monotonic() < deadline, "librdkafka never validated its position"
            assert consumer.poll(0.2) is None  # nothing new to read meanwhile
        for i in range(10, 14):
            producer.send(topic, value=b"v%d" % i, partition=0)
        producer.flush(30)
        values += _read(consumer, 4)
    finally:
        other.stop()
        consumer.close()
        producer.close()
    assert values == [b"v%d" % i for i in range(4, 14)]


class _Lines:
    """A logger for librdkafka that keeps what it logs."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def log(self, level: int, message: str, *args: object) -> None:
        self.lines.append(message % args if args else message)

    def __getattr__(self, name: str):
        return lambda message, *args, **kwargs: self.log(0, message, *args)


def _read(consumer, count: int) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < count:
        assert time.monotonic() < deadline, f"read {len(values)} of {count}"
        message = consumer.poll(0.2)
        if message is not None:
            assert message.error() is None, message.error()
            values.append(message.value())
    return values
