"""`tidelog agent` as its own process beside `tidelog dev`'s: agents share nothing but the
cluster's table and bucket, so what one acknowledges, every other serves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest
from kafka.admin import KafkaAdminClient
from tests.functional.test_produce_api import call
from tests.support import devserver
from tests.support.dynamodb_local import free_port

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


@pytest.fixture
def second_agent(dev):
    port = free_port()
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - lives with the process
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": dev.aws_url,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "TIDELOG_STAGING_DIR": tempfile.mkdtemp(prefix="agent-staging-"),
        **devserver.FAST_GROUPS,  # the group bounds are each agent's own, as each broker's
    }
    env.pop("TIDELOG_TABLE", None)
    env.pop("TIDELOG_BUCKET", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "tidelog.cli", "agent", "--kafka-port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    deadline = time.monotonic() + 30
    while "Kafka on" not in _output(log):
        assert process.poll() is None, _output(log)
        assert time.monotonic() < deadline, _output(log)
        time.sleep(0.1)
    yield f"127.0.0.1:{port}"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0, _output(log)


def _output(log) -> str:
    log.seek(0)
    return log.read()


def test_what_one_agent_acknowledges_another_serves(dev, second_agent):
    topic = f"agents-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": topic, "partitions": 2})[0] == 201
    producer = KafkaProducer(bootstrap_servers=second_agent, enable_idempotence=True)
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
        bootstrap_servers=second_agent,
        group_id="across",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
        session_timeout_ms=2000,
        heartbeat_interval_ms=200,
    )
    assert len(list(member)) == 10
    member.commit()
    member.close()
    admin = KafkaAdminClient(bootstrap_servers=dev.bootstrap)
    committed = admin.list_group_offsets({"across": None})["across"]
    admin.close()
    assert sorted(o.offset for o in committed.values()) == [5, 5]


def test_an_agent_names_what_it_needs_when_the_cluster_is_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "TIDELOG_"))}
    env.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_DEFAULT_REGION="us-east-1")
    env["AWS_ENDPOINT_URL_CLOUDFORMATION"] = "http://127.0.0.1:9"  # nothing listens: no AWS call
    result = subprocess.run(
        [sys.executable, "-m", "tidelog.cli", "agent", "--cluster", "nowhere", "--kafka-port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "no tidelog stack named 'nowhere'" in result.stderr
