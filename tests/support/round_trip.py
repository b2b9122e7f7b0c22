"""A librdkafka round trip, as the security tests run it over each listener: an idempotent
producer's records, consumed back by a group member with the same settings."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer, Producer


def librdkafka_round_trip(settings: dict[str, Any], topic: str, count: int = 5) -> list[bytes]:
    producer = Producer({**settings, "enable.idempotence": True})
    for i in range(count):
        producer.produce(topic, b"m%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer({**settings, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        while len(got) < count:
            message = consumer.poll(30)
            assert message is not None, f"only {got} consumed"
            assert message.error() is None, message.error()
            got.append(message.value())
    finally:
        consumer.close()
    return got
