"""Which partition a record goes to, as Kafka's producer decides (seed 000).

- A record that names its partition goes there, if the topic has it.
- A keyed record goes to ``toPositive(murmur2(key)) % numPartitions``: the same key always lands
  in the same partition while the partition count stays the same.
- A record without a key goes to the *sticky* partition (KIP-480, as refined by KIP-794 in Kafka
  3.3): every keyless record goes to one partition until ``batch_size`` bytes have gone there,
  then a new one is drawn at random. Batches fill up, so fewer and larger requests go out, and
  switching by bytes rather than by batch completion keeps the spread even.

:class:`RoundRobinPartitioner` (Kafka's, which ignores keys) and any object with a
``partition(topic, key, value, num_partitions)`` method plug in through :func:`select_partition`.
"""

from __future__ import annotations

import random
import struct
import threading
from collections.abc import Callable
from typing import Protocol

from tidelog.errors import NotFoundError

SEED = 0x9747B28C
M = 0x5BD1E995
MASK32 = 0xFFFFFFFF
DEFAULT_BATCH_SIZE = 16384


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: MurmurHash2, 32-bit, seed 0x9747b28c, as a signed int."""
    length = len(data)
    h = (SEED ^ length) & MASK32
    blocks = length >> 2
    if blocks:
        for word in struct.unpack_from(f"<{blocks}I", data):
            k = (word * M) & MASK32
            k ^= k >> 24
            h = ((h * M) & MASK32) ^ ((k * M) & MASK32)
    tail = length & 3
    if tail:
        index = blocks << 2
        if tail == 3:
            h ^= data[index + 2] << 16
        if tail >= 2:
            h ^= data[index + 1] << 8
        h ^= data[index]
        h = (h * M) & MASK32
    h ^= h >> 13
    h = (h * M) & MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: clears the sign bit (not ``abs``: see seed 000)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    if num_partitions < 1:
        raise ValueError(f"a topic has at least one partition, not {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


class Partitioner(Protocol):
    def partition(
        self, topic: str, key: bytes | None, value: bytes | None, num_partitions: int
    ) -> int: ...


class DefaultPartitioner:
    """Kafka's default since 3.3: keyed records by hash, keyless ones sticky (KIP-794).

    ``on_append`` must be told how many bytes went to the sticky partition; after
    ``batch_size`` of them the next keyless record starts a new sticky partition. ``ignore_keys``
    is Kafka's ``partitioner.ignore.keys``. ``random_int`` draws the next partition (injected so
    tests and simulations are deterministic).
    """

    def __init__(
        self,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        ignore_keys: bool = False,
        random_int: Callable[[int], int] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.batch_size = batch_size
        self.ignore_keys = ignore_keys
        self._random_int = random_int or random.SystemRandom().randrange
        self._sticky: dict[str, list[int]] = {}  # topic -> [partition, bytes produced]
        self._lock = threading.Lock()

    def partition(
        self, topic: str, key: bytes | None, value: bytes | None, num_partitions: int
    ) -> int:
        if key is not None and not self.ignore_keys:
            return partition_for_key(key, num_partitions)
        with self._lock:
            state = self._sticky.get(topic)
            if state is None or state[0] >= num_partitions:
                state = self._sticky[topic] = [self._random_int(num_partitions), 0]
            return state[0]

    def on_append(self, topic: str, partition: int, size_bytes: int) -> None:
        """Count bytes appended to ``partition``; switch once the sticky one is full."""
        with self._lock:
            state = self._sticky.get(topic)
            if state is None or state[0] != partition:
                return
            state[1] += size_bytes
            if state[1] >= self.batch_size:
                del self._sticky[topic]


class RoundRobinPartitioner:
    """Kafka's RoundRobinPartitioner: every record, keyed or not, to the next partition."""

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}
        self._lock = threading.Lock()

    def partition(
        self, topic: str, key: bytes | None, value: bytes | None, num_partitions: int
    ) -> int:
        with self._lock:
            counter = self._counters.get(topic, 0)
            self._counters[topic] = counter + 1
        return to_positive(counter) % num_partitions


def select_partition(
    partitioner: Partitioner,
    topic: str,
    key: bytes | None,
    value: bytes | None,
    num_partitions: int,
    *,
    explicit: int | None = None,
) -> int:
    """The partition for one record: ``explicit`` if given (and it exists), else the
    partitioner's choice, which must exist too."""
    if explicit is not None:
        chosen = explicit
    else:
        chosen = partitioner.partition(topic, key, value, num_partitions)
    if not 0 <= chosen < num_partitions:
        raise NotFoundError(
            f"Invalid partition given with record: {chosen} is not in the range "
            f"[0...{num_partitions}].",
            kafka_error="UNKNOWN_TOPIC_OR_PARTITION",
        )
    return chosen
