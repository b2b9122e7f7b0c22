"""Kafka Streams against tidelog as against Kafka: a word count with exactly-once v2 and a
state store (tests/referees/clients/.../WordCount.java) counts a known input, stops, and a new
instance with an empty state directory restores its store from the changelog and counts the
rest. Its internal topics and its counts are the same on both; a count over or under the
input's own is a record processed twice or lost, and fails the program itself."""

from __future__ import annotations

import secrets

import pytest
from tests.support import java_clients


def test_a_streams_application_counts_the_same_on_tidelog_as_on_kafka(broker, dev):
    why = java_clients.missing()
    if why is not None:
        pytest.skip(why)
    prefix = f"wordcount-{secrets.token_hex(4)}"
    from_kafka = java_clients.run(broker.bootstrap, prefix, "WordCount")
    assert from_kafka[:2] == ["internal -counts-changelog", "internal -counts-repartition"]
    assert len(from_kafka) == 2 + 8  # every word counted
    assert java_clients.run(dev.bootstrap, prefix, "WordCount") == from_kafka
