"""The client's Consumer against `tidelog dev`: assigned partitions read from the reset, a
seek or the committed offset; and groups whose members come and go while records flow, each
record processed once, no partition ever held by two members, and the rebalance callbacks
called as Kafka's consumers call them (eager and cooperative, and KIP-848's consumer
protocol)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from tests.functional.test_groups_api import told

from tidelog.client import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    Admin,
    Consumer,
    Http,
    Producer,
    TopicPartition,
)
from tidelog.errors import InvalidRequestError

FAST = {"session.timeout.ms": 6_000, "heartbeat.interval.ms": 200, "fetch.max.wait.ms": 200}
"""Heartbeats often enough that a rebalance is heard within a fraction of a second."""
PENDING = 50
"""Records a background writer leaves unacknowledged at most."""


def make_topic(dev, partitions=3, prefix="consumer"):
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    with Admin(dev.api_url) as admin:
        admin.create_topic(name, partitions)
    return name


def produce(dev, topic, values, partition=None):
    with Producer({"url": dev.api_url, "linger.ms": 0}) as producer:
        futures = [producer.produce(topic, v, key=v, partition=partition) for v in values]
        return [f.result(30) for f in futures]


def drain(consumer, count, timeout=20):
    records, deadline = [], time.monotonic() + timeout
    while len(records) < count and time.monotonic() < deadline:
        records += consumer.consume(count - len(records), 0.5)
    return records


def group_name():
    return f"g-{uuid.uuid4().hex[:10]}"


def test_assigned_partitions_read_from_the_reset_a_seek_and_the_commit(dev):
    topic = make_topic(dev)
    produced = produce(dev, topic, [f"r{i}" for i in range(30)])
    group = group_name()
    config = {"url": dev.api_url, "group.id": group, "enable.auto.commit": False, **FAST}
    partitions = [TopicPartition(topic, p) for p in range(3)]

    with Consumer(config, auto_offset_reset="earliest") as consumer:
        consumer.assign(partitions)
        records = drain(consumer, 30)
        assert sorted(r.value for r in records) == sorted(f"r{i}".encode() for i in range(30))
        assert {(r.partition, r.offset) for r in records} == {
            (md.partition, md.offset) for md in produced
        }
        ends = {p: sum(md.partition == p for md in produced) for p in range(3)}
        assert {tp.partition: tp.offset for tp in consumer.position(partitions)} == ends
        assert [tp.offset for tp in consumer.committed(partitions)] == [OFFSET_INVALID] * 3

        committed = consumer.commit()
        assert {tp.partition: tp.offset for tp in committed} == ends
        assert {tp.partition: tp.offset for tp in consumer.committed(partitions)} == ends

        consumer.seek(TopicPartition(topic, 0, 1))
        (again,) = consumer.consume(1, 10)
        assert (again.partition, again.offset) == (0, 1)
        consumer.seek(TopicPartition(topic, 0, OFFSET_END))
        assert consumer.position([TopicPartition(topic, 0)])[0].offset == ends[0]

    # A consumer of the same group resumes from the commit; a new group starts at the end.
    with (
        Consumer(config, auto_offset_reset="earliest") as resumed,
        Consumer({**config, "group.id": group_name()}) as newcomer,
    ):
        resumed.assign(partitions)
        newcomer.assign(partitions)
        assert resumed.consume(10, 0.5) == []
        assert newcomer.consume(10, 0.5) == []
        produce(dev, topic, ["late"], partition=2)
        assert [r.value for r in drain(resumed, 1)] == [b"late"]
        assert [r.value for r in drain(newcomer, 1)] == [b"late"]


def test_an_offset_outside_the_log_is_reset_or_raised(dev):
    topic = make_topic(dev, partitions=1)
    produce(dev, topic, ["a", "b", "c"])
    tp = TopicPartition(topic, 0)
    with Consumer({"url": dev.api_url, "auto.offset.reset": "earliest", **FAST}) as consumer:
        consumer.assign([TopicPartition(topic, 0, 99)])
        assert [r.offset for r in drain(consumer, 3)] == [0, 1, 2], "reset to the log start"
    with Consumer({"url": dev.api_url, "auto.offset.reset": "latest", **FAST}) as consumer:
        consumer.assign([TopicPartition(topic, 0, 99)])
        assert consumer.consume(1, 0.5) == []
        assert consumer.position([tp])[0].offset == 3, "reset to the high watermark"
    with Consumer({"url": dev.api_url, "auto.offset.reset": "none", **FAST}) as consumer:
        consumer.assign([TopicPartition(topic, 0, 99)])
        with pytest.raises(InvalidRequestError) as raised:
            consumer.consume(1, 5)
        assert raised.value.kafka_error.name == "OFFSET_OUT_OF_RANGE"
    config = {"url": dev.api_url, "auto.offset.reset": "none", "group.id": group_name()}
    with Consumer(config) as c, pytest.raises(InvalidRequestError, match="no committed offset"):
        c.assign([tp])


def test_bad_configs_are_refused_by_name(dev):
    for config, named in (
        ({"fetch.min.byte": 1}, "fetch.min.byte"),
        ({"auto.offset.reset": "oldest"}, "auto.offset.reset"),
        ({"partition.assignment.strategy": "range,fair"}, "partition.assignment.strategy"),
        ({"session.timeout.ms": 1000, "heartbeat.interval.ms": 3000}, "heartbeat.interval.ms"),
        ({"enable.auto.commit": "maybe"}, "enable.auto.commit"),
        ({"group.protocol": "next"}, "group.protocol"),
        ({"group.remote.assignor": "sticky"}, "group.remote.assignor"),
    ):
        with pytest.raises(InvalidRequestError, match=named):
            Consumer({"url": dev.api_url, **config})
    with Consumer({"url": dev.api_url}) as consumer, pytest.raises(InvalidRequestError):
        consumer.subscribe(["t"])  # no group.id
    with Consumer({"url": dev.api_url, "session.timeout.ms": 6000}) as consumer:
        assert consumer.config.heartbeat_interval_ms == 2000, "a third of a shorter session"
    with Consumer({"url": dev.api_url}) as consumer:
        assert consumer.config.heartbeat_interval_ms == 3000, "Kafka's default"


class Member:
    """A consumer on its own thread, processing records as an application would, and
    recording what its rebalance callbacks were told."""

    def __init__(self, name, dev, topic, group, owners, lock, extra):
        self.name, self.owners, self.lock = name, owners, lock
        self.processed: list[tuple[int, int]] = []
        self.calls: list[tuple[str, list[int]]] = []
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.consumer = Consumer(
            {"url": dev.api_url, "group.id": group, "auto.offset.reset": "earliest", **FAST},
            **extra,
        )
        self.consumer.subscribe(
            [topic], on_assign=self.assigned, on_revoke=self.revoked, on_lost=self.lost
        )
        self.thread = threading.Thread(target=self.run, name=name)
        self.thread.start()

    def assigned(self, consumer, partitions):
        with self.lock:
            self.calls.append(("assign", [tp.partition for tp in partitions]))
            for tp in partitions:
                holder = self.owners.get(tp.partition)
                assert holder is None, f"{self.name} given {tp.partition}, held by {holder}"
                self.owners[tp.partition] = self.name

    def revoked(self, consumer, partitions):
        with self.lock:
            self.calls.append(("revoke", [tp.partition for tp in partitions]))
            for tp in partitions:
                assert self.owners.pop(tp.partition) == self.name

    def lost(self, consumer, partitions):
        with self.lock:
            self.calls.append(("lost", [tp.partition for tp in partitions]))

    def run(self):
        try:
            while not self.stop.is_set():
                for record in self.consumer.consume(50, 0.2):
                    with self.lock:
                        owner = self.owners.get(record.partition)
                    assert owner == self.name, f"{self.name} read {record.partition} of {owner}"
                    self.processed.append((record.partition, record.offset))
            self.consumer.close()
        except BaseException as exc:  # the test thread reports it
            self.errors.append(exc)

    def leave(self):
        self.stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive()


KIP848 = {"group.protocol": "consumer"}


@pytest.mark.parametrize(
    ("strategy", "extra"),
    [
        ("range", {}),
        ("cooperative-sticky", {"enable.auto.commit": True}),
        ("range", {**KIP848, "enable.auto.commit": True}),  # the strategy is not used
    ],
)
def test_a_group_whose_members_come_and_go_processes_every_record_once(dev, strategy, extra):
    topic, group = make_topic(dev, partitions=6), group_name()
    owners: dict[int, str] = {}
    lock = threading.Lock()
    options = {"partition.assignment.strategy": strategy, "auto.commit.interval.ms": 100, **extra}
    produced: list = []
    stop_producing = threading.Event()

    def keep_producing():
        # At most PENDING unacknowledged: a writer outrunning the API would grow a backlog
        # that, on a loaded machine, takes the stack's whole time from the group.
        with Producer({"url": dev.api_url, "linger.ms": 5}) as producer:
            i = 0
            while not stop_producing.is_set():
                produced.append(producer.produce(topic, f"v{i}", key=f"k{i}"))
                i += 1
                if len(produced) >= PENDING:
                    produced[-PENDING].result(30)
                time.sleep(0.005)

    def settled(*names):
        """Until the group's partitions are all held, by exactly these members."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with lock:
                if len(owners) == 6 and set(owners.values()) == set(names):
                    return
            time.sleep(0.05)
        raise AssertionError(f"not settled on {names}: {owners}\n{told(dev, group)}")

    producer = threading.Thread(target=keep_producing)
    producer.start()
    members = {}
    try:
        for joined in ("a", "ab", "abc"):
            name = joined[-1]
            members[name] = Member(name, dev, topic, group, owners, lock, options)
            settled(*joined)
        members["b"].leave()
        settled("a", "c")
        members["d"] = Member("d", dev, topic, group, owners, lock, options)
        settled("a", "c", "d")
    finally:
        stop_producing.set()
        producer.join()
    expected = {(f.result(30).partition, f.result(30).offset) for f in produced}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done = {pair for m in members.values() for pair in m.processed}
        if done >= expected or any(m.errors for m in members.values()):
            break
        time.sleep(0.1)
    for name in ("a", "c", "d"):
        members[name].leave()

    for member in members.values():
        assert not member.errors, f"{member.name}: {member.errors[0]!r}"
    processed = [pair for m in members.values() for pair in m.processed]
    assert set(processed) == expected, "every record processed"
    assert len(processed) == len(expected), "none twice: each handover committed first"
    assert owners == {}, "every member gave its partitions back when it closed"
    calls = {name: m.calls for name, m in members.items()}
    for made in calls.values():
        assert made[0][0] == "assign", calls
        assert made[-1][0] == "revoke", calls
        assert not any(kind == "lost" for kind, _ in made), calls
    if extra.get("group.protocol") == "consumer":
        # Reconciled one member at a time: only what moves is revoked, nothing is lost.
        assert all(parts for kind, parts in made if kind == "revoke" for made in calls.values())
    elif strategy == "range":
        # Eager: every rebalance takes everything back and hands out afresh.
        first, taken, given = calls["a"][:3]
        assert first == ("assign", list(range(6))), calls
        assert taken == ("revoke", list(range(6))), calls
        assert given[0] == "assign", calls
        assert len(given[1]) == 3, calls
    else:
        # Cooperative: only what moves is revoked, and a's first partitions never move.
        assert all(parts for kind, parts in made if kind == "revoke" for made in calls.values())
        assert not any(0 in parts for kind, parts in calls["a"][1:-1] if kind == "revoke"), calls


