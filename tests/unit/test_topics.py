"""Topics and configs, with Kafka's rules (TopicTest, LogConfigTest)."""

from __future__ import annotations

import threading

import pytest

from tidelog.errors import ConflictError
from tidelog.log.configs import InvalidConfigError, validate_configs
from tidelog.log.topics import (
    TOPIC_IDS_PK,
    InvalidPartitionsError,
    InvalidTopicError,
    TopicCache,
    TopicExistsError,
    Topics,
    UnknownTopicError,
    UnknownTopicIdError,
    validate_name,
)
from tidelog.storage import Delete
from tidelog.storage.memory import MemoryMetadataStore

# TopicTest.testInvalidTopicNames / testTopicHasCollisionChars-style cases
INVALID = ["", ".", "..", "a" * 250, "foo bar", "foo/bar", "foo:bar", "ü", "a,b", "a\x00"]
VALID = ["valid", "TOPIC", "nAmEs", "ar6", "VaL1d", "_0-9_.", "...", "a" * 249, "a-b.c_d"]


@pytest.mark.parametrize("name", INVALID)
def test_invalid_topic_names(name):
    with pytest.raises(InvalidTopicError) as failure:
        validate_name(name)
    assert failure.value.kafka_error.name == "INVALID_TOPIC_EXCEPTION"


@pytest.mark.parametrize("name", VALID)
def test_valid_topic_names(name):
    assert validate_name(name) == name


@pytest.fixture
def topics():
    return Topics(MemoryMetadataStore(), lambda: 42)


def test_create_describe_list_delete(topics):
    created = topics.create("orders", 3, {"retention.ms": 1000, "cleanup.policy": "delete,compact"})
    assert (created.partitions, created.created_ms) == (3, 42)
    assert created.configs == {"retention.ms": "1000", "cleanup.policy": "compact,delete"}
    assert created.config("segment.bytes") == "1073741824"
    assert topics.get("orders") == created
    assert [t.name for t in topics.list()] == ["orders"]
    with pytest.raises(TopicExistsError, match="already exists"):
        topics.create("orders", 1, {})
    topics.delete("orders")
    with pytest.raises(UnknownTopicError):
        topics.get("orders")
    again = topics.create("orders", 1, {})
    assert again.topic_id != created.topic_id  # a new log, never the old one's


@pytest.mark.parametrize("count", [0, -1, 10_001, True, "3", 1.5])
def test_invalid_partition_counts(topics, count):
    with pytest.raises(InvalidPartitionsError):
        topics.create("t", count, {})


def test_partitions_only_grow(topics):
    topics.create("t", 2, {})
    assert topics.add_partitions("t", 5).partitions == 5
    for count in (5, 4):
        with pytest.raises(ConflictError, match="higher than or equal") as caught:
            topics.add_partitions("t", count)
        assert caught.value.kafka_error.name == "INVALID_PARTITIONS"


@pytest.mark.parametrize(
    "configs",
    [
        {"retention.ms": -2},
        {"retention.ms": "soon"},
        {"cleanup.policy": "forever"},
        {"message.timestamp.type": "Now"},
        {"compression.type": "brotli"},
        {"segment.ms": 0},
        {"unknown.config": "1"},
        {"retention.bytes": True},
        {"max.message.bytes": 2**31},
        {"cleanup.policy": "delete,delete"},
    ],
)
def test_invalid_configs(configs):
    with pytest.raises(InvalidConfigError) as failure:
        validate_configs(configs)
    assert failure.value.kafka_error.name == "INVALID_CONFIG"


def test_alter_sets_and_resets_configs(topics):
    topics.create("t", 1, {"retention.ms": 5})
    changed = topics.alter_configs("t", {"retention.ms": None, "segment.ms": 7})
    assert changed.configs == {"segment.ms": "7"}
    assert changed.config("retention.ms") == "604800000"
    with pytest.raises(InvalidConfigError):
        topics.alter_configs("t", {"nope": None})


def test_concurrent_changes_do_not_overwrite_each_other(topics):
    topics.create("t", 1, {})
    stale = topics.get("t")
    topics.alter_configs("t", {"retention.ms": 1})
    with pytest.raises(ConflictError, match="changed meanwhile"):
        topics._replace(stale, stale)


