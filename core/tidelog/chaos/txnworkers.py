"""The chaos run's transactional clients (librdkafka), on a topic of their own.

``txn-producer``: one transaction after another, each of a few records over the topic's
partitions, committed or (one in four) written and then aborted on purpose. Each is a ``txn``
operation: ``invoke`` with its ``values`` and the outcome it intends, then ``ok`` with the
``outcome``
that certainly happened (``commit``, or ``abort``: asked for, or after a failed commit that
librdkafka could abort), or ``info`` when it cannot know (a fatal error, a kill: the
transaction may have committed). After a fatal error the producer starts again under the same
transactional id, fencing what is left of the old one.

``txn-reader``: a transactional producer with a read_committed consumer over the same topic,
as a consume-transform-produce service has: each transaction writes its records, flushes
them, then polls the topic and records what it read (``reads``) with its outcome. A
read_committed consumer can never see the transaction it is in: its own records must not be
among its reads.

``committed-consumer``: every partition from the start, read_committed, recording each poll
as ``txn-poll``.
"""

from __future__ import annotations

import random
import time
from typing import Any

from tidelog.chaos.workers import REQUEST_TIMEOUT_MS, Worker

RECORDS = (1, 5)  # records a transaction
ABORT_ONE_IN = 4
TXN_TIMEOUT_S = 60.0


def txn_producer(worker: Worker) -> None:
    from confluent_kafka import KafkaException, Producer  # noqa: PLC0415 - extra: chaos

    rng = random.Random(worker.options.name)  # noqa: S311 - a workload's choices
    topic = worker.options.topic

    def fresh() -> Any:
        producer = Producer(
            {
                "bootstrap.servers": worker.servers,
                "transactional.id": f"chaos-{worker.options.name}",
                "linger.ms": 5,
                "request.timeout.ms": REQUEST_TIMEOUT_MS,
                "transaction.timeout.ms": 30_000,
            }
        )
        producer.init_transactions(TXN_TIMEOUT_S)
        return producer

    producer = fresh()
    number = 0
    pace = 1 / max(worker.options.rate, 0.1)
    while not worker.stopping.is_set():
        name = f"{worker.options.name}-t{number}"
        number += 1
        values = [f"{name}-{i}" for i in range(rng.randint(*RECORDS))]
        intent = "abort" if rng.randrange(ABORT_ONE_IN) == 0 else "commit"
        worker.history.record("invoke", "txn", txn=name, values=values, intent=intent)
        try:
            producer.begin_transaction()
            for value in values:
                partition = rng.randrange(worker.options.partitions)
                producer.produce(topic, value=value, partition=partition)
            if intent == "commit":
                producer.commit_transaction(TXN_TIMEOUT_S)
            else:
                # Written first, so that the abort has records to hide: librdkafka drops what
                # it has not sent yet.
                producer.flush(TXN_TIMEOUT_S)
                producer.abort_transaction(TXN_TIMEOUT_S)
            worker.history.record("ok", "txn", txn=name, outcome=intent)
        except KafkaException as exc:
            error = exc.args[0]
            if error.txn_requires_abort():
                try:
                    producer.abort_transaction(TXN_TIMEOUT_S)
                    worker.history.record("ok", "txn", txn=name, outcome="abort", error=str(error))
                    continue
                except KafkaException as again:
                    error = again.args[0]
            # Fatal, or retriable past its time: whether it committed is not known.
            worker.history.record("info", "txn", txn=name, error=str(error))
            producer = fresh()
        time.sleep(pace)


def committed_consumer(worker: Worker) -> None:
    from confluent_kafka import Consumer, TopicPartition  # noqa: PLC0415 - extra: chaos

    consumer = Consumer(
        {
            "bootstrap.servers": worker.servers,
            "group.id": f"{worker.options.name}-unused",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    partitions = range(worker.options.partitions)
    consumer.assign([TopicPartition(worker.options.topic, p, 0) for p in partitions])
    while not worker.stopping.is_set():
        records = [
            [m.partition(), m.offset(), value.decode()]
            for m in consumer.consume(500, 0.5)
            if m.error() is None and (value := m.value()) is not None
        ]
        if records:
            worker.history.record("ok", "txn-poll", records=records)
    consumer.close()


def txn_reader(worker: Worker) -> None:
    from confluent_kafka import OFFSET_END, Consumer, KafkaException, TopicPartition  # noqa: PLC0415

    rng = random.Random(worker.options.name)  # noqa: S311 - a workload's choices
    topic = worker.options.topic
    consumer = Consumer(
        {
            "bootstrap.servers": worker.servers,
            "group.id": f"{worker.options.name}-unused",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign(
        [TopicPartition(topic, p, OFFSET_END) for p in range(worker.options.partitions)]
    )

    def fresh() -> Any:
        from confluent_kafka import Producer  # noqa: PLC0415

        producer = Producer(
            {
                "bootstrap.servers": worker.servers,
                "transactional.id": f"chaos-{worker.options.name}",
                "request.timeout.ms": REQUEST_TIMEOUT_MS,
                "transaction.timeout.ms": 30_000,
            }
        )
        producer.init_transactions(TXN_TIMEOUT_S)
        return producer

    producer = fresh()
    number = 0
    while not worker.stopping.is_set():
        name = f"{worker.options.name}-t{number}"
        number += 1
        values = [f"{name}-{i}" for i in range(rng.randint(*RECORDS))]
        worker.history.record("invoke", "txn", txn=name, values=values, intent="commit")
        try:
            producer.begin_transaction()
            for value in values:
                producer.produce(
                    topic, value=value, partition=rng.randrange(worker.options.partitions)
                )
            producer.flush(TXN_TIMEOUT_S)  # written, not yet committed: invisible to reads
            reads = [
                [m.partition(), m.offset(), data.decode()]
                for m in consumer.consume(200, 0.3)
                if m.error() is None and (data := m.value()) is not None
            ]
            producer.commit_transaction(TXN_TIMEOUT_S)
            worker.history.record("ok", "txn", txn=name, outcome="commit", reads=reads)
        except KafkaException as exc:
            worker.history.record("info", "txn", txn=name, error=str(exc.args[0]))
            producer = fresh()
        time.sleep(0.1)
    consumer.close()