@pytest.mark.parametrize("protocol", [{}, KIP848])
def test_a_static_member_rejoins_without_a_rebalance(dev, protocol):
    topic, group = make_topic(dev, partitions=4), group_name()
    produce(dev, topic, [f"s{i}" for i in range(8)])
    config = {
        "url": dev.api_url,
        "group.id": group,
        "group.instance.id": "host-1",
        "auto.offset.reset": "earliest",
        **FAST,
        **protocol,
    }
    assigned = []
    with Consumer(config) as first:
        first.subscribe([topic], on_assign=lambda c, tps: assigned.append(tps))
        assert len(drain(first, 8)) == 8
    with Http(dev.api_url) as http:
        before = http.get(f"/v1/groups/{group}")
    with Consumer(config) as second:
        second.subscribe([topic], on_assign=lambda c, tps: assigned.append(tps))
        assert second.consume(1, 1.0) == [], "resumed from the commit the first one made"
        produce(dev, topic, ["after"], partition=3)
        assert [r.value for r in drain(second, 1)] == [b"after"]
        with Http(dev.api_url) as http:
            after = http.get(f"/v1/groups/{group}")
    assert after["generation_id"] == before["generation_id"], "no rebalance"
    assert [[tp.partition for tp in tps] for tps in assigned] == [[0, 1, 2, 3]] * 2


