"""Partitioning as Kafka's producer does it: vectors from Kafka's and kafka-python's tests."""

from __future__ import annotations

import pytest

from tidelog.errors import NotFoundError
from tidelog.partitioner import (
    DefaultPartitioner,
    RoundRobinPartitioner,
    murmur2,
    partition_for_key,
    select_partition,
    to_positive,
)

# Kafka's UtilsTest.testMurmur2 (Java's signed ints)
MURMUR2 = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]
# kafka-python's test_partitioner: (key, partition of 1000)
KAFKA_PYTHON = [
    (b"", 681),
    (b"a", 524),
    (b"ab", 434),
    (b"abc", 107),
    (b"123456789", 566),
    (b"\x00 ", 742),
]


@pytest.mark.parametrize(("key", "expected"), MURMUR2)
def test_murmur2_matches_java(key, expected):
    assert murmur2(key) == expected


@pytest.mark.parametrize(("key", "expected"), KAFKA_PYTHON)
def test_partition_for_key_matches_kafka_python(key, expected):
    assert partition_for_key(key, 1000) == expected


def test_to_positive_is_not_abs():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5


def test_keyed_records_hash_and_keyless_ones_stick_until_the_batch_is_full():
    draws = iter([3, 1, 1])
    partitioner = DefaultPartitioner(batch_size=100, random_int=lambda n: next(draws))
    assert partitioner.partition("t", b"abc", b"v", 1000) == 107
    assert [partitioner.partition("t", None, b"v", 8) for _ in range(3)] == [3, 3, 3]
    partitioner.on_append("t", 3, 60)
    assert partitioner.partition("t", None, b"v", 8) == 3
    partitioner.on_append("t", 3, 40)  # 100 bytes: the sticky partition is full
    assert partitioner.partition("t", None, b"v", 8) == 1
    partitioner.on_append("t", 5, 1000)  # bytes to another partition do not count
    assert partitioner.partition("t", None, b"v", 8) == 1


def test_sticky_partitions_are_per_topic_and_follow_a_shrunk_topic():
    draws = iter([7, 2, 0])
    partitioner = DefaultPartitioner(random_int=lambda n: next(draws))
    assert partitioner.partition("a", None, None, 8) == 7
    assert partitioner.partition("b", None, None, 8) == 2
    assert partitioner.partition("a", None, None, 4) == 0  # 7 no longer exists


def test_ignore_keys_makes_every_record_sticky():
    partitioner = DefaultPartitioner(ignore_keys=True, random_int=lambda n: 4)
    assert partitioner.partition("t", b"abc", None, 1000) == 4


def test_round_robin_ignores_keys():
    partitioner = RoundRobinPartitioner()
    assert [partitioner.partition("t", b"same", None, 3) for _ in range(5)] == [0, 1, 2, 0, 1]
    assert partitioner.partition("other", b"same", None, 3) == 0


def test_explicit_partitions_are_checked_with_kafkas_error():
    partitioner = DefaultPartitioner()
    assert select_partition(partitioner, "t", b"k", None, 4, explicit=2) == 2
    with pytest.raises(
        NotFoundError,
        match=r"Invalid partition given with record: 4 is not in "
        r"the range \[0\.\.\.4\]\.",
    ) as failure:
        select_partition(partitioner, "t", b"k", None, 4, explicit=4)
    assert failure.value.kafka_error.name == "UNKNOWN_TOPIC_OR_PARTITION"
    with pytest.raises(NotFoundError):
        select_partition(partitioner, "t", None, None, 4, explicit=-1)


def test_custom_partitioners_plug_in():
    class Last:
        def partition(self, topic, key, value, num_partitions):
            return num_partitions - 1

    assert select_partition(Last(), "t", b"k", None, 6) == 5


def test_sticky_spread_is_even_over_many_batches():
    import random

    rng = random.Random(7)
    partitioner = DefaultPartitioner(batch_size=1000, random_int=rng.randrange)
    counts = [0] * 4
    for _ in range(40_000):
        p = partitioner.partition("t", None, b"x" * 10, 4)
        counts[p] += 10
        partitioner.on_append("t", p, 10)
    assert max(counts) / min(counts) < 1.2, counts
