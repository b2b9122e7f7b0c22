"""Kafka Connect against tidelog as against Kafka: a distributed worker (tests/support/
kafka_connect) keeps its configs, offsets and statuses in compacted topics (it refuses to start
on a config topic that is not compacted), runs source tasks in transactions (exactly-once
source support), and moves a file through a topic into another file with Kafka's own file
connectors. MirrorMaker 2's source connector then copies that topic from the real broker into
tidelog, records and all. A standalone worker (offsets in a local file) runs the same
pipeline."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource
from tests.support import java_clients
from tests.support.kafka_connect import ConnectWorker

LINES = [f"line {n} of the file, {'x' * (n % 17)}" for n in range(300)]
WAIT_S = 90


@pytest.fixture(scope="module")
def built() -> None:
    why = java_clients.missing()
    if why is not None:
        pytest.skip(why)


def connectors(name: str, source: Path, sink: Path) -> dict[str, dict[str, str]]:
    return {
        "file-source": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": str(source),
            "topic": f"{name}-lines",
            "tasks.max": "1",
        },
        "file-sink": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(sink),
            "topics": f"{name}-lines",
            "tasks.max": "1",
        },
    }


def pipeline(bootstrap: str, name: str, scratch: Path, mode: str) -> dict[str, object]:
    """A file through a topic into another file, by one worker in ``mode``; what it made."""
    scratch.mkdir(parents=True, exist_ok=True)
    source, sink = scratch / f"{name}-in.txt", scratch / f"{name}-out.txt"
    source.write_text("".join(f"{line}\n" for line in LINES))
    wanted = connectors(name, source, sink)
    standalone = mode == "standalone"
    worker = ConnectWorker(bootstrap, name, wanted if standalone else None)
    try:
        if not standalone:
            for connector, config in wanted.items():
                worker.create(connector, config)
        deadline = time.monotonic() + WAIT_S
        while not (sink.exists() and len(sink.read_text().splitlines()) >= len(LINES)):
            assert time.monotonic() < deadline, f"the sink wrote too little:\n{worker.log()}"
            for connector in wanted:
                worker.running(connector)  # a failed connector fails the test at once
            time.sleep(0.5)
        assert all(worker.running(connector) for connector in wanted)
        made: dict[str, object] = {
            "connectors": sorted(worker.call("GET", "/connectors")),
            "sink": sink.read_text().splitlines(),
        }
    finally:
        worker.stop()
    if not standalone:
        internal = [f"{name}-{suffix}" for suffix in ("configs", "offsets", "status")]
        made["cleanup"] = cleanup_policies(bootstrap, internal)
        # Exactly-once source: the task's records went in transactions, whose commit markers
        # take offsets of their own past the records'.
        made["in transactions"] = end_offset(bootstrap, f"{name}-lines") > len(LINES)
    return made


def cleanup_policies(bootstrap: str, topics: list[str]) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_configs([ConfigResource("topic", t) for t in topics])
    return {
        resource.name: future.result()["cleanup.policy"].value
        for resource, future in described.items()
    }


def end_offset(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-ends"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


@pytest.mark.parametrize("mode", ["distributed", "standalone"])
def test_a_connect_pipeline_runs_on_tidelog_as_on_kafka(broker, dev, built, tmp_path, mode):
    name = f"connect-{secrets.token_hex(4)}"
    from_kafka = pipeline(broker.bootstrap, name, tmp_path / "kafka", mode)
    assert from_kafka["sink"] == LINES
    if mode == "distributed":
        assert from_kafka["in transactions"]
        assert from_kafka["cleanup"] == dict.fromkeys(
            [f"{name}-configs", f"{name}-offsets", f"{name}-status"], "compact"
        )
    assert pipeline(dev.bootstrap, name, tmp_path / "tidelog", mode) == from_kafka


def test_mirrormaker_copies_a_topic_from_kafka_into_tidelog(broker, dev, built):
    name = f"mirror-{secrets.token_hex(4)}"
    topic = f"{name}-orders"
    produce(broker.bootstrap, topic, LINES)
    worker = ConnectWorker(dev.bootstrap, name)
    try:
        worker.create(
            "mirror-source",
            {
                "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
                "source.cluster.alias": "kafka",
                "target.cluster.alias": "tidelog",
                "source.cluster.bootstrap.servers": broker.bootstrap,
                "target.cluster.bootstrap.servers": dev.bootstrap,
                "topics": topic,
                "replication.factor": "1",
                "sync.topic.acls.enabled": "false",
                "sync.topic.configs.enabled": "true",
                "offset-syncs.topic.replication.factor": "1",
                "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
                "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
                "tasks.max": "1",
            },
        )
        mirrored = consume(dev.bootstrap, f"kafka.{topic}", len(LINES), worker)
    finally:
        worker.stop()
    assert mirrored == LINES


def produce(bootstrap: str, topic: str, lines: list[str]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for line in lines:
        producer.produce(topic, line.encode())
    assert producer.flush(30) == 0


def consume(bootstrap: str, topic: str, count: int, worker: ConnectWorker) -> list[str]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False}
    )
    try:
        deadline = time.monotonic() + WAIT_S
        while topic not in consumer.list_topics(timeout=10).topics:
            assert time.monotonic() < deadline, f"{topic} never appeared:\n{worker.log()}"
            worker.running("mirror-source")
            time.sleep(0.5)
        consumer.assign([TopicPartition(topic, 0, 0)])
        read: list[str] = []
        while len(read) < count:
            assert time.monotonic() < deadline, f"read {len(read)} of {count}:\n{worker.log()}"
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                read.append(message.value().decode())
        return read
    finally:
        consumer.close()
