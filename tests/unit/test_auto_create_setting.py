"""auto.create.topics.enable and num.partitions: read from the deployment's environment, off
unless set, and what the produce path and Metadata do with them (runtime.topic_or_create)."""

from __future__ import annotations

import threading
import time

import pytest

from tidelog import runtime
from tidelog.log.topics import InvalidTopicError, TopicCache, Topics, UnknownTopicError
from tidelog.settings import ConfigurationError, Settings
from tidelog.storage.memory import MemoryMetadataStore

ENV = {"TIDELOG_TABLE": "t", "TIDELOG_BUCKET": "b"}


def test_it_is_off_with_one_partition_unless_the_deployment_says_otherwise():
    settings = Settings.from_env(ENV)
    assert (settings.auto_create_topics, settings.num_partitions) == (False, 1)
    on = Settings.from_env(
        {**ENV, "TIDELOG_AUTO_CREATE_TOPICS": "true", "TIDELOG_NUM_PARTITIONS": "6"}
    )
    assert (on.auto_create_topics, on.num_partitions) == (True, 6)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TIDELOG_AUTO_CREATE_TOPICS", "yes"),
        ("TIDELOG_NUM_PARTITIONS", "0"),
        ("TIDELOG_NUM_PARTITIONS", "many"),
    ],
)
def test_a_bad_value_is_a_clear_error_at_cold_start(name, value):
    with pytest.raises(ConfigurationError, match=name):
        Settings.from_env({**ENV, name: value})


@pytest.fixture
def topics(monkeypatch):
    store = MemoryMetadataStore()
    topics = Topics(store, lambda: 42)
    monkeypatch.setattr(runtime, "topics", lambda: topics)
    cache = TopicCache(topics, ttl_s=0, clock_s=time.monotonic)
    monkeypatch.setattr(runtime, "topic_cache", lambda: cache)

    def allow(on: bool, partitions: int = 1) -> None:
        settings = Settings("t", "b", auto_create_topics=on, num_partitions=partitions)
        monkeypatch.setattr(runtime, "settings", lambda: settings)

    topics.allow = allow  # type: ignore[attr-defined]
    return topics


def test_an_unknown_topic_is_created_only_where_the_cluster_and_the_caller_allow(topics):
    topics.allow(False)
    with pytest.raises(UnknownTopicError):
        runtime.topic_or_create("fresh")
    topics.allow(True, partitions=3)
    with pytest.raises(UnknownTopicError):
        runtime.topic_or_create("fresh", create=False)
    created = runtime.topic_or_create("fresh")
    assert created.partitions == 3
    assert runtime.topic_or_create("fresh").topic_id == created.topic_id


def test_a_name_createtopics_refuses_is_refused_either_way(topics):
    for on in (False, True):
        topics.allow(on)
        with pytest.raises(InvalidTopicError):
            runtime.topic_or_create("no/slashes")


def test_agents_racing_to_create_a_topic_all_answer_with_the_one_that_won():
    store = MemoryMetadataStore()
    start = threading.Barrier(8)
    found = []

    def create() -> None:
        start.wait()
        found.append(Topics(store, lambda: 42).create_if_absent("raced", 2).topic_id)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 8
    assert len(set(found)) == 1
