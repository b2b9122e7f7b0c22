"""A consumer group in sustained use: three cooperative-sticky Consumers, one replaced every
few seconds, while a Producer writes; every record checked (processed once, none missing), and
the client's and `tidelog dev`'s memory and the poll times watched across the rounds.

The bookkeeping keeps one (partition, offset) pair per record in each of two sets, which grow by
a few MB per 10,000 records in the client's figure; nothing else here should grow.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections import deque
from typing import Any

from tidelog.client import Admin, Consumer, Producer

CHURN_S = 3.0
PARTITIONS = 6


def rss_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class _Run:
    def __init__(self, api: str, topic: str, group: str) -> None:
        self.api, self.topic, self.group = api, topic, group
        self.lock = threading.Lock()
        self.produced: set[tuple[int, int]] = set()
        self.processed: set[tuple[int, int]] = set()
        self.twice = 0
        self.polls: deque[tuple[float, float]] = deque(maxlen=5000)
        self.stop = threading.Event()

    def produce(self) -> None:
        def delivered(error: Exception | None, metadata: Any) -> None:
            if error is None:
                with self.lock:
                    self.produced.add((metadata.partition, metadata.offset))

        with Producer({"url": self.api, "linger.ms": 5}) as producer:
            i = 0
            while not self.stop.is_set():
                producer.produce(self.topic, f"v{i}", key=f"k{i % 97}", on_delivery=delivered)
                i += 1
                time.sleep(0.002)

    def member(self, stop: threading.Event) -> None:
        config = {
            "url": self.api,
            "group.id": self.group,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
            "fetch.max.wait.ms": 200,
            "auto.commit.interval.ms": 200,
        }
        with Consumer(config) as consumer:
            consumer.subscribe([self.topic])
            while not stop.is_set():
                asked = time.perf_counter()
                records = consumer.consume(200, 0.2)
                with self.lock:
                    self.polls.append((time.monotonic(), time.perf_counter() - asked))
                    for r in records:
                        key = (r.partition, r.offset)
                        self.twice += key in self.processed
                        self.processed.add(key)

    def recent_poll_ms(self) -> float:
        with self.lock:
            window = [d for t, d in self.polls if t > time.monotonic() - CHURN_S]
        return statistics.median(window) * 1000 if window else float("nan")


def soak(api: str, dev_pid: int, rounds: int, progress: Any = print) -> dict[str, Any]:
    topic, group = f"soak-{uuid.uuid4().hex[:6]}", f"soak-{uuid.uuid4().hex[:6]}"
    with Admin(api) as admin:
        admin.create_topic(topic, PARTITIONS)
    run = _Run(api, topic, group)

    def start_member() -> tuple[threading.Event, threading.Thread]:
        stop = threading.Event()
        thread = threading.Thread(target=run.member, args=(stop,))
        thread.start()
        return stop, thread

    producer = threading.Thread(target=run.produce)
    producer.start()
    members = [start_member() for _ in range(3)]
    began = time.monotonic()
    samples = []
    for round_ in range(1, rounds + 1):
        time.sleep(CHURN_S)
        stop, thread = members.pop(0)
        stop.set()
        thread.join()
        members.append(start_member())
        samples.append((len(run.produced), rss_mb(), rss_mb(dev_pid), run.recent_poll_ms()))
        if round_ % 10 == 0:
            progress(
                f"    soak round {round_}: {samples[-1][0]:,} records, client "
                f"{samples[-1][1]:.0f} MB, dev {samples[-1][2]:.0f} MB"
            )
    run.stop.set()
    producer.join()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not run.processed >= run.produced:
        time.sleep(0.2)
    for stop, thread in members:
        stop.set()
        thread.join()
    first, last = samples[0], samples[-1]
    return {
        "rounds": rounds,
        "seconds": round(time.monotonic() - began),
        "records": len(run.produced),
        "twice": run.twice,
        "missing": len(run.produced - run.processed),
        "client_mb": (round(first[1]), round(last[1])),
        "dev_mb": (round(first[2]), round(last[2])),
        "poll_ms": (round(first[3]), round(last[3])),
    }
