"""The client's Admin against `tidelog dev`: topics and offsets as the HTTP API keeps them, and
the API's errors raised as tidelog's tree with their Kafka names."""

from __future__ import annotations

import uuid

import pytest

from tidelog.client import Admin, OffsetAt
from tidelog.errors import ConflictError, InvalidRequestError, NotFoundError


@pytest.fixture
def admin(dev):
    with Admin(dev.api_url) as client:
        yield client


def name() -> str:
    return f"client-{uuid.uuid4().hex[:10]}"


def test_unsigned_against_the_dev_stack(dev, monkeypatch):
    monkeypatch.setenv("TIDELOG_URL", dev.api_url)
    with Admin() as client:
        assert not client.http.endpoint.sign, "a loopback endpoint is tidelog dev: no signing"
        assert client.cluster()["cluster_id"]


def test_a_topics_life(admin):
    topic = name()
    created = admin.create_topic(topic, 3, {"retention.ms": 60_000})
    assert (created.name, created.partitions) == (topic, 3)
    assert created.configs["retention.ms"] == "60000", "Kafka's configs are strings"
    assert topic in [t.name for t in admin.list_topics()]

    altered = admin.alter_configs(topic, {"cleanup.policy": "compact", "retention.ms": None})
    assert altered.configs["cleanup.policy"] == "compact"
    assert altered.configs.get("retention.ms") != "60000", "reset to its default"

    assert admin.add_partitions(topic, 5).partitions == 5
    described = admin.describe_topic(topic)
    assert [p.partition for p in described.offsets] == [0, 1, 2, 3, 4]
    assert all(p.records == 0 for p in described.offsets)

    admin.delete_topic(topic)
    with pytest.raises(NotFoundError) as missing:
        admin.describe_topic(topic)
    assert missing.value.kafka_error.name == "UNKNOWN_TOPIC_OR_PARTITION"


def test_offsets_at_a_time(admin):
    topic = name()
    admin.create_topic(topic, 1)
    records = [{"value": f"v{i}", "timestamp": 1_000 * (i + 1), "partition": 0} for i in range(3)]
    admin.http.post(f"/v1/topics/{topic}/records", {"records": records})
    assert admin.offset_at(topic, 0, "earliest").offset == 0
    assert admin.offset_at(topic, 0, "latest").offset == 3
    assert admin.offset_at(topic, 0, 2_000) == OffsetAt(1, 2_000)
    assert admin.offset_at(topic, 0, 1_500) == OffsetAt(1, 2_000)
    assert admin.offset_at(topic, 0, 9_000) == OffsetAt(-1, -1)


def test_errors_carry_their_kafka_names(admin):
    topic = name()
    admin.create_topic(topic, 1)
    with pytest.raises(ConflictError) as exists:
        admin.create_topic(topic, 1)
    assert exists.value.kafka_error.name == "TOPIC_ALREADY_EXISTS"
    assert exists.value.http_status == 409
    with pytest.raises(InvalidRequestError) as bad:
        admin.create_topic(name(), 0)
    assert bad.value.kafka_error.name in ("INVALID_PARTITIONS", "INVALID_REQUEST")
    assert "partition" in bad.value.message.lower()
    with pytest.raises(ConflictError) as shrink:
        admin.add_partitions(topic, 1)
    assert shrink.value.kafka_error.name == "INVALID_PARTITIONS"
    assert "higher than or equal to the requested 1" in shrink.value.message
