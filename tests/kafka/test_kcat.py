"""kcat, librdkafka's command-line client as users run it, against the agent of `tidelog dev`:
metadata, produce with keys and compression, consume, offsets by time and a balanced consumer
group, each checked against what the HTTP API reads."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid

import pytest
from tests.functional.test_fetch_api import fetch
from tests.functional.test_produce_api import call

pytestmark = pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat is not installed (make test installs it as root)"
)


def kcat(dev, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["kcat", "-b", dev.bootstrap, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def topic(dev):
    name = f"kcat-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": 3})[0] == 201
    return name


def test_kcat_lists_the_agent_and_its_topics(dev, topic):
    listed = json.loads(kcat(dev, "-L", "-J", "-t", topic).stdout)
    assert [b["name"] for b in listed["brokers"]] == [dev.bootstrap]
    (described,) = listed["topics"]
    assert described["topic"] == topic
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produces_what_http_reads_and_consumes_it_back(dev, topic, codec):
    lines = "".join(f"user-{i % 5}:click {i}\n" for i in range(30))
    kcat(dev, "-P", "-t", topic, "-K:", "-z", codec, stdin=lines)
    consumed = [
        json.loads(line)
        for line in kcat(dev, "-C", "-t", topic, "-o", "beginning", "-e", "-J").stdout.splitlines()
    ]
    assert sorted(m["payload"] for m in consumed) == sorted(f"click {i}" for i in range(30))
    # What kcat read is what HTTP reads, at the same places.
    over_http = set()
    for partition in range(3):
        status, body = fetch(dev, topic, 0, partition)
        assert status == 200, body
        over_http |= {(partition, r["offset"], r["key"], r["value"]) for r in body["records"]}
    assert {(m["partition"], m["offset"], m["key"], m["payload"]) for m in consumed} == over_http


def test_kcat_finds_offsets_by_time_and_at_the_end(dev, topic):
    for value in ("a", "b", "c"):  # three requests, three timestamps
        kcat(dev, "-P", "-t", topic, "-p", "0", stdin=f"{value}\n")
    written = fetch(dev, topic, 0)[1]["records"]
    at = written[-1]["timestamp"]
    expected = next(r["offset"] for r in written if r["timestamp"] >= at)  # Kafka's rule
    assert f"{topic} [0] offset {expected}" in kcat(dev, "-Q", "-t", f"{topic}:0:{at}").stdout
    assert f"{topic} [0] offset 3" in kcat(dev, "-Q", "-t", f"{topic}:0:-1").stdout


def test_a_kcat_balanced_consumer_group_consumes_and_commits(dev, topic):
    kcat(dev, "-P", "-t", topic, "-K:", stdin="".join(f"k{i}:v{i}\n" for i in range(12)))
    settings = ["-X", "session.timeout.ms=6000", "-X", "auto.commit.interval.ms=100"]
    group = f"kcat-{uuid.uuid4().hex[:6]}"
    first = kcat(dev, "-G", group, *settings, "-o", "beginning", "-e", "-J", topic)
    assert sorted(json.loads(line)["payload"] for line in first.stdout.splitlines()) == sorted(
        f"v{i}" for i in range(12)
    )
    offsets = call(dev, "GET", f"/v1/groups/{group}/offsets")[1]["offsets"]
    assert sum(o["offset"] for o in offsets) == 12
    assert all(o["lag"] == 0 for o in offsets)
    kcat(dev, "-P", "-t", topic, "-K:", stdin="k99:v99\n")
    again = kcat(dev, "-G", group, *settings, "-e", "-J", topic)  # resumes from its commits
    assert [json.loads(line)["payload"] for line in again.stdout.splitlines()] == ["v99"]


def test_kcat_past_the_end_resets_to_the_earliest_offset(dev, topic):
    # A consumer whose position is out of range (past the end here; below the log start after
    # retention is the same answer) hears OFFSET_OUT_OF_RANGE and resets, as on Kafka. With null
    # records in the error's answer, librdkafka 2.0 threw the whole response away and read
    # nothing, forever.
    kcat(dev, "-P", "-t", topic, "-p", "0", stdin="".join(f"r{i}\n" for i in range(5)))
    read = kcat(
        dev, "-C", "-t", topic, "-p", "0", "-o", "1000", "-X", "auto.offset.reset=earliest",
        "-c", "5", "-f", "%o %s\n",
    )  # fmt: skip
    assert read.stdout.splitlines() == [f"{i} r{i}" for i in range(5)]
