"""librdkafka as the benchmarks drive it: produce as fast as it takes messages, and read them
all back from the start."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

MESSAGE_BYTES = 1024


def produce_rate(settings: dict[str, str], topic: str, messages: int, partitions: int) -> float:
    """Messages per second: 1 KiB messages round-robin over the partitions, linger 5 ms,
    acks all, until every one is acknowledged."""
    producer = Producer({**settings, "linger.ms": 5, "acks": "all"})
    value = os.urandom(MESSAGE_BYTES // 2).hex().encode()
    failed: list[str] = []

    def on_delivery(error: Any, message: Any) -> None:
        if error is not None:
            failed.append(str(error))

    start = time.perf_counter()
    for i in range(messages):
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.005)
        producer.poll(0)
    producer.flush(300)
    if failed:
        raise RuntimeError(f"{len(failed)} messages failed: {failed[0]}")
    return messages / (time.perf_counter() - start)


def consume_rate(
    settings: dict[str, str], topic: str, messages: int, partitions: int | Sequence[int]
) -> float:
    """Messages per second reading ``messages`` back from the start of the partitions: the
    first ``partitions`` of the topic, or those named."""
    named = range(partitions) if isinstance(partitions, int) else partitions
    consumer = Consumer({**settings, "group.id": f"{topic}-reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in named])
    got, start = 0, time.perf_counter()
    while got < messages:
        for message in consumer.consume(1000, 1.0):
            if message.error() is None:
                got += 1
        if time.perf_counter() - start > 300:
            raise RuntimeError(f"read {got} of {messages} in 300 s")
    consumer.close()
    return got / (time.perf_counter() - start)
