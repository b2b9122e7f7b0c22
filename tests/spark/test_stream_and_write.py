"""Streaming reads (availableNow, maxOffsetsPerTrigger, restarts), data loss, exactly-once
writes across task retries, and compaction on Spark against the in-process compactor."""

from __future__ import annotations

import datetime
import json
import time

import pytest
from tests.functional.test_produce_api import call
from tests.spark.test_read import load, produce

from tidelog.log.entries import partition_entries, without_leftovers
from tidelog.log.lifecycle import compaction
from tidelog.log.lifecycle.housekeeping import Housekeeper
from tidelog.log.read.fetch import LogReader
from tidelog.log.read.reader import committed_records
from tidelog.log.topics import Topics
from tidelog.partitioner import partition_for_key
from tidelog.spark.jobs import compact, resegment
from tidelog.spark.options import Connection
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.s3 import S3ObjectStore


@pytest.fixture
def stores(dev_client, template):
    (table,) = template.tables()
    meta = DynamoMetadataStore(dev_client("dynamodb"), table.name)
    return meta, S3ObjectStore(dev_client("s3"), template.buckets()[0])


def clock():
    return time.time_ns() // 1_000_000


def records(stores, topic, partition=0):
    meta, objects = stores
    found = Topics(meta, clock).get(topic)
    return list(committed_records(meta, objects, found.topic_id, partition))