@pytest.mark.parametrize("protocol", [{}, KIP848])
def test_a_pattern_subscription_takes_the_matching_topics(dev, protocol):
    prefix = f"pat{uuid.uuid4().hex[:6]}"
    matching = [make_topic(dev, 1, prefix=f"{prefix}-x") for _ in range(2)]
    make_topic(dev, 1, prefix=f"{prefix}-y")
    config = {"url": dev.api_url, "group.id": group_name(), **FAST, **protocol}
    with Consumer(config) as consumer:
        consumer.subscribe(f"^{prefix}-x-.*")
        deadline = time.monotonic() + 20
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert sorted(tp.topic for tp in consumer.assignment()) == sorted(matching)


def test_auto_commit_commits_what_poll_handed_out(dev):
    topic, group = make_topic(dev, partitions=1), group_name()
    produce(dev, topic, [f"c{i}" for i in range(5)])
    tp = TopicPartition(topic, 0)
    config = {"url": dev.api_url, "group.id": group, "auto.offset.reset": "earliest", **FAST}
    with Consumer(config, auto_commit_interval_ms=100) as consumer:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        assert len(drain(consumer, 3)) == 3
        time.sleep(0.15)
        # A poll past the interval commits what earlier polls handed out, then hands out more.
        assert consumer.poll(5).offset == 3
        deadline = time.monotonic() + 10
        while consumer.committed([tp])[0].offset != 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert consumer.committed([tp])[0].offset == 3
        assert [r.offset for r in drain(consumer, 1)] == [4]
    with Consumer(config) as later:
        assert later.committed([tp])[0].offset == 5, "close commits the rest"


