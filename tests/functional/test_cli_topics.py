"""`tidelog topic` and `tidelog offsets` against `tidelog dev`: golden outputs through the real
entry point, the structured outputs, and exit codes 0, 1 (a Kafka error, named) and 2 (usage)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest
import yaml

from tidelog.cli import main
from tidelog.cli.topics import UsageError, parse_time


@pytest.fixture
def tidelog(dev, monkeypatch, capsys):
    monkeypatch.setenv("TIDELOG_URL", dev.api_url)

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def test_a_topic_through_the_real_entry_point(dev):
    name = f"cli-{uuid.uuid4().hex[:8]}"
    env = {"TIDELOG_URL": dev.api_url, "PATH": "/usr/bin:/bin"}

    def tidelog(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tidelog.cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )

    created = tidelog("topic", "create", name, "-p", "2", "-c", "retention.ms=86400000")
    assert (created.returncode, created.stdout) == (0, f"created {name} (2 partitions)\n")
    described = tidelog("topic", "describe", name)
    assert described.returncode == 0
    topic_id = described.stdout.splitlines()[1].split()[-1]
    assert described.stdout == (
        f"NAME        {name}\n"
        f"TOPIC ID    {topic_id}\n"
        "PARTITIONS  2\n"
        "CONFIG      cleanup.policy=delete\n"
        "CONFIG      compression.type=producer\n"
        "CONFIG      delete.retention.ms=86400000\n"
        "CONFIG      max.message.bytes=1048588\n"
        "CONFIG      message.timestamp.after.max.ms=3600000\n"
        "CONFIG      message.timestamp.before.max.ms=9223372036854775807\n"
        "CONFIG      message.timestamp.type=CreateTime\n"
        "CONFIG      retention.bytes=-1\n"
        "CONFIG      retention.ms=86400000\n"
        "CONFIG      segment.bytes=1073741824\n"
        "CONFIG      segment.ms=604800000\n"
        "\n"
        "PARTITION  LOG-START  HIGH-WATERMARK  RECORDS  BYTES\n"
        "0          0          0               0        0\n"
        "1          0          0               0        0\n"
    )
    again = tidelog("topic", "create", name)
    assert again.returncode == 1
    assert again.stderr.startswith("TOPIC_ALREADY_EXISTS: ")
    assert again.stdout == ""


def test_lifecycle_and_outputs(tidelog):
    name = f"cli-{uuid.uuid4().hex[:8]}"
    assert tidelog("topic", "create", name, "-p", "1")[0] == 0
    code, out, _ = tidelog("topic", "list")
    assert code == 0
    assert out.splitlines()[0].split() == ["NAME", "PARTITIONS", "CLEANUP", "RETENTION.MS"]
    assert [name, "1", "delete", "604800000"] in [line.split() for line in out.splitlines()]

    code, out, _ = tidelog("topic", "alter", name, "-c", "cleanup.policy=compact")
    assert (code, out) == (0, f"altered {name}: cleanup.policy=compact\n")
    code, out, _ = tidelog("topic", "add-partitions", name, "--num", "2")
    assert (code, out) == (0, f"{name}: 1 -> 3 partitions\n")

    code, out, _ = tidelog("topic", "describe", name, "-o", "json")
    described = json.loads(out)
    assert described["partitions"] == 3
    assert described["configs"]["cleanup.policy"] == "compact"
    assert [p["partition"] for p in described["offsets"]] == [0, 1, 2]
    assert [p["size_bytes"] for p in described["offsets"]] == [0, 0, 0]
    code, out, _ = tidelog("topic", "list", "-o", "yaml")
    assert name in [t["name"] for t in yaml.safe_load(out)]

    code, out, _ = tidelog("offsets", name, "--at", "earliest", "-o", "json")
    assert json.loads(out) == [{"partition": p, "offset": 0, "timestamp": -1} for p in range(3)]
    code, out, _ = tidelog("offsets", name, "--at=-1h")
    assert out.splitlines() == [
        "PARTITION  OFFSET  TIMESTAMP",
        "0          -1      -1",
        "1          -1      -1",
        "2          -1      -1",
    ]
    assert tidelog("topic", "delete", name) == (0, f"deleted {name}\n", "")
    code, _, err = tidelog("topic", "describe", name)
    assert code == 1
    assert err.startswith("UNKNOWN_TOPIC_OR_PARTITION: ")


def test_usage_errors_exit_2(tidelog):
    assert tidelog("topic", "alter", "t")[0] == 2
    assert tidelog("topic", "create", "t", "-c", "novalue")[0] == 2
    assert tidelog("offsets", "t", "--at", "yesterday")[0] == 2
    with pytest.raises(SystemExit) as usage:
        tidelog("topic", "frobnicate")
    assert usage.value.code == 2


def test_times():
    now = 1_700_000_000_000
    assert parse_time("earliest", now) == "earliest"
    assert parse_time("1234", now) == 1234
    assert parse_time("-1h", now) == now - 3_600_000
    assert parse_time("-30s", now) == now - 30_000
    assert parse_time("2023-11-14T22:13:20", now) == now
    assert parse_time("2023-11-14T23:13:20+01:00", now) == now
    with pytest.raises(UsageError):
        parse_time("soon", now)


def test_doctor_against_the_dev_stack(tidelog, dev):
    code, out, _ = tidelog("doctor")
    assert code == 0, out
    assert f"ok   endpoint     {dev.api_url} from TIDELOG_URL; unsigned (loopback)" in out
    assert "ok   health       ok, tidelog" in out
