"""Clickstream -> per-minute page views -> another topic, on Spark, against `tidelog dev`.

    make run                                   # in one terminal
    .venv/bin/python docs/examples/clickstream.py

Produces a minute of clicks into `clicks`, reads the topic as a DataFrame, counts views per page
and minute, and appends the counts to `page-views` (exactly once: run it twice with the same
--write-id and the second run writes nothing new).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tidelog.spark import TidelogDataSource

T0 = 1_699_999_980_000  # on a minute boundary: 22:13:00 UTC


def post(api: str, path: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(  # noqa: S310 - the http API given
        f"{api}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request) as response:  # noqa: S310 - the http API given
            answer: dict[str, object] = json.loads(response.read())
            return answer
    except urllib.error.HTTPError as error:
        answer = json.loads(error.read())
        if answer.get("error") != "TOPIC_ALREADY_EXISTS":
            raise
        return answer


def seed(api: str) -> None:
    post(api, "/v1/topics", {"name": "clicks", "partitions": 3})
    post(api, "/v1/topics", {"name": "page-views", "partitions": 1})
    pages = ["/", "/pricing", "/docs"]
    clicks = [
        {
            "key": f"user-{i % 7}",
            "value": json.dumps({"page": pages[i % 3]}),
            "timestamp": T0 + i * 1000,
        }
        for i in range(120)
    ]
    post(api, "/v1/topics/clicks/records", {"records": clicks})


def run(spark: SparkSession, connection: dict[str, str], write_id: str) -> list[tuple[str, int]]:
    spark.dataSource.register(TidelogDataSource)
    clicks = spark.read.format("tidelog").options(**connection, subscribe="clicks").load()
    views = (
        clicks.select(
            F.get_json_object(F.col("value").cast("string"), "$.page").alias("page"),
            F.date_trunc("minute", "timestamp").alias("minute"),
        )
        .groupBy("minute", "page")
        .count()
    )
    out = views.select(
        F.col("page").alias("key"),
        F.to_json(F.struct("minute", "page", "count")).alias("value"),
    )
    (
        out.write.format("tidelog")
        .options(**connection, topic="page-views", writeId=write_id)
        .mode("append")
        .save()
    )
    return sorted((r.page, r["count"]) for r in views.collect())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--api", default="http://127.0.0.1:8080")
    parser.add_argument("--aws", default="http://127.0.0.1:4566")
    parser.add_argument("--write-id", default="clickstream-example")
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")  # the emulator takes any credentials
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    seed(args.api)
    spark = SparkSession.builder.master("local[2]").appName("clickstream").getOrCreate()
    connection = {"cluster": "tidelog", "endpoint": args.aws, "region": "us-east-1"}
    for page, count in run(spark, connection, args.write_id):
        print(f"{page:10} {count}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
