"""KIP-848's consumer group protocol with a real client: librdkafka (confluent-kafka) members
with ``group.protocol=consumer``, which run no assignor: the agent's coordinator assigns, in the
assignment state machine, and reconciles each member at its heartbeats.

Members join, leave and are SIGKILLed while a producer writes. Every record produced is
consumed, and no partition is ever owned by two members at once: every member's assign, revoke
and lost callbacks are recorded on one clock and replayed (a killed member's partitions count as
given up the moment it dies, which is when it stops consuming them).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, ConsumerGroupType, Producer
from confluent_kafka.admin import AdminClient
from tests.functional.test_produce_api import call
from tests.kafka.test_consumer_groups import PARTITIONS, Ownership, wait_for


@pytest.fixture
def topic(dev):
    name = f"kip848-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": PARTITIONS})[0] == 201
    return name


def settings(dev, group: str, name: str) -> dict:
    return {
        "bootstrap.servers": dev.bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "client.id": name,
        "auto.offset.reset": "earliest",
        "auto.commit.interval.ms": 1000,
    }


class Member(threading.Thread):
    """A librdkafka consumer of the consumer protocol, polling in a thread of its own."""

    def __init__(self, dev, topic, group, name, ownership, consumed) -> None:
        super().__init__(name=name, daemon=True)
        self.stopping = threading.Event()
        self.consumer = Consumer(settings(dev, group, name))

        def assigned(_, partitions):
            ownership.record(name, "assign", [tp.partition for tp in partitions])

        def revoked(_, partitions):
            ownership.record(name, "revoke", [tp.partition for tp in partitions])

        self.consumer.subscribe([topic], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
        self.consumed = consumed

    def run(self) -> None:
        while not self.stopping.is_set():
            message = self.consumer.poll(0.1)
            if message is not None and not message.error():
                self.consumed.append(message.value())
        self.consumer.close()  # leaves the group (epoch -1)

    def stop(self) -> None:
        self.stopping.set()
        if self.is_alive():
            self.join(30)


WORKER = """
import json, sys
from confluent_kafka import Consumer
settings, topic = json.loads(sys.argv[1]), sys.argv[2]
def say(*line):
    print(json.dumps(line), flush=True)
consumer = Consumer(settings)
consumer.subscribe(
    [topic],
    on_assign=lambda _, ps: say("assign", [tp.partition for tp in ps]),
    on_revoke=lambda _, ps: say("revoke", [tp.partition for tp in ps]),
    on_lost=lambda _, ps: say("revoke", [tp.partition for tp in ps]),
)
while True:
    message = consumer.poll(0.1)
    if message is not None and not message.error():
        say("value", message.value().decode())
"""


class ProcessMember:
    """A member in a process of its own, to be SIGKILLed: no leave, no commit, no goodbye."""

    def __init__(self, dev, topic, group, name, ownership, consumed) -> None:
        self.name, self.ownership = name, ownership
        config = json.dumps(settings(dev, group, name))
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, config, topic],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.reader = threading.Thread(target=self._read, args=(consumed,), daemon=True)
        self.reader.start()

    def _read(self, consumed) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            kind, value = json.loads(line)
            if kind == "value":
                consumed.append(value.encode())
            else:
                self.ownership.record(self.name, kind, value)

    def kill(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self.reader.join(10)
        self.ownership.record(self.name, "revoke", list(self.ownership.owned.get(self.name, ())))


class Writer(threading.Thread):
    """Produces until stopped, never more than ``PENDING`` records unacknowledged: a writer
    that outran the agent would leave a backlog growing for as long as it wrote, and on a
    loaded machine the agent's whole time would go to it, group requests waiting behind.
    No callback of its producer refers back to it: a librdkafka handle left in a reference
    cycle is freed by Python's collector in whatever thread it runs in, and librdkafka aborts
    the process when that is one of its own."""

    PENDING = 50

    def __init__(self, dev, topic) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": dev.bootstrap, "linger.ms": 5})
        self.topic, self.sent, self.stopping = topic, [], threading.Event()
        self.undelivered = -1

    def run(self) -> None:
        i = 0
        while not self.stopping.is_set():
            value = f"v{i}".encode()
            self.producer.produce(self.topic, key=value, value=value)
            self.sent.append(value)
            i += 1
            self.producer.poll(0.005)
            while len(self.producer) >= self.PENDING and not self.stopping.is_set():
                self.producer.poll(0.05)
        self.undelivered = self.producer.flush(120)

    def stop(self) -> list[bytes]:
        """What was produced, every record of it acknowledged."""
        self.stopping.set()
        if self.is_alive():
            self.join(150)
        assert self.undelivered == 0
        return self.sent


def test_members_join_leave_and_crash_while_a_producer_writes(dev, topic):
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    ownership, consumed = Ownership(), []
    writer = Writer(dev, topic)
    members: list[Member] = []
    r3 = None
    try:
        writer.start()
        members.append(Member(dev, topic, group, "r1", ownership, consumed))
        members[0].start()
        wait_for(lambda: ownership.split("r1"), "r1 owns every partition")
        members.append(Member(dev, topic, group, "r2", ownership, consumed))
        members[1].start()
        wait_for(lambda: ownership.split("r1", "r2"), "r1 and r2 share the partitions")
        r3 = ProcessMember(dev, topic, group, "r3", ownership, consumed)
        wait_for(lambda: ownership.split("r1", "r2", "r3"), "r3 joins the split")
        r3.kill()  # its session runs out on the agent; r1 and r2 take its partitions then
        wait_for(lambda: ownership.split("r1", "r2"), "r3's partitions move", timeout=60)
        members.pop().stop()  # r2 leaves
        wait_for(lambda: ownership.split("r1"), "r1 takes r2's partitions")
        sent = writer.stop()
        wait_for(lambda: set(sent) <= set(consumed), "every record is consumed", timeout=60)
    finally:
        if r3 is not None:
            r3.kill()
        writer.stopping.set()
        writer.join(150)
        for member in members:
            member.stop()
    ownership.check()


def test_admin_clients_list_and_describe_a_consumer_group_and_read_its_commits(dev, topic):
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    writer = Writer(dev, topic)
    writer.start()
    time.sleep(0.3)
    sent = writer.stop()
    assert sent
    ownership, consumed = Ownership(), []
    member = Member(dev, topic, group, "d1", ownership, consumed)
    member.start()
    admin = AdminClient({"bootstrap.servers": dev.bootstrap})
    try:
        wait_for(lambda: ownership.split("d1"), "d1 owns every partition")
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result()
        found = {g.group_id: g for g in listed.valid}
        assert found[group].type == ConsumerGroupType.CONSUMER
        classic = admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result()
        assert group not in {g.group_id for g in classic.valid}
        described = admin.describe_consumer_groups([group])[group].result()
        assert described.type == ConsumerGroupType.CONSUMER
        (only,) = described.members
        assert only.client_id == "d1"
        assigned = sorted(tp.partition for tp in only.assignment.topic_partitions)
        assert assigned == list(range(PARTITIONS))
        wait_for(lambda: set(sent) <= set(consumed), "every record is consumed")
    finally:
        member.stop()  # its last commit, carrying its epoch (OffsetCommit v9), then it leaves
    request = ConsumerGroupTopicPartitions(group)
    offsets = admin.list_consumer_group_offsets([request])[group].result().topic_partitions
    assert sum(tp.offset for tp in offsets if tp.offset > 0) == len(sent)
