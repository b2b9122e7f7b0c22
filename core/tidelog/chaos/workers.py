"""The chaos run's clients, each a process of its own (so the nemesis can kill one), recording
every operation in its own history file (tidelog.chaos.history).

    python -m tidelog.chaos.workers ROLE --name NAME --history FILE --topic T --bootstrap B ...

Roles: ``rdkafka-producer`` (confluent-kafka: librdkafka, idempotent, at its defaults),
``kafka-python-producer`` (idempotent), ``http-producer`` (tidelog.client over the HTTP API),
``assign-consumer`` (librdkafka, every partition from the start) and ``group-consumer``
(librdkafka, subscribed, committing after processing each poll; ``--protocol`` classic or
KIP-848's consumer protocol); and the transactional ones,
``txn-producer``, ``txn-reader`` and ``committed-consumer`` (tidelog.chaos.txnworkers).
SIGTERM ends a worker: a producer flushes what it has queued first. What a producer never heard
about stays an unfinished ``invoke``, which the checker counts as unknown.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tidelog.chaos.history import HistoryWriter

KEYS = 20
REQUEST_TIMEOUT_MS = 5000  # a paused agent is paused for longer than this
FLUSH_S = 30.0


class Worker:
    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.history = HistoryWriter(Path(options.history), options.name)
        self.stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: self.stopping.set())

    @property
    def servers(self) -> str:
        return str(self.options.bootstrap)


# Producers -----------------------------------------------------------------------------------


def produce_steadily(
    worker: Worker, send: Callable[[str, str], None], poll: Callable[[], object]
) -> int:
    """Send ``rate`` records a second until told to stop; the number sent."""
    sent = 0
    start = time.monotonic()
    rate = worker.options.rate
    while not worker.stopping.is_set():
        due = int((time.monotonic() - start) * rate)
        while sent < due and not worker.stopping.is_set():
            value = f"{worker.options.name}-{sent}"
            worker.history.record("invoke", "send", value=value)
            send(value, f"key-{sent % KEYS}")
            sent += 1
        poll()
    return sent


def rdkafka_producer(worker: Worker) -> None:
    from confluent_kafka import KafkaError, Producer  # noqa: PLC0415 - extra: chaos

    fatal = threading.Event()

    def on_error(error: KafkaError) -> None:
        if error.fatal():
            worker.history.record("info", "fatal", error=str(error))
            fatal.set()
            worker.stopping.set()

    producer = Producer(
        {
            "bootstrap.servers": worker.servers,
            "enable.idempotence": True,
            "linger.ms": 5,
            "request.timeout.ms": REQUEST_TIMEOUT_MS,
            # message.timeout.ms stays librdkafka's 5 minutes: a message timing out makes
            # librdkafka start a new epoch and send again, as new, what other partitions hold
            # unacknowledged, which can write it twice whatever the broker (librdkafka issue
            # 4953). Within the default, a timeout would itself be a 5-minute outage.
            "error_cb": on_error,
        }
    )

    def report(error: KafkaError | None, message: Any) -> None:
        value = message.value().decode()
        if error is None:
            # No offset when the agent answered DUPLICATE_SEQUENCE_NUMBER: stored, offset
            # unknown (-1 in the history, as the HTTP producer reports it).
            partition, offset = message.partition(), message.offset()
            offset = -1 if offset is None else offset
            worker.history.record("ok", "send", value=value, partition=partition, offset=offset)
        else:
            # librdkafka does not say whether a failed message was persisted: unknown.
            worker.history.record("info", "send", value=value, error=str(error))

    def send(value: str, key: str) -> None:
        while True:
            try:
                producer.produce(worker.options.topic, key=key, value=value, on_delivery=report)
                return
            except BufferError:
                producer.poll(0.05)

    produce_steadily(worker, send, lambda: producer.poll(0.005))
    if not fatal.is_set():
        producer.flush(FLUSH_S)


def kafka_python_producer(worker: Worker) -> None:
    from kafka import KafkaProducer  # noqa: PLC0415 - extra: chaos

    producer = KafkaProducer(
        bootstrap_servers=worker.servers.split(","),
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
    )

    def send(value: str, key: str) -> None:
        future = producer.send(worker.options.topic, key=key.encode(), value=value.encode())
        future.add_callback(
            lambda meta: worker.history.record(
                "ok", "send", value=value, partition=meta.partition, offset=meta.offset
            )
        )
        future.add_errback(
            lambda exc: worker.history.record("info", "send", value=value, error=repr(exc))
        )

    produce_steadily(worker, send, lambda: time.sleep(0.005))
    producer.flush(FLUSH_S)
    producer.close(5)


def http_producer(worker: Worker) -> None:
    from tidelog.client import Producer  # noqa: PLC0415 - extra: client
    from tidelog.errors import TidelogError  # noqa: PLC0415

    producer = Producer(
        {"url": worker.options.api, "linger.ms": 5, "request.timeout.ms": REQUEST_TIMEOUT_MS}
    )

    def send(value: str, key: str) -> None:
        def report(error: TidelogError | None, meta: Any) -> None:
            if error is None:
                worker.history.record(
                    "ok", "send", value=value, partition=meta.partition, offset=meta.offset
                )
            else:
                worker.history.record("info", "send", value=value, error=error.kafka_error.name)

        try:
            producer.produce(worker.options.topic, value=value, key=key, on_delivery=report)
        except Exception as exc:  # noqa: BLE001 - refused before anything was sent: certain
            worker.history.record("fail", "send", value=value, error=repr(exc))

    produce_steadily(worker, send, lambda: time.sleep(0.005))
    producer.flush(FLUSH_S)
    producer.close(5)


# Consumers -----------------------------------------------------------------------------------


def _records(messages: Sequence[Any]) -> list[list[Any]]:
    return [
        [m.partition(), m.offset(), m.value().decode()]
        for m in messages
        if m.error() is None and m.value() is not None
    ]


def assign_consumer(worker: Worker) -> None:
    from confluent_kafka import Consumer, TopicPartition  # noqa: PLC0415 - extra: chaos

    consumer = Consumer(
        {
            "bootstrap.servers": worker.servers,
            "group.id": f"{worker.options.name}-unused",  # assign only: no group is joined
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    partitions = range(worker.options.partitions)
    consumer.assign([TopicPartition(worker.options.topic, p, 0) for p in partitions])
    worker.history.record(
        "ok", "assign", partitions=list(partitions), **{"from": dict.fromkeys(partitions, 0)}
    )
    while not worker.stopping.is_set():
        records = _records(consumer.consume(500, 0.5))
        if records:
            worker.history.record("ok", "poll", records=records)
    consumer.close()


def group_consumer(worker: Worker) -> None:
    from confluent_kafka import Consumer, KafkaException  # noqa: PLC0415 - extra: chaos

    group = worker.options.group
    # Classic members set their own session; the coordinator sets a consumer member's.
    protocol: dict[str, Any] = (
        {"group.protocol": "consumer"}
        if worker.options.protocol == "consumer"
        else {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}
    )
    consumer = Consumer(
        {
            "bootstrap.servers": worker.servers,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **protocol,
        }
    )

    def assigned(_: Any, partitions: list[Any]) -> None:
        worker.history.record("ok", "assign", partitions=sorted(p.partition for p in partitions))

    consumer.subscribe([worker.options.topic], on_assign=assigned)
    while not worker.stopping.is_set():
        records = _records(consumer.consume(500, 0.5))
        if not records:
            continue
        worker.history.record("ok", "poll", records=records, group=group)
        # Processed: commit where this member now stands.
        worker.history.record("invoke", "commit")
        try:
            committed = consumer.commit(asynchronous=False)
        except KafkaException as exc:
            worker.history.record("info", "commit", error=str(exc))
            continue
        offsets = {str(tp.partition): tp.offset for tp in committed or [] if tp.error is None}
        worker.history.record("ok", "commit", offsets=offsets)
    consumer.close()


ROLES: dict[str, Callable[[Worker], None]] = {
    "rdkafka-producer": rdkafka_producer,
    "kafka-python-producer": kafka_python_producer,
    "http-producer": http_producer,
    "assign-consumer": assign_consumer,
    "group-consumer": group_consumer,
}


def main(argv: Sequence[str] | None = None) -> None:
    from tidelog.chaos import txnworkers  # noqa: PLC0415

    roles = {
        **ROLES,
        "txn-producer": txnworkers.txn_producer,
        "txn-reader": txnworkers.txn_reader,
        "committed-consumer": txnworkers.committed_consumer,
    }
    parser = argparse.ArgumentParser(prog="python -m tidelog.chaos.workers")
    parser.add_argument("role", choices=sorted(roles))
    parser.add_argument("--name", required=True)
    parser.add_argument("--history", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--bootstrap", default="")
    parser.add_argument("--api", default="")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--group", default="chaos-readers")
    parser.add_argument("--protocol", choices=("classic", "consumer"), default="classic")
    options = parser.parse_args(argv)
    # The client libraries' own warnings, timed, in the worker's log: what a stall looked like.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    worker = Worker(options)
    try:
        roles[options.role](worker)
    finally:
        worker.history.close()


if __name__ == "__main__":
    main()
