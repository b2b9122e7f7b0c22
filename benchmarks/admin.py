"""The admin surface Kafka's tools call, over `tidelog dev`'s agent: what a topic created on
first use costs its first message, and each admin API's latency against a Metadata request
(the cheapest call a client makes), all through the clients' own admin APIs.

First messages: a new librdkafka producer sends one message, either to a topic that exists or
to one that does not (auto-created by its Metadata request); the two alternate. Admin calls:
kafka-python's KafkaAdminClient, one client, each call repeated on a fresh 6-partition topic
holding 600 records. Both run twice: on the embedded emulator, and with every S3 and DynamoDB
call taking as long as on AWS (the `aws-latency` profile), where calls that touch many
partitions at once show whether they overlap.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from tests.support import devserver

from benchmarks.report import Section
from kafka import KafkaProducer, TopicPartition

FIRST_MESSAGES = 15
ADMIN_REPEATS = 15
PARTITIONS = 6


PROFILES = {"emulator": {}, "AWS latencies": {"TIDELOG_FAULTS": "aws-latency"}}


def run(progress: Any = print) -> Section:
    section = Section(
        "Kafka's admin surface: topics created on first use, and each admin API",
        f"`tidelog dev`'s agent. First message: a new librdkafka producer's first delivery, to "
        f"a topic that exists or to one its Metadata request creates ({FIRST_MESSAGES} of each, "
        f"alternating; medians). Admin calls: kafka-python's KafkaAdminClient, the median of "
        f"{ADMIN_REPEATS}, each on a {PARTITIONS}-partition topic; the ratio is to Metadata. "
        "Each on the emulator, then with AWS's latencies simulated.",
        ("measurement", *(f"{name}, median (ratio)" for name in PROFILES)),
    )
    columns = []
    for name, environ in PROFILES.items():
        progress(f"  {name}: starting tidelog dev")
        columns.append(_measure(environ, progress))
    for label in columns[0]:
        section.rows.append(
            (label, *(f"{c[label][0]:.1f} ms ({c[label][1]:.2f}x)" for c in columns))
        )
    section.notes.append(
        "A first message to a new topic pays one conditional PutItem for the topic item "
        "within the producer's Metadata round trip; Kafka answers LEADER_NOT_AVAILABLE first "
        "and the client asks again after its backoff, tidelog answers in full at once."
    )
    section.notes.append(
        "DeleteRecords moves each partition's head by its own compare-and-set, 16 at a time: "
        "with AWS's latencies 6 partitions cost under twice what one does (the emulator, "
        "locked, serves them one after another)."
    )
    return section


def _measure(environ: dict[str, str], progress: Any) -> dict[str, tuple[float, float]]:
    """Each measurement's median in ms, and its ratio to its baseline."""
    dev = devserver.start(env=environ)
    admin = None
    try:
        existing = f"bench-admin-{uuid.uuid4().hex[:6]}"
        admin = KafkaAdminClient(bootstrap_servers=dev.bootstrap)
        admin.create_topics([NewTopic(existing, 1, 1)])
        progress("  first messages, to an existing topic and to new ones")
        to_existing, to_new = [], []
        for _ in range(FIRST_MESSAGES):
            to_existing.append(_first_delivery(dev.bootstrap, existing))
            to_new.append(_first_delivery(dev.bootstrap, f"bench-new-{uuid.uuid4().hex[:8]}"))
        old, new = statistics.median(to_existing), statistics.median(to_new)
        progress("  admin calls")
        return {
            "first message, existing topic": (old, 1.0),
            "first message, topic created on first use": (new, new / old),
            **_admin_calls(dev.bootstrap, admin),
        }
    finally:
        if admin is not None:
            admin.close()
        dev.stop()


def _first_delivery(bootstrap: str, topic: str) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    done: list[float] = []
    start = time.perf_counter()
    producer.produce(topic, b"first", on_delivery=lambda err, msg: done.append(time.perf_counter()))
    producer.flush(30)
    if not done:
        raise RuntimeError(f"no delivery to {topic}")
    return (done[0] - start) * 1000


def _admin_calls(bootstrap: str, admin: KafkaAdminClient) -> dict[str, tuple[float, float]]:
    def fresh() -> str:
        name = f"bench-adm-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(name, PARTITIONS, 1)])
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        for i in range(600):
            producer.send(name, value=b"x" * 100, partition=i % PARTITIONS)
        producer.flush()
        producer.close()
        return name

    calls: dict[str, Callable[[str], object]] = {
        "Metadata (one topic)": lambda t: admin.describe_topics([t]),
        "CreateTopics (6 partitions)": lambda t: admin.create_topics(
            [NewTopic(f"{t}-c{uuid.uuid4().hex[:4]}", PARTITIONS, 1)]
        ),
        "DescribeConfigs (a topic, all)": lambda t: admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t)], config_filter="all"
        ),
        "IncrementalAlterConfigs (one SET)": lambda t: admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t, configs={"retention.ms": "3600000"})],
            incremental=True,
        ),
        "DeleteRecords (1 partition)": lambda t: admin.delete_records({TopicPartition(t, 0): 10}),
        "DeleteRecords (6 partitions)": lambda t: admin.delete_records(
            {TopicPartition(t, p): 50 for p in range(PARTITIONS)}
        ),
        "DescribeLogDirs (6 partitions, sizes)": lambda t: admin.describe_log_dirs(
            {t: list(range(PARTITIONS))}
        ),
    }
    topics = [fresh() for _ in range(ADMIN_REPEATS)]
    medians = {}
    for label, call in calls.items():
        times = []
        for topic in topics:
            start = time.perf_counter()
            call(topic)
            times.append((time.perf_counter() - start) * 1000)
        medians[label] = statistics.median(times)
    base = medians["Metadata (one topic)"]
    return {label: (ms, ms / base) for label, ms in medians.items()}
