"""One worker of an exactly-once consume-transform-produce pipeline, as Kafka's documentation
writes it with librdkafka: it owns one input partition, reads it read_committed from the
group's committed offset, and in one transaction per poll writes each record transformed to
the same output partition and commits the input offsets. Killed at any point, its successor
(same transactional id) fences it, aborts what it left open, and resumes from what committed.

    python -m tests.support.eos_worker BOOTSTRAP INPUT OUTPUT PARTITION GROUP

Each transaction takes a little while between its writes and its commit (the work it stands
for), so a kill often lands inside one.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def main(bootstrap: str, source: str, sink: str, partition: int, group: str) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"{group}-{partition}"}
    )
    producer.init_transactions(60)
    (start,) = consumer.committed([TopicPartition(source, partition)], timeout=60)
    consumer.assign([TopicPartition(source, partition, max(start.offset, 0))])
    while True:
        messages = [m for m in consumer.consume(10, 0.5) if not m.error()]
        if not messages:
            continue
        producer.begin_transaction()
        for message in messages:
            producer.produce(
                sink, key=message.key(), value=message.value() + b"!", partition=partition
            )
        time.sleep(0.05)
        next_offset = TopicPartition(source, partition, messages[-1].offset() + 1)
        producer.send_offsets_to_transaction([next_offset], consumer.consumer_group_metadata(), 60)
        try:
            producer.commit_transaction(60)
        except KafkaException as exc:
            if exc.args[0].txn_requires_abort():
                producer.abort_transaction(60)
                consumer.seek(TopicPartition(source, partition, messages[0].offset()))
                continue
            raise


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
