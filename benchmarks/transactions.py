"""Transactions through `tidelog dev`'s agent, with librdkafka on both sides.

- Produce: the same records by an idempotent producer and by a transactional one committing
  every 100 ms of the idempotent producer's rate (Kafka's guidance: at that interval
  transactions cost little); rounds alternate and each side's median counts.
- Commit latency: ``commit_transaction`` after ``flush``: EndTxn until its markers are written
  (tidelog answers EndTxn once they are).
- Consume: the transactional topic (one transaction in ten aborted) read from the start by a
  ``read_committed`` consumer and a ``read_uncommitted`` one, rounds alternating.
"""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from tests.functional.test_produce_api import call
from tests.support import devserver

from benchmarks.report import Section

PARTITIONS = 6
RECORDS = 300_000
VALUE = b"v" * 200
COMMIT_EVERY_S = (0.1, 1.0)  # Kafka's guidance is about the first
ABORT_ONE_IN = 10
ROUNDS = 3


def run(progress: Any = print) -> Section:
    section = Section(
        "Transactions: throughput, commit latency and read_committed",
        f"`tidelog dev`'s agent, librdkafka on both sides. Produce: {RECORDS:,} records of "
        f"{len(VALUE)} B to {PARTITIONS} partitions, by an idempotent producer and by a "
        "transactional one committing every 100 ms, or every second, of the idempotent "
        f"producer's rate (one transaction in {ABORT_ONE_IN} aborted), {ROUNDS} rounds "
        "alternating, medians. Commit latency (at 100 ms): "
        "`commit_transaction` after `flush` (EndTxn with its markers written). Consume: the "
        "transactional topic from the start (once to warm the agent's cache, then "
        "read_uncommitted and read_committed alternating), medians; the ratio is of the times "
        "to read the whole topic.",
        ("measurement", "value", "ratio"),
    )
    progress("  starting tidelog dev")
    dev = devserver.start()
    try:
        plain_rates: list[float] = []
        txn_rates: dict[float, list[float]] = {every: [] for every in COMMIT_EVERY_S}
        commits: list[float] = []
        phases: list[tuple[float, float, float]] = []
        topics = []
        for round_number in range(ROUNDS):
            progress(f"  round {round_number + 1}/{ROUNDS}: idempotent, then transactional")
            plain_rates.append(_produce(dev, _topic(dev), per_txn=None, commits=[]))
            for every in COMMIT_EVERY_S:
                # A transaction holds what the idempotent producer delivers in the interval.
                per_txn = max(1, int(statistics.median(plain_rates) * every))
                topic = _topic(dev)
                first = every == COMMIT_EVERY_S[0]
                txn_rates[every].append(
                    _produce(
                        dev,
                        topic,
                        per_txn=per_txn,
                        commits=commits if first else [],
                        phases=phases if first else None,
                    )
                )
                if every == COMMIT_EVERY_S[0]:
                    topics.append(topic)
        committed_reads, uncommitted_reads = [], []
        for topic in topics:
            progress(f"  consuming {topic} at both isolation levels")
            _consume(dev, topic, "read_uncommitted")  # warms the agent's object cache
            for isolation in ("read_uncommitted", "read_committed") * 2:  # ABAB: drift cancels
                reads = committed_reads if isolation == "read_committed" else uncommitted_reads
                reads.append(_consume(dev, topic, isolation))
    finally:
        dev.stop()
    plain = statistics.median(plain_rates)
    # The same topic read to its end: the ratio is of the times (read_committed returns fewer
    # records, those of aborted transactions left out, from the same bytes).
    committed_s = statistics.median(s for s, _ in committed_reads)
    uncommitted_s = statistics.median(s for s, _ in uncommitted_reads)
    committed_records = statistics.median(n for _, n in committed_reads)
    uncommitted_records = statistics.median(n for _, n in uncommitted_reads)
    ordered = sorted(commits)
    p50 = ordered[len(ordered) // 2] * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    section.rows.append(("produce, idempotent", f"{plain:,.0f} records/s", "1.00x"))
    for every, rates in txn_rates.items():
        txn = statistics.median(rates)
        section.rows.append(
            (
                f"produce, transactional, a commit every {every * 1000:.0f} ms",
                f"{txn:,.0f} records/s",
                f"{txn / plain:.2f}x",
            )
        )
    section.rows += [
        ("commit latency, p50 / p99", f"{p50:.1f} / {p99:.1f} ms ({len(ordered)} commits)", ""),
        (
            "a 100 ms transaction's time, median: producing / flush / commit",
            " / ".join(
                f"{statistics.median(p[i] for p in phases) * 1000:.0f} ms" for i in range(3)
            ),
            "",
        ),
        (
            "consume the topic, read_uncommitted",
            f"{uncommitted_s:.2f} s ({uncommitted_records:,.0f} records)",
            "1.00x",
        ),
        (
            "consume the topic, read_committed",
            f"{committed_s:.2f} s ({committed_records:,.0f} records, the aborted left out)",
            f"{uncommitted_s / committed_s:.2f}x",
        ),
    ]
    section.notes.append(
        "What a short interval costs is mostly the write path's latency, not the "
        "transaction's bookkeeping: every transaction ends with `flush`, which drains the "
        "pipeline of group-commit flushes (each an S3 PUT and a DynamoDB transaction) that an "
        "idempotent producer keeps full, then waits for EndTxn (the commit latency above), "
        "then starts the next one empty after an AddPartitionsToTxn round trip. At a second's "
        "interval those fixed costs vanish. Shorter flushes (issue 33's group commit that "
        "waits only when it gains something) shrink both."
    )
    section.notes.append(
        "A transaction costs AddPartitionsToTxn once per partition, a guard read per produce "
        "request and a condition in its commit, and at its end two conditional writes of the "
        "transaction's item plus one marker per partition written, appended together as one "
        "group-commit flush."
    )
    section.notes.append(
        "read_committed reads the same batches; the aborted index is looked up only when the "
        "head shows an abort at or past the fetch's offset, and then from the host's cache of "
        "it (its items never change), which reads only what was aborted since."
    )
    return section


def _topic(dev: Any) -> str:
    name = f"txb-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": PARTITIONS})[0] == 201
    return name


