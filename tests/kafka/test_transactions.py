"""Transactions with real clients against `tidelog dev`: transactional producers of
confluent-kafka (librdkafka), kafka-python and aiokafka; read_committed consumers of all three.
Commit, abort, offsets sent to a transaction, fencing by a new instance, abort on timeout, and
the KIP-664 tools' view."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as RdTopicPartition
from kafka.structs import OffsetAndMetadata
from tests.functional.test_produce_api import call

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

PARTITIONS = 3


@pytest.fixture
def topic(dev):
    name = f"tx-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": PARTITIONS})[0] == 201
    return name


def txn_id() -> str:
    return f"txn-{uuid.uuid4().hex[:8]}"


def read_confluent(dev, topic, isolation, expected, wait=15.0):
    consumer = Consumer(
        {
            "bootstrap.servers": dev.bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([RdTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and len(got) < expected:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            got.append(message.value())
    # A little longer: anything past what was expected would be a wrong extra record.
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        message = consumer.poll(0.1)
        if message is not None and not message.error():
            got.append(message.value())
    consumer.close()
    return sorted(got)


def read_kafka_python(dev, topic, isolation):
    consumer = KafkaConsumer(
        bootstrap_servers=dev.bootstrap,
        isolation_level=isolation,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=2500,
    )
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    got = sorted(m.value for m in consumer)
    consumer.close()
    return got


def read_aiokafka(dev, topic, isolation):
    async def read():
        consumer = AIOKafkaConsumer(
            bootstrap_servers=dev.bootstrap,
            isolation_level=isolation,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        consumer.assign([AioTopicPartition(topic, p) for p in range(PARTITIONS)])
        await consumer.seek_to_beginning()
        got = []
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=300)).values():
                got += [r.value for r in records]
        await consumer.stop()
        return sorted(got)

    return asyncio.run(read())


def every_reader_sees(dev, topic, committed, everything):
    assert read_confluent(dev, topic, "read_committed", len(committed)) == sorted(committed)
    assert read_kafka_python(dev, topic, "read_committed") == sorted(committed)
    assert read_aiokafka(dev, topic, "read_committed") == sorted(committed)
    assert read_confluent(dev, topic, "read_uncommitted", len(everything)) == sorted(everything)
    assert read_kafka_python(dev, topic, "read_uncommitted") == sorted(everything)


def test_librdkafka_commits_and_aborts_and_every_client_reads_committed(dev, topic):
    producer = Producer({"bootstrap.servers": dev.bootstrap, "transactional.id": txn_id()})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(12):
        producer.produce(topic, key=str(i).encode(), value=f"c{i}".encode())
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(12):
        producer.produce(topic, key=str(i).encode(), value=f"a{i}".encode())
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, key=b"0", value=b"last")
    producer.commit_transaction(30)
    committed = [f"c{i}".encode() for i in range(12)] + [b"last"]
    every_reader_sees(dev, topic, committed, committed + [f"a{i}".encode() for i in range(12)])


def test_kafka_python_sends_offsets_to_its_transaction(dev, topic):
    group = f"g-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=dev.bootstrap, transactional_id=txn_id())
    producer.init_transactions()
    tp = TopicPartition(topic, 0)
    observer = KafkaConsumer(bootstrap_servers=dev.bootstrap, group_id=group)
    for commit, offset in ((False, 7), (True, 9)):
        producer.begin_transaction()
        producer.send(topic, value=f"v{offset}".encode(), partition=0)
        producer.send_offsets_to_transaction({tp: OffsetAndMetadata(offset, "", -1)}, group)
        assert observer.committed(tp) is None  # pending: invisible until the commit
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
    assert observer.committed(tp) == 9
    observer.close()
    producer.close()
    assert read_kafka_python(dev, topic, "read_committed") == [b"v9"]


def test_aiokafka_transactions_commit_and_abort(dev, topic):
    async def produce():
        producer = AIOKafkaProducer(bootstrap_servers=dev.bootstrap, transactional_id=txn_id())
        await producer.start()
        async with producer.transaction():
            for i in range(5):
                await producer.send(topic, value=f"c{i}".encode(), partition=i % PARTITIONS)
        await producer.begin_transaction()
        for i in range(5):
            await producer.send(topic, value=f"a{i}".encode(), partition=i % PARTITIONS)
        await producer.abort_transaction()
        await producer.stop()

    asyncio.run(produce())
    committed = [f"c{i}".encode() for i in range(5)]
    every_reader_sees(dev, topic, committed, committed + [f"a{i}".encode() for i in range(5)])


def test_a_new_instance_fences_the_old_one_and_aborts_its_transaction(dev, topic):
    tid = txn_id()
    zombie = Producer({"bootstrap.servers": dev.bootstrap, "transactional.id": tid})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie", partition=0)
    zombie.flush(30)
    successor = Producer({"bootstrap.servers": dev.bootstrap, "transactional.id": tid})
    successor.init_transactions(30)  # fences the zombie, aborting its open transaction
    with pytest.raises(KafkaException) as failed:
        zombie.commit_transaction(30)
    assert failed.value.args[0].fatal()
    successor.begin_transaction()
    successor.produce(topic, value=b"successor", partition=0)
    successor.commit_transaction(30)
    assert read_kafka_python(dev, topic, "read_committed") == [b"successor"]


def test_a_transaction_past_its_timeout_is_aborted(dev, topic):
    producer = Producer(
        {
            "bootstrap.servers": dev.bootstrap,
            "transactional.id": txn_id(),
            "transaction.timeout.ms": 1000,
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"too slow", partition=0)
    producer.flush(30)
    time.sleep(3)  # the agent's sweep (every 0.5 s here) aborts it and fences the producer
    with pytest.raises(KafkaException):
        producer.commit_transaction(30)
    assert read_kafka_python(dev, topic, "read_committed") == []
    assert read_kafka_python(dev, topic, "read_uncommitted") == [b"too slow"]


def test_kip_664_tools_list_and_describe_an_open_transaction(dev, topic):
    from kafka.admin import KafkaAdminClient

    tid = txn_id()
    producer = Producer({"bootstrap.servers": dev.bootstrap, "transactional.id": tid})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=1)
    producer.flush(30)
    admin = KafkaAdminClient(bootstrap_servers=dev.bootstrap)
    try:
        listed = [
            t for ts in admin.list_transactions(state_filters=["Ongoing"]).values() for t in ts
        ]
        (mine,) = [t for t in listed if t.transactional_id == tid]
        (described,) = admin.describe_transactions([tid]).values()
        assert described.state.value == "Ongoing"
        assert described.producer_id == mine.producer_id
        assert described.topic_partitions == {TopicPartition(topic, 1)}
        assert described.transaction_start_time_ms > 0
        states = admin.describe_producers([TopicPartition(topic, 1)])
        (state,) = next(iter(states.values())).active_producers
        assert (state.producer_id, state.current_transaction_start_offset) == (mine.producer_id, 0)
        producer.commit_transaction(30)
        (described,) = admin.describe_transactions([tid]).values()
        assert described.state.value == "CompleteCommit"
    finally:
        admin.close()


def test_kafka_python_and_aiokafka_are_fenced_and_timed_out_as_librdkafka_is(dev, topic):
    from kafka.errors import KafkaError

    tid = txn_id()
    zombie = KafkaProducer(bootstrap_servers=dev.bootstrap, transactional_id=tid)
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send(topic, value=b"kp-zombie", partition=0)
    zombie.flush()

    async def successor():
        producer = AIOKafkaProducer(bootstrap_servers=dev.bootstrap, transactional_id=tid)
        await producer.start()  # fences the kafka-python instance, aborting its transaction
        async with producer.transaction():
            await producer.send(topic, value=b"aio-successor", partition=0)
        await producer.stop()

    asyncio.run(successor())
    with pytest.raises(KafkaError):
        zombie.commit_transaction()
    zombie.close(1)
    slow = KafkaProducer(
        bootstrap_servers=dev.bootstrap, transactional_id=txn_id(), transaction_timeout_ms=1000
    )
    slow.init_transactions()
    slow.begin_transaction()
    slow.send(topic, value=b"kp-too-slow", partition=1)
    slow.flush()
    time.sleep(3)  # aborted by the agent's sweep, and fenced
    with pytest.raises(KafkaError):
        slow.commit_transaction()
    slow.close(1)
    assert read_kafka_python(dev, topic, "read_committed") == [b"aio-successor"]