def test_pause_resume_and_offsets_for_times(dev):
    topic = make_topic(dev, partitions=2)
    with Producer({"url": dev.api_url}) as producer:
        for i in range(6):
            producer.produce(topic, f"p{i % 2}-{i}", partition=i % 2, timestamp=1_000 * (i + 1))
    partitions = [TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)]
    with Consumer({"url": dev.api_url, **FAST}) as consumer:
        consumer.assign(partitions)
        consumer.pause([TopicPartition(topic, 1)])
        assert {r.partition for r in drain(consumer, 3)} == {0}
        assert consumer.consume(1, 0.5) == [], "partition 1 is paused"
        consumer.resume([TopicPartition(topic, 1)])
        assert [r.partition for r in drain(consumer, 3)] == [1, 1, 1]
        # Partition 0 holds the times 1000, 3000, 5000; partition 1 2000, 4000, 6000.
        found = consumer.offsets_for_times(
            [TopicPartition(topic, 0, 2_500), TopicPartition(topic, 1, 9_000)]
        )
        assert [(tp.partition, tp.offset) for tp in found] == [(0, 1), (1, -1)]


def test_a_member_that_stops_polling_loses_its_partitions_and_joins_again(dev):
    topic, group = make_topic(dev, partitions=2), group_name()
    calls = []
    config = {"url": dev.api_url, "group.id": group, **FAST, "max.poll.interval.ms": 1_000}
    with Consumer(config) as slow, Consumer(config) as other:
        slow.subscribe(
            [topic],
            on_assign=lambda c, tps: calls.append(("assign", len(tps))),
            on_revoke=lambda c, tps: calls.append(("revoke", len(tps))),
            on_lost=lambda c, tps: calls.append(("lost", len(tps))),
        )
        deadline = time.monotonic() + 20
        while not slow.assignment() and time.monotonic() < deadline:
            slow.poll(0.1)
        assert calls == [("assign", 2)]
        other.subscribe([topic])
        time.sleep(1.5)  # slow does not poll: its heartbeat thread leaves the group for it
        deadline = time.monotonic() + 20
        while len(other.assignment()) < 2 and time.monotonic() < deadline:
            other.poll(0.1)
        assert len(other.assignment()) == 2, "the live member took over"
        slow.poll(0.1)
        assert calls[1] == ("lost", 2), "lost, not revoked: they may be another's already"
        assert slow.assignment() == []