def stream(spark, connection, checkpoint, **options):
    """Run an availableNow query to its end; the micro-batches it produced, as lists of rows."""
    batches = []
    reader = spark.readStream.format("tidelog")
    for name, value in {**connection, **options}.items():
        reader = reader.option(name, value)
    query = (
        reader.load()
        .writeStream.foreachBatch(
            lambda df, _: batches.append(
                sorted((r.partition, r.offset, bytes(r.value)) for r in df.collect())
            )
        )
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    return [b for b in batches if b]


def test_streaming_reads_resume_from_their_checkpoint(spark, dev, connection, new_topic, tmp_path):
    topic = new_topic(partitions=2)
    produce(dev, topic, 0, [f"a{i}" for i in range(15)])
    produce(dev, topic, 1, [f"b{i}" for i in range(15)])
    options = {"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "10"}
    first = stream(spark, connection, tmp_path / "cp", **options)
    assert len(first) == 3  # 30 records, 10 a trigger
    assert all(len(b) == 10 for b in first)
    assert sorted(r for b in first for r in b) == sorted(
        [(0, i, f"a{i}".encode()) for i in range(15)]
        + [(1, i, f"b{i}".encode()) for i in range(15)]
    )
    produce(dev, topic, 1, ["late"])
    again = stream(spark, connection, tmp_path / "cp", **options)
    assert again == [[(1, 15, b"late")]]  # only what is new since the checkpoint


def test_data_loss_fails_or_skips(spark, dev, connection, new_topic, stores):
    topic = new_topic(partitions=1, configs={"segment.ms": 1, "retention.bytes": 1})
    produce(dev, topic, 0, [f"v{i}" for i in range(5)])
    produce(dev, topic, 0, [f"w{i}" for i in range(5)])
    meta, objects = stores
    keeper = Housekeeper(
        meta, objects, Topics(meta, clock), clock_ms=clock, grace_ms=3_600_000, settle_ms=0
    )
    keeper.run(["roll", "retention"])
    found = Topics(meta, clock).get(topic)
    log_start, end = LogReader(meta, objects).head(found.topic_id, 0)
    assert log_start > 0
    starting = json.dumps({topic: {"0": 0}})
    with pytest.raises(Exception, match="are gone"):
        load(spark, connection, subscribe=topic, startingOffsets=starting).collect()
    df = load(spark, connection, subscribe=topic, startingOffsets=starting, failOnDataLoss="false")
    assert sorted(r.offset for r in df.collect()) == list(range(log_start, end))


def test_a_write_retried_mid_task_leaves_no_duplicate(
    spark, connection, new_topic, stores, tmp_path
):
    from pyspark import TaskContext
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    topic = new_topic(partitions=2)
    marker = tmp_path / "failed-once"

    def flaky(value):
        # The first attempt of the task dies after ~half its rows were written.
        context = TaskContext.get()
        if value == "v150" and context.attemptNumber() == 0 and not marker.exists():
            marker.write_text("x")
            raise RuntimeError("killed mid-task")
        return value

    fail = F.udf(flaky, StringType())
    df = (
        spark.range(300)
        .select(
            F.concat(F.lit("v"), F.col("id").cast("string")).alias("value"),
            (F.col("id") % 7).cast("string").alias("key"),
        )
        .coalesce(1)
        .select(fail("value").alias("value"), "key")
    )
    writer = df.write.format("tidelog").mode("append").option("topic", topic)
    for name, value in {**connection, "batchBytes": "2000"}.items():
        writer = writer.option(name, value)
    writer.save()
    assert marker.exists(), "the task never failed: the retry was not exercised"
    written = [r for p in range(2) for r in records(stores, topic, p)]
    values = sorted(r.value.decode() for r in written)
    assert values == sorted(f"v{i}" for i in range(300))  # every row once


def test_a_write_lands_where_the_key_says(spark, connection, new_topic, stores):
    topic = new_topic(partitions=3)
    df = spark.createDataFrame(
        [("k1", "one", None), ("k2", "two", None), (None, "three", 2)],
        "key string, value string, partition int",
    )
    writer = df.write.format("tidelog").mode("append").option("topic", topic)
    for name, value in connection.items():
        writer = writer.option(name, value)
    writer.save()
    placed = {r.value.decode(): p for p in range(3) for r in records(stores, topic, p)}
    assert placed["one"] == partition_for_key(b"k1", 3)
    assert placed["two"] == partition_for_key(b"k2", 3)
    assert placed["three"] == 2


def test_a_write_keeps_headers_timestamps_and_bytes(spark, connection, new_topic, stores):
    # Spark hands the writer Arrow batches: structs, timestamps and binary come through them.
    topic = new_topic(partitions=1)
    when = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    df = spark.createDataFrame(
        [(b"\x00k", b"\xffv", [("h1", b"x"), ("h2", None)], when), (None, None, [], None)],
        "key binary, value binary, headers array<struct<key: string, value: binary>>, "
        "timestamp timestamp",
    )
    writer = df.write.format("tidelog").mode("append").option("topic", topic)
    for name, value in connection.items():
        writer = writer.option(name, value)
    writer.save()
    written = records(stores, topic, 0)
    assert len(written) == 2
    # Each row may be its own task, committing in either order: find them by what they hold.
    (first,) = [r for r in written if r.key is not None]
    (second,) = [r for r in written if r.key is None]
    assert (first.key, first.value) == (b"\x00k", b"\xffv")
    assert first.timestamp == when.timestamp() * 1000
    assert first.headers == (("h1", b"x"), ("h2", None))
    assert (second.value, second.headers) == (None, ())


def test_compaction_on_spark_equals_the_in_process_compactor(
    spark, dev, connection, new_topic, stores
):
    meta, objects = stores
    configs = {"cleanup.policy": "compact", "segment.ms": 1}
    names = [new_topic(partitions=1, configs=configs) for _ in range(2)]
    for name in names:
        for round_ in range(3):
            batch = [
                {"key": f"k{i % 3}", "value": f"v{round_}-{i}", "partition": 0} for i in range(6)
            ]
            assert call(dev, "POST", f"/v1/topics/{name}/records", {"records": batch})[0] == 200
    keeper = Housekeeper(
        meta, objects, Topics(meta, clock), clock_ms=clock, grace_ms=3_600_000, settle_ms=0
    )
    keeper.run(["roll"])
    first = Topics(meta, clock).get(names[0])
    compaction.compact(
        meta,
        objects,
        first.topic_id,
        0,
        without_leftovers(partition_entries(meta, first.topic_id, 0)),
        delete_retention_ms=86_400_000,
        now_ms=clock,
        grace_ms=3_600_000,
    )
    report = compact(spark, Connection.from_options(connection), topics=[names[1]])
    assert report.records_compacted == 15

    def view(name):
        return [(r.offset, r.key, r.value) for r in records(stores, name)]

    assert view(names[0]) == view(names[1])
    assert [key for _, key, _ in view(names[1])] == [b"k0", b"k1", b"k2"]  # the latest per key


def test_a_stream_from_topic_to_topic_commits_lag_offsets(
    spark, dev, connection, new_topic, stores, tmp_path
):
    source, sink = new_topic(partitions=2), new_topic(partitions=2)
    produce(dev, source, 0, [f"x{i}" for i in range(7)])
    produce(dev, source, 1, [f"y{i}" for i in range(5)])
    reader = spark.readStream.format("tidelog")
    options = {
        **connection,
        "subscribe": source,
        "startingOffsets": "earliest",
        "groupIdForLag": "spark-copy",
    }
    for name, value in options.items():
        reader = reader.option(name, value)
    writer = (
        reader.load()
        .selectExpr("key", "value", "partition")
        .writeStream.format("tidelog")
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "copy"))
        .trigger(availableNow=True)
    )
    for name, value in connection.items():
        writer = writer.option(name, value)
    writer.start().awaitTermination(120)
    copied = {p: [r.value for r in records(stores, sink, p)] for p in range(2)}
    assert copied == {
        0: [f"x{i}".encode() for i in range(7)],
        1: [f"y{i}".encode() for i in range(5)],
    }
    # What the query processed is the group's committed offsets, for lag like any consumer's.
    status, body = call(dev, "GET", "/v1/groups/spark-copy/offsets")
    assert status == 200
    assert {(r["partition"], r["offset"], r["lag"]) for r in body["offsets"]} == {
        (0, 7, 0),
        (1, 5, 0),
    }


def test_resegmenting_on_spark_rolls_every_partition(spark, dev, connection, new_topic, stores):
    meta, _ = stores
    topic = new_topic(partitions=2)
    for p in range(2):
        for i in range(3):
            produce(dev, topic, p, [f"p{p}-{i}"])
    found = Topics(meta, clock).get(topic)
    assert all(
        not e.is_segment for p in range(2) for e in partition_entries(meta, found.topic_id, p)
    )
    # The records are from 2023 (T0): kept forever, or the stack's own scheduled retention
    # may delete the new segments between the roll and the check below, as Kafka's would.
    Topics(meta, clock).alter_configs(topic, {"segment.ms": 1, "retention.ms": -1})
    time.sleep(0.01)
    report = resegment(spark, Connection.from_options(connection), topics=[topic], settle_ms=0)
    assert report.segments_rolled == 2
    for p in range(2):
        (entry,) = partition_entries(meta, found.topic_id, p)
        assert entry.is_segment
        assert [r.value for r in records(stores, topic, p)] == [
            f"p{p}-{i}".encode() for i in range(3)
        ]
