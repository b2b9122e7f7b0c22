"""Maintenance at scale on Spark: compaction of ``cleanup.policy=compact`` topics and
re-segmenting (rolling) small objects, one Spark task per partition.

Each task runs the same code the scheduled functions run (``tidelog.log.lifecycle.compaction``
and ``tidelog.log.lifecycle.roll``) with the same conditional index swaps, so results are
identical and a job can run beside the functions safely; only the in-process size cap of
compaction is lifted.

    python -m tidelog.spark.jobs compact --cluster tidelog --endpoint http://127.0.0.1:4566
    spark-submit -m tidelog.spark.jobs resegment --cluster prod
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from pyspark.sql import SparkSession

from tidelog.log.entries import partition_entries, without_leftovers
from tidelog.log.lifecycle import compaction
from tidelog.log.lifecycle.housekeeping import Housekeeper, Report
from tidelog.log.topics import Topic, Topics
from tidelog.spark.options import Connection
from tidelog.spark.stores import stores

DEFAULT_GRACE_MS = 60 * 60 * 1000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _targets(
    connection: Connection, topics: Sequence[str] | None, policy: str | None
) -> list[tuple[str, int]]:
    meta, _ = stores(connection)
    found: list[Topic] = list(Topics(meta, _now_ms).list())
    return [
        (t.name, p)
        for t in found
        if (not topics or t.name in topics)
        and (policy is None or policy in t.config("cleanup.policy").split(","))
        for p in range(t.partitions)
    ]


def compact(
    spark: SparkSession,
    connection: Connection,
    *,
    topics: Sequence[str] | None = None,
    grace_ms: int = DEFAULT_GRACE_MS,
) -> Report:
    """Compact every partition of the compacted topics (or of ``topics``), in parallel."""

    def run(partitions: Iterable[tuple[str, int]]) -> Iterator[dict[str, object]]:
        meta, objects = stores(connection)
        by_name = {t.name: t for t in Topics(meta, _now_ms).list()}
        for name, partition in partitions:
            topic = by_name[name]
            entries = without_leftovers(partition_entries(meta, topic.topic_id, partition))
            stats = compaction.compact(
                meta,
                objects,
                topic.topic_id,
                partition,
                entries,
                delete_retention_ms=int(topic.config("delete.retention.ms")),
                now_ms=_now_ms,
                grace_ms=grace_ms,
                max_bytes=None,
            )
            yield {
                "segments_compacted": stats.segments_rewritten,
                "records_compacted": stats.records_removed,
            }

    return _gather(spark, _targets(connection, topics, "compact"), run)


def resegment(
    spark: SparkSession,
    connection: Connection,
    *,
    topics: Sequence[str] | None = None,
    grace_ms: int = DEFAULT_GRACE_MS,
    settle_ms: int = 60_000,
) -> Report:
    """Roll every partition's runs into segments now (as the roller would), in parallel."""

    def run(partitions: Iterable[tuple[str, int]]) -> Iterator[dict[str, object]]:
        meta, objects = stores(connection)
        keeper = Housekeeper(
            meta,
            objects,
            Topics(meta, _now_ms),
            clock_ms=_now_ms,
            grace_ms=grace_ms,
            settle_ms=settle_ms,
        )
        by_name = {t.name: t for t in Topics(meta, _now_ms).list()}
        for name, partition in partitions:
            report = Report()
            keeper.maintain(by_name[name], partition, {"roll"}, report)
            yield report.to_dict()

    return _gather(spark, _targets(connection, topics, None), run)


Job = Callable[[Iterable[tuple[str, int]]], Iterable[dict[str, object]]]


def _gather(spark: SparkSession, targets: list[tuple[str, int]], run: Job) -> Report:
    report = Report()
    if not targets:
        return report
    rdd = spark.sparkContext.parallelize(targets, len(targets))
    parts: list[dict[str, object]] = rdd.mapPartitions(run).collect()
    for part in parts:
        for name, value in part.items():
            if isinstance(value, int):
                setattr(report, name, getattr(report, name) + value)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tidelog.spark.jobs", description=__doc__.split("\n")[0])
    parser.add_argument("job", choices=["compact", "resegment"])
    parser.add_argument(
        "--cluster", help="the stack name (default $TIDELOG_CLUSTER, else tidelog: the dev stack)"
    )
    parser.add_argument("--bucket")
    parser.add_argument("--table")
    parser.add_argument("--region")
    parser.add_argument("--endpoint", help="an AWS endpoint (LocalStack, tidelog dev)")
    parser.add_argument("--topic", action="append", help="only these topics (repeatable)")
    args = parser.parse_args(argv)
    given = {
        k: v
        for k, v in vars(args).items()
        if v is not None and k in ("cluster", "bucket", "table", "region", "endpoint")
    }
    connection = Connection.from_options(given)
    spark = SparkSession.builder.appName(f"tidelog {args.job}").getOrCreate()
    job = compact if args.job == "compact" else resegment
    report = job(spark, connection, topics=args.topic)
    print(dataclasses.asdict(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
