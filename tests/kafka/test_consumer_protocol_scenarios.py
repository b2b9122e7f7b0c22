"""The group scenarios of test_consumer_groups, again under KIP-848's protocol (handing over
cooperatively is rerun there, parametrized), and groups that mix the two protocols as Kafka 4
lets them.

- **A mixed group.** kafka-python, which speaks only the classic protocol, creates the group.
  A librdkafka member of the consumer protocol joining it upgrades it to a consumer group, and
  a second kafka-python member joins that as a classic member. Members leave while a producer
  writes. Every acknowledged record is consumed, and no partition is owned twice.
- **Resuming** from the group's commits, and from offsets the HTTP API reset.
- **A pattern subscription** (the consumer protocol's SubscribedTopicRegex) picks up a topic
  created later.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupType
from confluent_kafka.admin import AdminClient
from tests.functional.test_groups_api import told
from tests.functional.test_produce_api import call
from tests.kafka.test_consumer_groups import (
    PARTITIONS,
    KafkaPythonMember,
    Ownership,
    produce,
    wait_for,
)
from tests.kafka.test_consumer_protocol import Member, Writer, settings


@pytest.fixture
def topic(dev):
    name = f"scn-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": PARTITIONS})[0] == 201
    return name


def test_classic_and_consumer_members_share_one_group(dev, topic):
    group = f"mixed-{uuid.uuid4().hex[:8]}"
    ownership, consumed = Ownership(), []
    writer = Writer(dev, topic)
    members: dict[str, KafkaPythonMember | Member] = {}
    admin = AdminClient({"bootstrap.servers": dev.bootstrap})

    def start(member: KafkaPythonMember | Member) -> None:
        members[member.name] = member
        member.start()

    try:
        writer.start()
        start(KafkaPythonMember(dev, topic, group, "k1", ownership, consumed))
        wait_for(lambda: ownership.split("k1"), "k1 owns every partition")
        start(Member(dev, topic, group, "r1", ownership, consumed))  # upgrades the group
        wait_for(lambda: ownership.split("k1", "r1"), "k1 and r1 share the partitions", 60)
        start(KafkaPythonMember(dev, topic, group, "k2", ownership, consumed))
        wait_for(lambda: ownership.split("k1", "r1", "k2"), "k2 joins as a classic member", 60)
        # One consumer group of three (ConsumerGroupDescribe), as each member sees itself.
        three = {name: ownership.owned[name] for name in ("k1", "r1", "k2")}
        wait_for(lambda: described(admin, group) == three, "the group is described so")
        members.pop("k1").stop()  # LeaveGroup
        wait_for(lambda: ownership.split("r1", "k2"), "k1's partitions move", 60)
        members.pop("r1").stop()  # a consumer-protocol member leaves; k2 is left alone
        wait_for(lambda: ownership.split("k2"), "k2 owns every partition", 60)
        sent = writer.stop()
        wait_for(lambda: set(sent) <= set(consumed), "every record is consumed", timeout=60)
    except AssertionError as exc:  # what the members saw, and what the agent logged
        raise AssertionError(f"{exc}\n{ownership.owned}\n{told(dev, group)}") from exc
    finally:
        writer.stopping.set()
        writer.join(150)
        for member in members.values():
            member.stop()
    ownership.check()


def described(admin: AdminClient, group: str) -> dict[str, set[int]]:
    """Each member's partitions, by client id, as ConsumerGroupDescribe tells them."""
    found = admin.describe_consumer_groups([group])[group].result()
    assert found.type == ConsumerGroupType.CONSUMER
    return {
        m.client_id: {tp.partition for tp in m.assignment.topic_partitions} for m in found.members
    }


def poll_values(consumer: Consumer, count: int, timeout: float = 60) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            got.append(message.value())
    return got


def test_a_group_resumes_from_its_commits_and_from_an_http_reset(dev, topic):
    group = f"resume-{uuid.uuid4().hex[:8]}"
    produce(dev, topic, 10)
    first = Consumer({**settings(dev, group, "first"), "enable.auto.commit": False})
    first.subscribe([topic])
    assert sorted(poll_values(first, 10)) == sorted(f"v{i}".encode() for i in range(10))
    first.commit(asynchronous=False)  # under its member epoch (OffsetCommit v9)
    first.close()
    offsets = call(dev, "GET", f"/v1/groups/{group}/offsets")[1]["offsets"]
    assert sum(o["offset"] for o in offsets) == 10
    produce(dev, topic, 4, start=10)
    reset = {"to": "latest", "topics": [topic]}  # skip the four
    assert call(dev, "POST", f"/v1/groups/{group}/offsets/reset", reset)[0] == 200
    produce(dev, topic, 3, start=14)
    again = Consumer(settings(dev, group, "again"))
    again.subscribe([topic])
    assert sorted(poll_values(again, 3)) == [b"v14", b"v15", b"v16"]
    assert poll_values(again, 1, timeout=2) == []
    again.close()


def test_a_pattern_subscription_picks_up_a_topic_created_later(dev):
    prefix = f"later{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            **settings(dev, f"pattern-{prefix}", "p"),
            "topic.metadata.refresh.interval.ms": 500,
        }
    )
    consumer.subscribe([f"^{prefix}-.*"])
    consumer.poll(1)
    name = f"{prefix}-{PARTITIONS}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": 2})[0] == 201
    produce(dev, name, 6)
    assert sorted(poll_values(consumer, 6)) == sorted(f"v{i}".encode() for i in range(6))
    assert sorted(tp.partition for tp in consumer.assignment()) == [0, 1]
    consumer.close()