def test_the_produce_cache_refreshes_for_unknown_partitions_and_after_its_ttl(topics):
    now = [0.0]
    cache = TopicCache(topics, ttl_s=1.0, clock_s=lambda: now[0])
    topics.create("t", 2, {})
    assert cache.get("t").partitions == 2
    topics.add_partitions("t", 4)
    assert cache.get("t").partitions == 2  # within the TTL: the cached metadata
    assert cache.get("t", 3).partitions == 4  # a partition beyond it: refreshed at once
    topics.alter_configs("t", {"retention.ms": 5})
    now[0] = 1.5
    assert cache.get("t").configs == {"retention.ms": "5"}


def test_a_topic_this_agent_changed_is_read_again_at_once(topics):
    cache = TopicCache(topics, ttl_s=3600, clock_s=lambda: 0.0)
    topics.create("t", 2, {})
    assert cache.get("t").partitions == 2
    topics.add_partitions("t", 4)
    cache.forget("t")
    assert cache.get("t").partitions == 4
    topics.alter_configs("t", {"retention.ms": 5})
    assert cache.get("t").configs == {}  # changed elsewhere: within the TTL, the kept one
    cache.forget("t")
    assert cache.get("t").configs == {"retention.ms": "5"}


def test_a_topic_is_found_by_its_id_and_only_its_own(topics):
    now = [0.0]
    cache = TopicCache(topics, ttl_s=1.0, clock_s=lambda: now[0])
    created = topics.create("t", 2, {})
    assert cache.by_id(created.topic_id) == created
    topics.delete("t")
    again = topics.create("t", 1, {})
    now[0] = 2.0  # past the TTL: the name is read anew, and names another topic now
    with pytest.raises(UnknownTopicIdError) as unknown:
        cache.by_id(created.topic_id)
    assert unknown.value.kafka_error.name == "UNKNOWN_TOPIC_ID"
    assert cache.by_id(again.topic_id) == again


def test_a_topic_created_before_id_items_is_found_by_listing_once_a_ttl():
    meta = MemoryMetadataStore()
    topics = Topics(meta, lambda: 42)
    legacy = topics.create("old", 1, {})
    meta.write(Delete(TOPIC_IDS_PK, legacy.topic_id))  # as stored before ids had items
    listed = []
    counting = Topics(meta, lambda: 42)
    counting.list = lambda: listed.append(1) or topics.list()  # type: ignore[method-assign]
    now = [0.0]
    cache = TopicCache(counting, ttl_s=1.0, clock_s=lambda: now[0])
    with pytest.raises(UnknownTopicIdError):
        cache.by_id("00000000-0000-0000-0000-00000000000a")
    with pytest.raises(UnknownTopicIdError):  # not listed again within the TTL
        cache.by_id(legacy.topic_id)
    assert len(listed) == 1
    now[0] = 1.5
    assert cache.by_id(legacy.topic_id) == legacy
    assert cache.by_id(legacy.topic_id) == legacy  # remembered: no listing
    assert len(listed) == 2


def test_deleting_by_id_deletes_that_topic_and_no_other_of_its_name(topics):
    first = topics.create("t", 1, {})
    topics.delete("t")
    second = topics.create("t", 1, {})
    with pytest.raises(UnknownTopicIdError):
        topics.delete_id(first.topic_id)
    assert topics.get("t") == second
    assert topics.delete_id(second.topic_id) == second
    assert topics.name_of(second.topic_id) is None
    with pytest.raises(UnknownTopicError):
        topics.get("t")


def test_an_expired_entry_is_read_again_once_however_many_ask(topics):
    topics.create("t", 2, {})
    now = [0.0]
    reads, reading, release = [], threading.Event(), threading.Event()
    real_get = topics.get

    def slow_get(name):
        reads.append(name)
        reading.set()
        assert release.wait(5)
        return real_get(name)

    cache = TopicCache(topics, ttl_s=1.0, clock_s=lambda: now[0])
    assert cache.get("t").partitions == 2
    topics.add_partitions("t", 3)
    topics.get = slow_get  # type: ignore[method-assign]
    now[0] = 1.5
    first = threading.Thread(target=cache.get, args=("t",))
    first.start()
    assert reading.wait(5)
    assert [cache.get("t").partitions for _ in range(50)] == [2] * 50  # the old entry meanwhile
    release.set()
    first.join(5)
    assert reads == ["t"]  # one read again, not 51
    assert cache.get("t").partitions == 3
    assert cache.get("t", 2).partitions == 3
