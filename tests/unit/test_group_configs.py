"""A group's own configs (tidelog.groups.configs): checked as Kafka checks them, stored apart
from the group under a compare-and-set, and lived by at the group's next heartbeat."""

from __future__ import annotations

import re

import pytest
from tests.support.groups import consumer_stack

from tidelog.groups.configs import (
    HEARTBEAT,
    PK,
    SESSION,
    Bounds,
    applied,
    check_name,
    validated,
)
from tidelog.groups.consumer.heartbeat import Config, Heartbeat
from tidelog.log.configs import InvalidConfigError
from tidelog.storage.configs import TTL_MS, ConfigItems
from tidelog.storage.memory import MemoryMetadataStore

BROKER = Config(session_timeout_ms=45_000, heartbeat_interval_ms=5_000)
BOUNDS = Bounds()
MIN_SESSION, MAX_SESSION = "consumer.min.session.timeout.ms", "consumer.max.session.timeout.ms"
MIN_BEAT, MAX_BEAT = "consumer.min.heartbeat.interval.ms", "consumer.max.heartbeat.interval.ms"


def test_a_group_config_within_the_bounds_is_kept_as_a_whole_number():
    assert validated({SESSION: " 50000"}, BROKER, BOUNDS) == {SESSION: "50000"}
    assert validated({HEARTBEAT: "15000", SESSION: "60000"}, BROKER, BOUNDS) == {
        HEARTBEAT: "15000",
        SESSION: "60000",
    }
    assert validated({}, BROKER, BOUNDS) == {}


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({SESSION: "44999"}, f"{SESSION} must be greater than or equal to group.{MIN_SESSION}"),
        ({SESSION: "60001"}, f"{SESSION} must be less than or equal to group.{MAX_SESSION}"),
        ({HEARTBEAT: "4999"}, f"{HEARTBEAT} must be greater than or equal to group.{MIN_BEAT}"),
        ({HEARTBEAT: "15001"}, f"{HEARTBEAT} must be less than or equal to group.{MAX_BEAT}"),
        ({SESSION: "-1"}, f"{SESSION} must be greater than or equal to"),
        ({SESSION: "soon"}, f"Invalid value soon for configuration {SESSION}: Not a number"),
        ({SESSION: "4.5e4"}, "Not a number of type INT"),
        ({"no.such": "1"}, "Unknown group config name: no.such"),
        ({"share.auto.offset.reset": "earliest"}, "share groups (KIP-932) are not served"),
        ({"streams.num.standby.replicas": "1"}, "streams groups (KIP-1071) are not served"),
        ({"consumer.assignment.interval.ms": "5"}, "no interval between assignments"),
    ],
)
def test_a_group_config_kafka_refuses_is_refused_with_kafkas_words(configs, message):
    with pytest.raises(InvalidConfigError, match=re.escape(message)):
        validated(configs, BROKER, BOUNDS)


def test_the_session_must_outlast_the_heartbeat_whichever_of_them_the_group_sets():
    bounds = Bounds(min_session_timeout_ms=1_000, min_heartbeat_interval_ms=500)
    with pytest.raises(InvalidConfigError, match=f"{SESSION} must be greater than {HEARTBEAT}"):
        validated({SESSION: "5000"}, BROKER, bounds)  # the broker's heartbeat is 5 s
    with pytest.raises(InvalidConfigError, match="must be greater than"):
        validated({HEARTBEAT: "10000", SESSION: "10000"}, BROKER, bounds)
    assert validated({HEARTBEAT: "1000", SESSION: "5000"}, BROKER, bounds)


def test_the_names_kafka_knows_but_tidelog_does_not_serve_say_why():
    check_name(SESSION)
    check_name(HEARTBEAT)
    with pytest.raises(
        InvalidConfigError, match=re.escape("Unknown group config name: consumer.session")
    ):
        check_name("consumer.session")
    with pytest.raises(InvalidConfigError, match="share groups"):
        check_name("share.isolation.level")


def test_a_groups_values_replace_the_brokers_and_nothing_else():
    group = applied({SESSION: "50000"}, BROKER)
    assert (group.session_timeout_ms, group.heartbeat_interval_ms) == (50_000, 5_000)
    assert group.assignors == BROKER.assignors
    assert applied({}, BROKER) == BROKER


class Clock:
    now = 0

    def __call__(self) -> int:
        return self.now


def test_configs_are_kept_apart_from_the_group_and_an_empty_set_leaves_no_item():
    meta, clock = MemoryMetadataStore(), Clock()
    store = ConfigItems(meta, PK, clock_ms=clock)
    assert store.get("g") == {}
    store.alter("g", lambda c: c | {SESSION: "50000"})
    store.alter("h", lambda c: c | {HEARTBEAT: "6000"})
    assert store.get("g") == {SESSION: "50000"}
    assert sorted(store.names()) == ["g", "h"]
    store.alter("g", lambda c: {})
    assert store.get("g") == {}
    assert meta.get(PK, "g") is None
    assert store.names() == ["h"]


def test_a_change_made_meanwhile_is_read_again_and_kept():
    """Two alters at once: the one that lost the compare-and-set computes again from what the
    other wrote, so neither change is lost."""
    meta, clock = MemoryMetadataStore(), Clock()
    store = ConfigItems(meta, PK, clock_ms=clock)
    store.alter("g", lambda c: c | {SESSION: "50000"})
    calls = []

    def change(current):
        calls.append(dict(current))
        if len(calls) == 1:  # another writer gets in between this read and this write
            ConfigItems(meta, PK, clock_ms=clock).alter("g", lambda c: c | {HEARTBEAT: "6000"})
        return current | {SESSION: "55000"}

    assert store.alter("g", change) == {SESSION: "55000", HEARTBEAT: "6000"}
    assert calls == [{SESSION: "50000"}, {SESSION: "50000", HEARTBEAT: "6000"}]
    assert store.get("g") == {SESSION: "55000", HEARTBEAT: "6000"}


def test_reads_are_cached_for_a_second_and_a_write_is_seen_at_once_by_its_writer():
    meta, clock = MemoryMetadataStore(), Clock()
    mine, other = ConfigItems(meta, PK, clock_ms=clock), ConfigItems(meta, PK, clock_ms=clock)
    assert mine.cached("g") == {}
    other.alter("g", lambda c: c | {SESSION: "50000"})
    assert mine.cached("g") == {}  # another process's change: within the TTL
    assert other.cached("g") == {SESSION: "50000"}  # the writer's own: at once
    clock.now += TTL_MS
    assert mine.cached("g") == {SESSION: "50000"}


def test_a_group_lives_by_its_own_session_and_tells_members_its_own_interval():
    consumer, _, _, _, clock = consumer_stack(
        Config(session_timeout_ms=10_000, heartbeat_interval_ms=2_000), group_configs=True
    )
    joined = consumer.heartbeat(
        "g", Heartbeat("a", 0, rebalance_timeout_ms=30_000, topics=("t",), owned=frozenset())
    )
    assert consumer.config_of("g").heartbeat_interval_ms == 2_000
    consumer._group_configs.alter("g", lambda c: c | {SESSION: "20000", HEARTBEAT: "4000"})
    assert consumer.config_of("g").heartbeat_interval_ms == 4_000
    assert consumer.config_of("other").heartbeat_interval_ms == 2_000
    clock.now += 15_000  # past the broker's session, within the group's
    assert "a" in consumer.describe("g").members
    consumer.heartbeat("g", Heartbeat("a", joined.epoch, owned=frozenset()))
    clock.now += 20_001
    assert "a" not in consumer.describe("g").members
