"""Housekeeping on the local stack, on the template's schedules (sped up): runs roll into
segments, unreferenced objects are collected, and every record still reads back."""

from __future__ import annotations

import time

import pytest
from tests.functional.test_produce_api import call
from tests.support import devserver

from tidelog.local.stack import aws_client


@pytest.fixture(scope="module")
def fast_dev():
    # Maintenance every 0.5 s, collection every 2.5 s; runs roll at once, objects go after 1 s.
    process = devserver.start(
        "--schedule-speedup",
        "120",
        env={"TIDELOG_ROLL_SETTLE_MS": "0", "TIDELOG_GC_GRACE_MS": "1000"},
    )
    yield process
    process.stop()


def test_runs_roll_into_segments_and_old_objects_are_collected(fast_dev):
    name = "housekept"
    configs = {"segment.ms": 1, "segment.bytes": 2000}
    assert call(fast_dev, "POST", "/v1/topics", {"name": name, "configs": configs})[0] == 201
    for i in range(40):
        records = [{"key": f"k{i}", "value": f"value {i}"}]
        assert call(fast_dev, "POST", f"/v1/topics/{name}/records", {"records": records})[0] == 200
    s3 = aws_client("s3", fast_dev.aws_url, "us-east-1")
    bucket = s3.list_buckets()["Buckets"][0]["Name"]

    def keys(prefix):
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (keys("data/") or not keys("segments/")):
        time.sleep(0.5)
    segments = keys("segments/")
    assert keys("data/") == [], "flush objects outlived the grace period"
    assert any(k.endswith(".log") for k in segments)
    # Everything is in segments now: the partition's size is their bytes (DescribeLogDirs').
    status, body = call(fast_dev, "GET", f"/v1/topics/{name}?sizes=true")
    logs = [k for k in segments if k.endswith(".log")]
    on_s3 = sum(s3.head_object(Bucket=bucket, Key=k)["ContentLength"] for k in logs)
    assert (status, body["partitions"][0]["size_bytes"]) == (200, on_s3)
    assert "size_bytes" not in call(fast_dev, "GET", f"/v1/topics/{name}")[1]["partitions"][0]
    assert any(k.endswith(".index") for k in segments)
    assert any(k.endswith(".timeindex") for k in segments)
    status, body = call(fast_dev, "GET", f"/v1/topics/{name}/partitions/0/records?offset=0")
    assert status == 200
    assert [r["value"] for r in body["records"]] == [f"value {i}" for i in range(40)]
    status, body = call(fast_dev, "GET", f"/v1/topics/{name}/partitions/0/records?offset=17")
    assert body["records"][0]["offset"] == 17