def _produce(
    dev: Any,
    topic: str,
    *,
    per_txn: int | None,
    commits: list[float],
    phases: list[tuple[float, float, float]] | None = None,
) -> float:
    """Records a second; transactional (``per_txn`` records a transaction) or idempotent.
    ``phases``: each committed transaction's seconds producing, flushing and committing."""
    config = {"bootstrap.servers": dev.bootstrap, "linger.ms": 5, "enable.idempotence": True}
    if per_txn is not None:
        config["transactional.id"] = f"bench-{topic}"
    producer = Producer(config)
    if per_txn is not None:
        producer.init_transactions(30)
    start = time.perf_counter()
    sent = number = 0
    while sent < RECORDS:
        if per_txn is not None:
            producer.begin_transaction()
        opened = time.perf_counter()
        end = RECORDS if per_txn is None else min(RECORDS, sent + per_txn)
        while sent < end:
            try:
                producer.produce(topic, value=VALUE, partition=sent % PARTITIONS)
                sent += 1
            except BufferError:
                producer.poll(0.01)
            producer.poll(0)
        if per_txn is not None:
            queued = time.perf_counter()
            producer.flush(60)
            number += 1
            if number % ABORT_ONE_IN == 0:
                producer.abort_transaction(60)
                continue
            began = time.perf_counter()
            producer.commit_transaction(60)
            commits.append(time.perf_counter() - began)
            if phases is not None:
                phases.append((queued - opened, began - queued, time.perf_counter() - began))
    producer.flush(60)
    return RECORDS / (time.perf_counter() - start)


def _consume(dev: Any, topic: str, isolation: str) -> tuple[float, int]:
    """Seconds to read the topic to its end, and the records read."""
    consumer = Consumer(
        {
            "bootstrap.servers": dev.bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    start = last = time.perf_counter()
    idle_since: float | None = None
    while True:
        # A short timeout: consume() waits for its whole count until then, and the last call
        # of a read would otherwise end at the timeout, not at the last record.
        messages = consumer.consume(1000, 0.01)
        if messages:
            got += sum(1 for m in messages if not m.error())
            idle_since = None
            last = time.perf_counter()
        elif idle_since is None:
            idle_since = time.perf_counter()
        elif time.perf_counter() - idle_since > 2:
            break
    consumer.close()
    return last - start, got
