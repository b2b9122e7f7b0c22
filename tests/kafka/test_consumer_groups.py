"""Consumer groups over Kafka's protocol, with real clients, unmodified: kafka-python (eager),
librdkafka (cooperative-sticky) and aiokafka consume as groups through the agent that
`tidelog dev` runs, commit, resume, and hand partitions over as members come and go. No
partition ever has two owners at once: every member's assign and revoke callbacks are recorded
on one clock and replayed.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer
from kafka.admin import KafkaAdminClient
from tests.functional.test_produce_api import call

from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition

PARTITIONS = 6
FAST = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 200}


@pytest.fixture
def topic(dev):
    name = f"grp-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": PARTITIONS})[0] == 201
    return name


def produce(dev, topic, count, start=0):
    producer = KafkaProducer(bootstrap_servers=dev.bootstrap, acks="all")
    for i in range(start, start + count):
        producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    producer.flush()
    producer.close()


class Ownership:
    """Assign and revoke events of every member, on one clock; ``check`` replays them."""

    def __init__(self) -> None:
        self.events: list[tuple[float, str, str, frozenset[int]]] = []
        self.owned: dict[str, set[int]] = {}
        self._lock = threading.Lock()

    def record(self, member: str, event: str, partitions) -> None:
        with self._lock:
            self.events.append((time.monotonic(), member, event, frozenset(partitions)))
            held = self.owned.setdefault(member, set())
            (held.update if event == "assign" else held.difference_update)(partitions)

    def check(self) -> None:
        owner: dict[int, str] = {}
        for _, member, event, partitions in sorted(self.events, key=lambda e: e[0]):
            for p in partitions:
                if event == "assign":
                    assert owner.get(p, member) == member, f"p{p}: {member} and {owner[p]}"
                    owner[p] = member
                elif owner.get(p) == member:
                    del owner[p]

    def split(self, *members: str) -> bool:
        """Do exactly these members, each holding something, hold every partition once?"""
        with self._lock:
            held = [self.owned.get(m, set()) for m in members]
            others = [ps for m, ps in self.owned.items() if m not in members and ps]
            return (
                all(held)
                and not others
                and sorted(p for ps in held for p in ps) == list(range(PARTITIONS))
            )


def consume(consumer: KafkaConsumer, count: int) -> list[bytes]:
    """Values polled until ``count`` came (a group's first poll waits out its join), and then
    anything more that is there: a test of exactly ``count`` sees extras."""
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        got += [r.value for rs in consumer.poll(timeout_ms=500).values() for r in rs]
    got += [r.value for rs in consumer.poll(timeout_ms=500).values() for r in rs]
    return got


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


class KafkaPythonMember(threading.Thread):
    """A kafka-python consumer polling in a thread of its own until told to stop."""

    def __init__(self, dev, topic, group, name, ownership, consumed) -> None:
        super().__init__(name=name, daemon=True)
        self.stopping = threading.Event()
        self.consumer = KafkaConsumer(
            bootstrap_servers=dev.bootstrap,
            group_id=group,
            client_id=name,
            auto_offset_reset="earliest",
            auto_commit_interval_ms=200,
            **FAST,
        )

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                ownership.record(name, "revoke", [tp.partition for tp in revoked])

            def on_partitions_assigned(self, assigned):
                ownership.record(name, "assign", [tp.partition for tp in assigned])

        self.consumer.subscribe([topic], listener=Listener())
        self.consumed = consumed

    def run(self) -> None:
        while not self.stopping.is_set():
            for records in self.consumer.poll(timeout_ms=1000).values():
                self.consumed.extend(r.value for r in records)
        self.consumer.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)


def test_kafka_python_members_share_a_topic_and_hand_it_over_eagerly(dev, topic):
    produce(dev, topic, 60)
    ownership, consumed = Ownership(), []
    members = {}

    def start(name):
        members[name] = KafkaPythonMember(dev, topic, "eager", name, ownership, consumed)
        members[name].start()

    start("c1")
    wait_for(lambda: ownership.split("c1"), "c1 owns every partition")
    start("c2")
    wait_for(lambda: ownership.split("c1", "c2"), "c1 and c2 share the partitions")
    members.pop("c1").stop()  # leaves the group
    wait_for(lambda: ownership.split("c2"), "c2 takes c1's partitions over")
    produce(dev, topic, 60, start=60)
    wait_for(lambda: len(set(consumed)) == 120, "every record is consumed")
    ownership.check()
    # What the group committed, the HTTP API reads: everything consumed, nothing lagging.
    wait_for(
        lambda: (
            sum(o["lag"] for o in call(dev, "GET", "/v1/groups/eager/offsets")[1]["offsets"]) == 0
        ),
        "the committed offsets reach the end of the log",
    )
    described = call(dev, "GET", "/v1/groups/eager")[1]
    assert described["state"] == "Stable"
    assert [m["member_id"].split("-")[0] for m in described["members"]] == ["c2"]
    for member in members.values():
        member.stop()


@pytest.mark.parametrize(
    "protocol",
    [
        {
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
        },
        {"group.protocol": "consumer"},  # KIP-848: the coordinator reconciles, one at a time
    ],
    ids=["cooperative-sticky", "consumer-protocol"],
)
def test_librdkafka_hands_partitions_over_cooperatively(dev, topic, protocol):
    produce(dev, topic, 30)
    ownership, consumed, stopping = Ownership(), [], threading.Event()
    revoked: dict[str, list[frozenset[int]]] = {}
    group = f"coop-{uuid.uuid4().hex[:8]}"

    def member(name):
        consumer = Consumer(
            {
                "bootstrap.servers": dev.bootstrap,
                "group.id": group,
                "client.id": name,
                "auto.offset.reset": "earliest",
                **protocol,
            }
        )

        def on_assign(c, partitions):
            ownership.record(name, "assign", [tp.partition for tp in partitions])

        def on_revoke(c, partitions):
            revoked.setdefault(name, []).append(frozenset(tp.partition for tp in partitions))
            ownership.record(name, "revoke", [tp.partition for tp in partitions])

        consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        while not stopping.is_set():
            message = consumer.poll(0.1)
            if message is not None and not message.error():
                consumed.append(message.value())
        consumer.close()

    first = threading.Thread(target=member, args=("r1",), daemon=True)
    first.start()
    wait_for(lambda: ownership.split("r1"), "r1 owns every partition")
    kept_from = set(ownership.owned["r1"])
    second = threading.Thread(target=member, args=("r2",), daemon=True)
    second.start()
    wait_for(lambda: ownership.split("r1", "r2"), "r1 hands half its partitions to r2", 60)
    ownership.check()
    # Cooperative: r1 gave up only what moved, once, and kept the rest throughout.
    assert len(revoked["r1"]) == 1
    assert revoked["r1"][0] == frozenset(ownership.owned["r2"])
    assert ownership.owned["r1"] == kept_from - revoked["r1"][0]
    wait_for(lambda: len(set(consumed)) == 30, "every record is consumed")
    stopping.set()
    first.join(30)
    second.join(30)


def test_a_group_resumes_from_its_commits_and_admin_tools_read_it(dev, topic):
    produce(dev, topic, 20)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=dev.bootstrap,
        group_id="resume",
        client_id="first",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **FAST,
    )
    assert len(consume(consumer, 20)) == 20
    consumer.commit()
    admin = KafkaAdminClient(bootstrap_servers=dev.bootstrap)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert (listed["resume"]["protocol_type"], listed["resume"]["group_state"]) == (
            "consumer",
            "Stable",
        )
        described = admin.describe_groups(["resume"])["resume"]
        (member,) = described["members"]
        assert (member["client_id"], member["client_host"]) == ("first", "/127.0.0.1")
        assert member["member_id"].startswith("first-")  # as Kafka names members
        assert member["member_metadata"]["topics"] == [topic]
        (assigned,) = member["member_assignment"]["assigned_partitions"]
        assert (assigned["topic"], assigned["partitions"]) == (topic, list(range(PARTITIONS)))
        consumer.close()
        both = admin.list_group_offsets({"resume": None, "nobody": None})
        assert sum(o.offset for o in both["resume"].values()) == 20
        assert both["nobody"] == {}
    finally:
        admin.close()
    produce(dev, topic, 5, start=20)
    again = KafkaConsumer(
        topic,
        bootstrap_servers=dev.bootstrap,
        group_id="resume",
        enable_auto_commit=False,
        **FAST,
    )
    assert sorted(consume(again, 5)) == sorted(f"v{i}".encode() for i in range(20, 25))
    again.close()


def test_a_group_deleted_and_created_again_rebalances_at_once(dev, topic):
    """Its generations count from 1 again: the state machine's execution names carry the
    group's incarnation, or Step Functions would refuse the new group's as duplicates and its
    rebalance would wait a minute for the stall to be noticed."""
    produce(dev, topic, 6)
    group = f"again-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=dev.bootstrap)
    try:
        for _ in range(2):
            consumer = KafkaConsumer(
                topic,
                bootstrap_servers=dev.bootstrap,
                group_id=group,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                **FAST,
            )
            started = time.monotonic()
            assert len(consume(consumer, 6)) == 6
            assert time.monotonic() - started < 20  # not the minute a stalled one takes
            consumer.close()
            admin.delete_groups([group])
    finally:
        admin.close()


def test_aiokafka_consumes_as_a_group_and_commits(dev, topic):
    produce(dev, topic, 12)

    async def scenario():
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=dev.bootstrap,
            group_id="aio",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            **FAST,
        )
        await consumer.start()
        try:
            got = []
            while len(got) < 12:
                batches = await consumer.getmany(timeout_ms=1000)
                got += [r.value for records in batches.values() for r in records]
            await consumer.commit()
            committed = [
                await consumer.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)
            ]
        finally:
            await consumer.stop()
        return got, committed

    got, committed = asyncio.run(scenario())
    assert sorted(got) == sorted(f"v{i}".encode() for i in range(12))
    assert sum(committed) == 12


def test_where_the_http_api_resets_a_group_a_kafka_consumer_resumes(dev, topic):
    produce(dev, topic, 10)
    reset = {"to": "latest", "topics": [topic]}
    assert call(dev, "POST", "/v1/groups/handoff/offsets/reset", reset)[0] == 200
    produce(dev, topic, 4, start=10)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=dev.bootstrap,
        group_id="handoff",
        auto_offset_reset="earliest",  # not used: the group has offsets
        enable_auto_commit=False,
        **FAST,
    )
    assert sorted(consume(consumer, 4)) == [b"v10", b"v11", b"v12", b"v13"]
    consumer.close()


def test_a_pattern_subscription_picks_up_a_topic_created_later(dev):
    consumer = Consumer(
        {
            "bootstrap.servers": dev.bootstrap,
            "group.id": "pattern",
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
            "topic.metadata.refresh.interval.ms": 500,
        }
    )
    consumer.subscribe(["^later-.*"])
    consumer.poll(1)
    name = f"later-{uuid.uuid4().hex[:6]}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": 2})[0] == 201
    produce(dev, name, 6)
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 6 and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            got.append(message.value())
    assert sorted(got) == sorted(f"v{i}".encode() for i in range(6))
    assert sorted(tp.partition for tp in consumer.assignment()) == [0, 1]
    consumer.close()
