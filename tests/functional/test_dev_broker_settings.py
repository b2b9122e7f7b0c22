"""`tidelog dev` configured as test suites configure a Kafka broker: settings under Kafka's
names, from --override and from Kafka's container-image variables, honoured by the agent and
the functions alike, and printed at start."""

from __future__ import annotations

import re
import time
import uuid

import pytest
from tests.support import devserver
from tests.support.kio_wire import Connection


def _banner(dev: devserver.DevProcess) -> str:
    deadline = time.monotonic() + 30
    while "Ctrl-C stops it" not in dev.output():
        assert time.monotonic() < deadline, dev.output()
        time.sleep(0.1)
    return dev.output()


def _metadata(bootstrap: str, topic: str) -> dict:
    with Connection(bootstrap) as conn:
        answer = conn.call(3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": True})
    (found,) = answer["topics"]
    return found


def test_num_partitions_from_kafkas_variable_and_the_authorizer_from_overrides():
    dev = devserver.start(
        "--override",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--override",
        "super.users=User:ops",
        "--override",
        "listeners=PLAINTEXT://:0,SASL_PLAINTEXT://:0",
        env={"KAFKA_NUM_PARTITIONS": "3", "KAFKA_DEFAULT_REPLICATION_FACTOR": "3"},
    )
    try:
        shown = _banner(dev)
        assert "num.partitions=3   (KAFKA_NUM_PARTITIONS)" in shown
        assert "super.users=User:ops   (--override)" in shown
        assert "default.replication.factor=3   (KAFKA_DEFAULT_REPLICATION_FACTOR; accepted" in shown
        ports = dict(re.findall(r"(PLAINTEXT|SASL_PLAINTEXT)://127\.0\.0\.1:(\d+)", shown))
        assert set(ports) == {"PLAINTEXT", "SASL_PLAINTEXT"}
        # Anonymous, with no ACL and no allow.everyone.if.no.acl.found: refused, nothing made.
        topic = f"b-{uuid.uuid4().hex[:8]}"
        refused = _metadata(f"127.0.0.1:{ports['PLAINTEXT']}", topic)
        assert refused["error_code"] == "TOPIC_AUTHORIZATION_FAILED"
        # The functions take the same num.partitions: a topic made on first use over HTTP.
        status, _ = devserver.get_json(
            f"{dev.api_url}/v1/topics/{topic}/records", "POST", b'{"records": [{"value": "v"}]}',
            {"content-type": "application/json"},
        )  # fmt: skip
        assert status == 200
        status, body = devserver.get_json(f"{dev.api_url}/v1/topics/{topic}")
        assert (status, len(body["partitions"])) == (200, 3)
    finally:
        assert dev.stop()[0] == 0


def test_allow_everyone_and_auto_creation_from_overrides_are_honoured_by_the_agent():
    dev = devserver.start(
        "--override",
        "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
        "--override",
        "allow.everyone.if.no.acl.found=true",
        "--override",
        "num.partitions=2",
        env={"TIDELOG_NUM_PARTITIONS": "5"},  # Kafka's name wins over tidelog's variable
    )
    try:
        _banner(dev)
        topic = f"b-{uuid.uuid4().hex[:8]}"
        made = _metadata(dev.bootstrap, topic)  # created on first use, open to everyone
        assert made["error_code"] == "NONE"
        assert len(made["partitions"]) == 2
    finally:
        assert dev.stop()[0] == 0


def test_a_setting_tidelog_dev_does_not_take_stops_it_with_a_clear_error():
    with pytest.raises(RuntimeError, match=r"--override log\.segment\.bytes: tidelog dev takes"):
        devserver.start("--override", "log.segment.bytes=1024", timeout=20)
