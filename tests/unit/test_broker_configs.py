"""Dynamic broker configs: the cluster's defaults of topic configs (tidelog.log.configs), lived
by wherever topics are read, and the type checks Kafka's DynamicBrokerConfig makes
(tidelog.kafka.broker_configs)."""

from __future__ import annotations

import pytest

from tidelog import runtime
from tidelog.errors import InvalidRequestError
from tidelog.kafka.broker_configs import DYNAMIC, STATIC, static
from tidelog.kafka.node import Node
from tidelog.log import configs, due
from tidelog.log.configs import CLUSTER_DEFAULT
from tidelog.log.topics import Topics
from tidelog.settings import Settings
from tidelog.storage.configs import TTL_MS
from tidelog.storage.memory import MemoryMetadataStore


class Clock:
    now = 1_000_000

    def __call__(self) -> int:
        return self.now


def _topics():
    clock = Clock()
    return Topics(MemoryMetadataStore(), clock), clock


def test_a_topic_lives_by_its_own_value_then_the_clusters_default_then_kafkas():
    topics, _ = _topics()
    own = topics.create("own", 1, {"retention.ms": "1000"})
    plain = topics.create("plain", 1, {})
    topics.broker_configs.alter(CLUSTER_DEFAULT, lambda c: c | {"log.retention.ms": "5000"})
    assert topics.get("own").config("retention.ms") == "1000"
    assert topics.get("plain").config("retention.ms") == "5000"
    assert topics.get("plain").effective_configs["retention.ms"] == "5000"
    assert {t.name: t.config("retention.ms") for t in topics.list()} == {
        "own": "1000",
        "plain": "5000",
    }
    assert plain.config("retention.ms") == "604800000"  # as read before the change
    assert own.cluster_defaults == {}
    topics.broker_configs.alter(CLUSTER_DEFAULT, lambda c: {})
    assert topics.get("plain").config("retention.ms") == "604800000"


def test_the_clusters_defaults_are_never_stored_with_a_topic():
    topics, _ = _topics()
    topics.broker_configs.alter(CLUSTER_DEFAULT, lambda c: c | {"log.segment.bytes": "1024"})
    created = topics.create("t", 1, {})
    assert created.config("segment.bytes") == "1024"
    assert "segment.bytes" not in created.to_item()["configs"]
    assert topics.alter_configs("t", {"retention.ms": "9"}).configs == {"retention.ms": "9"}


def test_another_agents_change_is_lived_by_within_a_second():
    meta, clock = MemoryMetadataStore(), Clock()
    mine, other = Topics(meta, clock), Topics(meta, clock)
    mine.create("t", 1, {})
    assert mine.get("t").config("cleanup.policy") == "delete"
    other.broker_configs.alter(CLUSTER_DEFAULT, lambda c: c | {"log.cleanup.policy": "compact"})
    assert mine.get("t").config("cleanup.policy") == "delete"
    clock.now += TTL_MS
    assert mine.get("t").config("cleanup.policy") == "compact"


def test_a_change_of_the_defaults_has_the_topics_that_live_by_them_visited():
    meta, clock = MemoryMetadataStore(), Clock()
    topics = Topics(meta, clock)
    topics.create("own", 2, {"retention.ms": "1000"})
    plain = topics.create("plain", 2, {})
    before = topics.cluster_defaults()
    topics.broker_configs.alter(CLUSTER_DEFAULT, lambda c: c | {"log.retention.ms": "5000"})
    topics.cluster_defaults_changed(before)
    marked = due.due_marks(meta, clock.now + 60_000)
    assert sorted(marked) == [("plain", plain.topic_id, 0), ("plain", plain.topic_id, 1)]


def test_every_topic_default_is_a_dynamic_broker_config_checked_as_the_topic_config():
    for topic, broker in configs.BROKER_NAMES.items():
        assert DYNAMIC[broker].default == configs.CONFIGS[topic].default
        assert DYNAMIC[broker].kind == configs.CONFIGS[topic].kind
    assert DYNAMIC["log.retention.ms"].check("log.retention.ms", " 3600000 ") == "3600000"
    assert DYNAMIC["log.cleanup.policy"].check("log.cleanup.policy", "delete,compact") == (
        "delete,compact"  # as given, as Kafka keeps it
    )
    with pytest.raises(InvalidRequestError, match="Invalid value soon for configuration"):
        DYNAMIC["log.retention.ms"].check("log.retention.ms", "soon")
    with pytest.raises(InvalidRequestError, match="must be one of"):
        DYNAMIC["compression.type"].check("compression.type", "brotli")


@pytest.mark.parametrize(
    ("name", "value", "kept", "refusal"),
    [
        ("background.threads", "9", "9", None),
        ("background.threads", "x", None, "Not a number of type INT"),
        ("background.threads", "0", None, "Value must be at least 1"),
        ("log.cleaner.threads", "0", "0", None),
        ("log.cleaner.io.max.bytes.per.second", "1.5e6", "1.5e6", None),
        ("log.cleaner.io.max.bytes.per.second", "fast", None, "Not a number of type DOUBLE"),
        ("unclean.leader.election.enable", "TRUE", "true", None),
        ("unclean.leader.election.enable", "yes", None, "either true or false"),
        ("sasl.kerberos.min.time.before.relogin", "58000", "58000", None),
    ],
)
def test_kafkas_other_dynamic_configs_are_checked_by_type(name, value, kept, refusal):
    if refusal is None:
        assert DYNAMIC[name].check(name, value) == kept
    else:
        with pytest.raises(InvalidRequestError, match=refusal):
            DYNAMIC[name].check(name, value)


def test_what_an_agent_describes_as_static_cannot_be_set_dynamically(monkeypatch):
    monkeypatch.setattr(runtime, "settings", lambda: Settings(bucket="b", table="t"))
    described = {str(e["name"]) for e in static(Node(1, "localhost", 9092))}
    assert described <= STATIC
    assert not STATIC & DYNAMIC.keys()
