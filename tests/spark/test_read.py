"""Topics as DataFrames: batch reads with Kafka's options, against what was produced."""

from __future__ import annotations

import datetime
import json

import pytest
from tests.functional.test_produce_api import call

T0 = 1_700_000_000_000


def produce(dev, topic, partition, values, *, start_ms=T0, key=None, headers=()):
    records = [
        {
            "key": key,
            "value": v,
            "partition": partition,
            "timestamp": start_ms + i,
            "headers": [{"key": k, "value": hv} for k, hv in headers],
        }
        for i, v in enumerate(values)
    ]
    status, body = call(dev, "POST", f"/v1/topics/{topic}/records", {"records": records})
    assert status == 200, body
    return [o["offset"] for o in body["offsets"]]


def load(spark, connection, **options):
    reader = spark.read.format("tidelog")
    for name, value in {**connection, **options}.items():
        reader = reader.option(name, value)
    return reader.load()


def test_a_batch_read_is_what_was_produced(spark, dev, connection, new_topic):
    topic = new_topic()
    for p in range(3):
        produce(dev, topic, p, [f"p{p}-{i}" for i in range(20)], key=f"k{p}", headers=[("h", "x")])
    df = load(spark, connection, subscribe=topic, includeHeaders="true")
    assert df.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    rows = df.collect()
    got = sorted((r.partition, r.offset, bytes(r.key), bytes(r.value)) for r in rows)
    expected = sorted(
        (p, i, f"k{p}".encode(), f"p{p}-{i}".encode()) for p in range(3) for i in range(20)
    )
    assert got == expected
    first = min(rows, key=lambda r: (r.partition, r.offset))
    assert first.timestamp == datetime.datetime(2023, 11, 14, 22, 13, 20)
    assert first.timestampType == 0
    assert [(h.key, bytes(h.value)) for h in first.headers] == [("h", b"x")]
    assert first.topic == topic


def test_offset_ranges_and_timestamps(spark, dev, connection, new_topic):
    topic = new_topic(partitions=2)
    produce(dev, topic, 0, [f"a{i}" for i in range(10)])
    produce(dev, topic, 1, [f"b{i}" for i in range(10)])
    starting = json.dumps({topic: {"0": 3, "1": -2}})
    ending = json.dumps({topic: {"0": 5, "1": -1}})
    df = load(spark, connection, subscribe=topic, startingOffsets=starting, endingOffsets=ending)
    got = sorted((r.partition, r.offset) for r in df.collect())
    assert got == [(0, 3), (0, 4)] + [(1, i) for i in range(10)]
    df = load(spark, connection, assign=json.dumps({topic: [1]}), startingTimestamp=str(T0 + 7))
    assert sorted(r.offset for r in df.collect()) == [7, 8, 9]
    by_time = json.dumps({topic: {"0": T0 + 8, "1": T0 + 1}})
    df = load(spark, connection, subscribe=topic, startingOffsetsByTimestamp=by_time)
    assert sorted((r.partition, r.offset) for r in df.collect()) == [(0, 8), (0, 9)] + [
        (1, i) for i in range(1, 10)
    ]
    with pytest.raises(Exception, match="no record at or after timestamp"):
        load(spark, connection, subscribe=topic, startingTimestamp=str(T0 + 99)).collect()
    late = load(
        spark,
        connection,
        subscribe=topic,
        startingTimestamp=str(T0 + 99),
        startingOffsetsByTimestampStrategy="latest",
    )
    assert late.count() == 0


def test_min_partitions_splits_ranges_into_tasks(spark, dev, connection, new_topic):
    topic = new_topic(partitions=1)
    produce(dev, topic, 0, [f"v{i}" for i in range(40)])
    df = load(spark, connection, subscribe=topic, minPartitions="4")
    assert df.rdd.getNumPartitions() == 4
    assert sorted(r.offset for r in df.collect()) == list(range(40))


def test_bad_options_name_the_problem(spark, connection, new_topic):
    topic = new_topic()
    with pytest.raises(Exception, match="exactly one of subscribe"):
        load(spark, connection).collect()
    with pytest.raises(Exception, match="not JSON"):
        load(spark, connection, subscribe=topic, startingOffsets="{oops").collect()
    with pytest.raises(Exception, match="failOnDataLoss is true or false"):
        load(spark, connection, subscribe=topic, failOnDataLoss="maybe").collect()


def test_read_committed_by_default_with_marker_gaps(spark, dev, connection, new_topic):
    """Committed, aborted and still-open transactions (librdkafka's producer) beside plain
    records: read_committed rows are the plain and committed records only, ending at the last
    stable offset, whatever gaps markers and aborted batches leave in the offsets (the Kafka
    source's SPARK-25005); read_uncommitted rows are every data record."""
    from confluent_kafka import Producer

    topic = new_topic(partitions=1)
    produce(dev, topic, 0, ["plain-0"])
    producer = Producer({"bootstrap.servers": dev.bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    for outcome in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, value=f"{outcome}-{i}".encode(), partition=0)
        producer.flush(30)
        if outcome == "commit":
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    producer.flush(30)
    produce(dev, topic, 0, ["plain-after-open"])  # past the last stable offset: not yet
    committed = [r.value.decode() for r in load(spark, connection, subscribe=topic).collect()]
    assert sorted(committed) == sorted(["plain-0"] + [f"commit-{i}" for i in range(3)] * 2)
    everything = load(spark, connection, subscribe=topic, isolation="read_uncommitted").collect()
    assert len(everything) == 1 + 9 + 1 + 1
    producer.commit_transaction(30)
    after = {r.value.decode() for r in load(spark, connection, subscribe=topic).collect()}
    assert {"open", "plain-after-open"} <= after
    assert not any(v.startswith("abort") for v in after)
    with pytest.raises(Exception, match="isolation is read_committed or read_uncommitted"):
        load(spark, connection, subscribe=topic, isolation="serializable").collect()
