"""The HTTP producer's partition counts under a failing API: a count it knows stays in use
while a refresh fails, and a first lookup is tried again for up to max.block.ms, as Kafka's
producer does with its metadata. (A chaos run found a send refused at once when the five-minute
refresh met a storage fault.)"""

from __future__ import annotations

import time

import pytest

from tidelog.client import Producer
from tidelog.errors import InvalidRequestError, RetriableError

TOPIC = {"name": "t", "topic_id": "00000000-0000-0000-0000-000000000001", "configs": {}}


class FlakyApi:
    """Answers a topic's description with ``partitions`` after ``failures`` refusals."""

    def __init__(self, failures: int, partitions: int = 3, error: Exception | None = None):
        self.failures, self.partitions, self.calls = failures, partitions, 0
        self.error = error or RetriableError("injected fault before GetItem topics/t")

    def get(self, path: str, **params: str) -> dict:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return {**TOPIC, "partitions": self.partitions}

    def close(self) -> None:
        pass


def producer(api: FlakyApi, **config: int) -> Producer:
    return Producer({"url": "http://127.0.0.1:1", **config}, http=api)  # type: ignore[arg-type]


def test_a_failed_refresh_keeps_the_known_count_and_backs_off():
    api = FlakyApi(failures=0)
    p = producer(api, metadata_max_age_ms=0, retry_backoff_ms=60_000)
    try:
        assert p._partition_count("t") == 3
        api.failures = api.calls + 1  # the next lookup fails
        assert p._partition_count("t") == 3  # refused, the known count kept
        calls = api.calls
        assert p._partition_count("t") == 3  # within the backoff: not asked again
        assert api.calls == calls
    finally:
        p.close(0)


def test_a_first_lookup_is_retried_until_it_succeeds():
    api = FlakyApi(failures=3)
    p = producer(api, retry_backoff_ms=10, max_block_ms=5_000)
    try:
        assert p._partition_count("t") == 3
        assert api.calls == 4
    finally:
        p.close(0)


def test_a_first_lookup_gives_up_after_max_block_ms():
    api = FlakyApi(failures=10**6)
    p = producer(api, retry_backoff_ms=10, max_block_ms=200)
    try:
        started = time.monotonic()
        with pytest.raises(RetriableError):
            p._partition_count("t")
        assert 0.15 <= time.monotonic() - started < 5
    finally:
        p.close(0)


def test_an_unknown_topic_is_refused_at_once():
    missing = InvalidRequestError(
        "topic 't' does not exist", kafka_error="UNKNOWN_TOPIC_OR_PARTITION"
    )
    api = FlakyApi(failures=1, error=missing)
    p = producer(api, retry_backoff_ms=10, max_block_ms=5_000)
    try:
        with pytest.raises(InvalidRequestError):
            p._partition_count("t")
        assert api.calls == 1
    finally:
        p.close(0)
