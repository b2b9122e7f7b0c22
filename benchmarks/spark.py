"""tidelog on Spark: reading a topic into a DataFrame against a plain single-process loop of
ranged GETs and decoding over the same data; writing a DataFrame against the produce path."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from benchmarks.produce import _post, _topic, batch_bytes
from benchmarks.report import Section
from tidelog import runtime
from tidelog.local import dev
from tidelog.log.entries import partition_entries, without_leftovers
from tidelog.log.scan import committed_batches

RECORD = 100
BATCHES = 24  # of 10,000 records each: 240,000 records, 24 MB of values
PARTITIONS = 2


def _loop_read(topic_id: str) -> tuple[int, int]:
    """(records, value bytes): every entry GET and decoded, one after another."""
    meta, objects = runtime.metadata_store(), runtime.object_store()
    count = size = 0
    for partition in range(PARTITIONS):
        for entry in without_leftovers(partition_entries(meta, topic_id, partition)):
            data = objects.get(entry.object_key, entry.start, entry.end)
            for batch in committed_batches(entry, data):
                for record in batch.records():
                    count += 1
                    size += len(record.value or b"")
    return count, size


def run(progress: Any = print) -> Section:
    section = Section(
        "Spark",
        "A topic read into a DataFrame (`local[2]`, every value decoded and summed) against a "
        "plain single-process loop of ranged GETs and decoding over the same data; a DataFrame "
        "written into a topic against JSON produce requests of 1,000 records.",
        ("measurement", "baseline", "tidelog on Spark", "ratio"),
    )
    from pyspark.sql import SparkSession  # noqa: PLC0415 - the spark extra
    from pyspark.sql import functions as F  # noqa: PLC0415

    from tidelog.spark import TidelogDataSource  # noqa: PLC0415

    os.environ["PYSPARK_PYTHON"] = sys.executable
    server = dev.start("127.0.0.1", 0, 0, group_commit=False, kafka_port=0)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(TidelogDataSource)
    connection = {"cluster": "tidelog", "endpoint": server.emulator.url, "region": "us-east-1"}
    try:
        api = server.api_url
        topic = _topic(api, partitions=PARTITIONS)
        progress(f"  producing {BATCHES * 10_000:,} records")
        body = batch_bytes(10_000, RECORD)
        for i in range(BATCHES):
            _post(
                f"{api}/v1/topics/{topic}/partitions/{i % PARTITIONS}/batches",
                body,
                "application/vnd.kafka.record-batch",
            )
        topic_id = runtime.topics().get(topic).topic_id
        progress("  read: plain loop, then Spark")
        start = time.perf_counter()
        records, size = _loop_read(topic_id)
        loop_s = time.perf_counter() - start
        df = spark.read.format("tidelog").options(**connection, subscribe=topic).load()
        df.select(F.sum(F.length("value"))).collect()  # warm the workers
        start = time.perf_counter()
        (total,) = df.select(F.sum(F.length("value"))).collect()[0]
        spark_s = time.perf_counter() - start
        assert total == size, (total, size)
        cores = 2
        section.rows.append(
            (
                f"read {records:,} records of {RECORD} B",
                f"loop: {records / loop_s:,.0f} records/s, {size / loop_s / 1e6:.1f} MB/s (1 core)",
                f"{records / spark_s:,.0f} records/s, {size / spark_s / 1e6:.1f} MB/s "
                f"({records / spark_s / cores:,.0f} records/s per core)",
                f"{loop_s / spark_s:.2f}x (per core {loop_s / spark_s / cores:.2f}x)",
            )
        )
        progress("  write: JSON produce, then Spark")
        rows = 50_000
        sink = _topic(api, partitions=PARTITIONS)
        payload = "x" * RECORD
        start = time.perf_counter()
        for _ in range(rows // 1000):
            records_json = [{"key": f"k{i}", "value": payload} for i in range(1000)]
            _post(
                f"{api}/v1/topics/{sink}/records",
                json.dumps({"records": records_json}).encode(),
                "application/json",
            )
        produce_s = time.perf_counter() - start
        frame = (
            spark.range(rows)
            .select(
                F.concat(F.lit("k"), F.col("id").cast("string")).alias("key"),
                F.lit(payload).alias("value"),
            )
            .repartition(2)
        )
        start = time.perf_counter()
        frame.write.format("tidelog").options(**connection, topic=sink).mode("append").save()
        write_s = time.perf_counter() - start
        section.rows.append(
            (
                f"write {rows:,} records of {RECORD} B",
                f"JSON produce: {rows / produce_s:,.0f} records/s",
                f"{rows / write_s:,.0f} records/s",
                f"{produce_s / write_s:.2f}x",
            )
        )
    finally:
        spark.stop()
        server.stop()
    section.notes += [
        "Both reads go to the same emulator, on this 2-core machine; Spark's workers decode in "
        "parallel while the loop decodes in one process.",
        "The Spark write commits through the produce path too (stage, PUT, transaction), a "
        "batch per 1 MiB per partition per task, with no HTTP or JSON in the way.",
    ]
    return section
