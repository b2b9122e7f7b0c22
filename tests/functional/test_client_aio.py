"""The asyncio twins against `tidelog dev`, in aiokafka's shape, and the conditional append
(tidelog's own extra) from both."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest

from tidelog.client import Admin, Producer, TopicPartition
from tidelog.client.aio import AIOConsumer, AIOProducer
from tidelog.errors import ConflictError, InvalidRequestError


def make_topic(dev, partitions=2):
    name = f"aio-{uuid.uuid4().hex[:10]}"
    with Admin(dev.api_url) as admin:
        admin.create_topic(name, partitions)
    return name


FAST = {"session_timeout_ms": 6_000, "heartbeat_interval_ms": 200, "fetch_max_wait_ms": 200}


def test_produce_and_consume_as_a_group_in_asyncio(dev):
    topic, group = make_topic(dev), f"aio-{uuid.uuid4().hex[:8]}"
    loop_thread: list[threading.Thread] = []

    class Listener:
        def __init__(self):
            self.calls = []

        async def on_partitions_revoked(self, revoked):
            loop_thread.append(threading.current_thread())
            self.calls.append(("revoked", sorted(tp.partition for tp in revoked)))

        def on_partitions_assigned(self, assigned):  # a plain method does as well
            self.calls.append(("assigned", sorted(tp.partition for tp in assigned)))

    async def main():
        async with AIOProducer({"url": dev.api_url}, linger_ms=5) as producer:
            first = await producer.send_and_wait(topic, b"v0", key=b"k", headers=[("h", b"1")])
            futures = [await producer.send(topic, f"v{i}", key="k") for i in range(1, 10)]
            assert await producer.flush(10) == 0
            offsets = [(await f).offset for f in futures]
        assert offsets == list(range(first.offset + 1, first.offset + 10)), "one key, in order"

        listener = Listener()
        async with AIOConsumer(
            config={"url": dev.api_url}, group_id=group, auto_offset_reset="earliest", **FAST
        ) as consumer:
            consumer.subscribe([topic], listener=listener)
            seen = []
            async for record in consumer:
                seen.append(record)
                if len(seen) == 10:
                    break
            assert [r.value for r in seen] == [f"v{i}".encode() for i in range(10)]
            assert seen[0].headers == (("h", b"1"),)
            await consumer.commit()
            tp = TopicPartition(topic, first.partition)
            assert await consumer.committed(tp) == 10
            assert await consumer.position(tp) == 10

            await consumer.seek_to_beginning(tp)
            batch = await consumer.getmany(tp, timeout_ms=5_000, max_records=4)
            assert [r.offset for r in batch[tp]] == [0, 1, 2, 3]
            consumer.seek(tp, 8)
            assert [r.offset for r in (await consumer.getmany(timeout_ms=5_000))[tp]] == [8, 9]
            assert consumer.assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        return listener

    listener = asyncio.run(main())
    assert listener.calls == [("assigned", [0, 1]), ("revoked", [0, 1])]
    assert loop_thread[0].name == "MainThread", "a coroutine listener runs on the event loop"


def test_a_queued_call_that_fails_raises_at_the_next_await(dev):
    topic = make_topic(dev)

    async def main():
        async with AIOConsumer(config={"url": dev.api_url}) as consumer:
            consumer.assign([TopicPartition(topic, 0, 0)])
            consumer.seek(TopicPartition(topic, 1), 0)  # not assigned
            with pytest.raises(InvalidRequestError, match="not assigned"):
                await consumer.getmany(timeout_ms=100)
            assert await consumer.getmany(timeout_ms=100) == {}

    asyncio.run(main())


def test_a_conditional_append_writes_only_at_the_expected_end(dev):
    topic = make_topic(dev, partitions=1)
    with Producer({"url": dev.api_url}) as producer:
        written = producer.append(topic, 0, [b"a", ("k", "b")], expected_offset=0)
        assert [(m.partition, m.offset) for m in written] == [(0, 0), (0, 1)]
        with pytest.raises(ConflictError) as refused:
            producer.append(topic, 0, [b"again"], expected_offset=0)  # a retry, say
        assert refused.value.http_status == 412
        assert refused.value.details["high_watermark"] == 2

    async def main():
        async with AIOProducer({"url": dev.api_url}) as producer:
            (third,) = await producer.append(topic, 0, [b"c"], expected_offset=2)
            return third.offset

    assert asyncio.run(main()) == 2
    with Admin(dev.api_url) as admin:
        assert admin.describe_topic(topic).offsets[0].high_watermark == 3
