"""`tidelog produce` and `tidelog consume` against `tidelog dev`: golden outputs through the real
entry point, kcat's offsets and formats, groups, a JSON round trip that keeps keys, values,
headers and timestamps, and the progress bar under a real terminal (tmux)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from tidelog.cli import main
from tidelog.client import Admin, Consumer, Producer
from tidelog.partitioner import partition_for_key


@pytest.fixture
def tidelog(dev, monkeypatch, capsys):
    monkeypatch.setenv("TIDELOG_URL", dev.api_url)

    def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def make_topic(dev, partitions=3):
    name = f"cli-{uuid.uuid4().hex[:10]}"
    with Admin(dev.api_url) as admin:
        admin.create_topic(name, partitions)
    return name


def test_produce_and_consume_through_the_real_entry_point(dev):
    topic = make_topic(dev)
    env = {"TIDELOG_URL": dev.api_url, "PATH": "/usr/bin:/bin"}

    def tidelog(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tidelog.cli", *argv],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )

    produced = tidelog("produce", topic, "-k", "user-1", "-H", "src=cli", stdin="a\nb\nc\n")
    p = partition_for_key(b"user-1", 3)
    assert (produced.returncode, produced.stderr) == (0, "")
    assert produced.stdout == "".join(
        f"Produced to partition {p} at offset {o}\n" for o in range(3)
    )
    consumed = tidelog("consume", topic, "-o", "start", "-e", "-f", "%k=%v %p@%o [%h]")
    assert (consumed.returncode, consumed.stderr) == (0, "")
    assert consumed.stdout == "".join(
        f"user-1={v} {p}@{o} [src=cli]\n" for o, v in enumerate("abc")
    )

    missing = tidelog("consume", f"absent-{uuid.uuid4().hex[:8]}", "-e")  # consumers never create
    assert missing.returncode == 1
    assert missing.stderr.startswith("UNKNOWN_TOPIC_OR_PARTITION: ")
    usage = tidelog("consume", topic, "-o", "sideways")
    assert (usage.returncode, usage.stdout) == (2, "")
    assert "start, end, N, -N or @TIME" in usage.stderr


def test_offsets_counts_and_key_delimiters(dev, tidelog):
    topic = make_topic(dev, partitions=1)
    lines = "".join(f"k{i}:v{i}\n" for i in range(10))
    assert tidelog("produce", topic, "-K", ":", "-q", stdin=lines) == (
        0,
        f"produced 10 records to {topic} (1 partitions)\n",
        "",
    )
    assert tidelog("consume", topic, "-o", "-3", "-e") == (0, "v7\nv8\nv9\n", "")
    assert tidelog("consume", topic, "-o", "4", "-n", "2", "-f", "%o %k") == (0, "4 k4\n5 k5\n", "")
    assert tidelog("consume", topic, "-o", "end", "-e") == (0, "", "")
    code, out, _ = tidelog("consume", topic, "-o", "@0", "-n", "1", "-f", "%o")
    assert (code, out) == (0, "0\n"), "the first record at or after the epoch"
    code, out, _ = tidelog("consume", topic, "-o", "@-1h", "-e", "-f", "%o")
    assert (code, out.split()) == (0, [str(i) for i in range(10)])

    bad = tidelog("produce", topic, "-K", ":", stdin="no delimiter\n")
    assert bad[0] == 2
    assert "line 1 has no key delimiter" in bad[2]
    assert tidelog("produce", topic, "-k", "a", "-K", ":")[0] == 2
    assert tidelog("consume", topic, "-g", "g", "-p", "0")[0] == 2
    assert tidelog("consume", topic, "-g", "g", "-o", "5")[0] == 2
    assert tidelog("consume", topic, "-p", "7", "-e")[0] == 2


def test_a_group_consume_resumes_where_the_last_one_committed(dev, tidelog):
    topic = make_topic(dev, partitions=2)
    tidelog("produce", topic, "-q", stdin="".join(f"r{i}\n" for i in range(8)))
    group = f"cli-{uuid.uuid4().hex[:8]}"
    code, first, _ = tidelog("consume", topic, "-g", group, "-o", "start", "-n", "5")
    assert code == 0
    code, rest, _ = tidelog("consume", topic, "-g", group, "-o", "start", "-e")
    assert code == 0
    assert sorted(first.split() + rest.split()) == sorted(f"r{i}" for i in range(8))
    assert len(first.split()) == 5, "the rest was committed when the first one closed"


def test_json_lines_round_trip_a_topic_through_a_file(dev, tidelog, tmp_path):
    source, copy = make_topic(dev), make_topic(dev)
    with Producer({"url": dev.api_url}) as producer:
        for i in range(12):
            producer.produce(
                source,
                None if i == 3 else f"value {i} ✓",
                key=None if i % 4 == 0 else f"key-{i % 5}",
                headers=[("trace", f"t{i}".encode()), ("dup", b"1"), ("dup", None)],
                timestamp=1_700_000_000_000 + i,
            )
        producer.produce(source, b"\xff\xfe binary", key=b"\x00k", partition=1)
    code, dumped, _ = tidelog("consume", source, "-o", "start", "-e", "--format", "json")
    assert code == 0
    records = [json.loads(line) for line in dumped.splitlines()]
    assert len(records) == 13
    binary = next(r for r in records if r.get("encoding") == "base64")
    assert (binary["key"], binary["value"]) == ("AGs=", "//4gYmluYXJ5")
    dump = tmp_path / "dump.jsonl"
    dump.write_text(dumped)

    code, out, _ = tidelog("produce", copy, "--format", "json", "-q", str(dump))
    assert (code, out) == (0, f"produced 13 records to {copy} (3 partitions)\n")
    code, copied, _ = tidelog("consume", copy, "-o", "start", "-e", "--format", "json")

    def kept(items):
        keep = ("key", "value", "headers", "timestamp", "encoding")
        return sorted(json.dumps({k: r.get(k) for k in keep}, sort_keys=True) for r in items)

    assert kept(json.loads(line) for line in copied.splitlines()) == kept(records)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (Debian's tmux package)")
def test_on_a_terminal_a_progress_bar_draws_and_stdout_stays_clean(dev, tmp_path):
    """Under tmux: produce's bar on stderr while its stdout (a file) gets only the summary,
    then a table drawn by rich, where a pipe gets plain columns."""
    topic = make_topic(dev, partitions=1)
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"line {i}\n" for i in range(3000)))
    out, done = tmp_path / "out.txt", tmp_path / "done"
    tmux = [
        "tmux",
        "-L",
        f"tidelog-{uuid.uuid4().hex[:8]}",
        "-f",
        "/dev/null",
    ]  # a server of its own
    tidelog = f"TIDELOG_URL={dev.api_url} {sys.executable} -m tidelog.cli"
    command = (
        f"{tidelog} produce {topic} {lines} -q > {out}; "
        f"{tidelog} topic describe {topic}; echo $? > {done}; sleep 30"
    )
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "120", "-y", "10", command],
        check=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        screen = subprocess.run(
            [*tmux, "capture-pane", "-p", "-e", "-S", "-100"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)
    assert done.read_text().strip() == "0"
    assert "producing" in screen
    assert "━" in screen, f"a bar on the terminal: {screen!r}"
    assert out.read_text() == f"produced 3000 records to {topic} (1 partitions)\n"
    assert "\x1b[1m" in screen, f"rich's bold table header: {screen!r}"
    assert "3000" in screen.split("PARTITION")[-1], "the partition's records"


def test_groups_listed_described_and_sought(dev, tidelog, tmp_path):
    topic = make_topic(dev, partitions=2)
    tidelog("produce", topic, "-p", "0", "-q", stdin="a\nb\nc\nd\n")
    tidelog("produce", topic, "-p", "1", "-q", stdin="e\nf\n")
    group = f"cli-{uuid.uuid4().hex[:8]}"
    assert tidelog("consume", topic, "-g", group, "-o", "start", "-n", "6")[0] == 0

    code, out, _ = tidelog("group", "list")
    assert code == 0
    assert [group, "Empty", "0"] in [line.split() for line in out.splitlines()]

    code, out, _ = tidelog("group", "describe", group)
    assert code == 0
    head, partitions = out.split("\n\n")
    assert head.splitlines()[:2] == [f"GROUP       {group}", "STATE       Empty"]
    assert head.splitlines()[-1] == "MEMBERS     0"
    rows = [line.split() for line in partitions.splitlines()]
    assert rows[0] == [
        "TOPIC", "PARTITION", "MEMBER-ID", "COMMITTED", "HIGH-WATERMARK", "LAG", "LAG-MS"
    ]  # fmt: skip
    assert [r[:6] for r in rows[1:]] == [
        [topic, "0", "-", "4", "4", "0"],
        [topic, "1", "-", "2", "2", "0"],
    ]

    code, out, _ = tidelog("group", "seek", group, "--to", "start", "-o", "json")
    assert code == 0
    assert [(o["partition"], o["offset"]) for o in json.loads(out)] == [(0, 0), (1, 0)]
    positions = tmp_path / "offsets.txt"
    positions.write_text(f"# topic partition offset\n{topic} 0 3\n{topic} 1 1\n")
    assert tidelog("group", "seek", group, "--to", str(positions))[0] == 0
    code, out, _ = tidelog("consume", topic, "-g", group, "-e", "-f", "%p:%v")
    assert (code, sorted(out.split())) == (0, ["0:d", "1:f"])

    code, out, _ = tidelog("group", "describe", group, "-o", "json")
    described = json.loads(out)
    assert (described["group"], described["members"]) == (group, [])
    assert {o["partition"]: o["lag"] for o in described["offsets"]} == {0: 0, 1: 0}

    bad = tmp_path / "bad.txt"
    bad.write_text(f"{topic} zero 3\n")
    code, _, err = tidelog("group", "seek", group, "--to", str(bad))
    assert code == 2
    assert "'TOPIC PARTITION OFFSET'" in err
    with a_member_of(dev, topic, group):
        code, _, err = tidelog("group", "seek", group, "--to", "end")
        assert code == 1
        assert err.startswith("NON_EMPTY_GROUP: ")
        assert tidelog("group", "delete", group)[0] == 1
    assert tidelog("group", "delete", group) == (0, f"deleted {group}\n", "")
    code, _, err = tidelog("group", "delete", group)
    assert code == 1
    assert err.startswith("GROUP_ID_NOT_FOUND: ")


@contextlib.contextmanager
def a_member_of(dev, topic, group):
    """A member of the group, holding partitions, for as long as the with block lasts."""
    with Consumer({"url": dev.api_url, "group.id": group}) as consumer:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.1)
        yield consumer


def test_bench_produces_and_consumes_and_reports_rates_and_latencies(dev, tidelog):
    topic = make_topic(dev, partitions=2)
    code, out, err = tidelog("bench", "produce", topic, "-n", "2000", "-s", "100", "--keys", "7",
                             "-o", "json")  # fmt: skip
    assert (code, err) == (0, "")
    produced = json.loads(out)
    assert produced["records"] == 2000
    assert produced["records_per_s"] > 0
    assert (
        0 < produced["latency_p50_ms"] <= produced["latency_p99_ms"] <= produced["latency_max_ms"]
    )
    code, out, _ = tidelog("bench", "consume", topic, "-o", "json")
    consumed = json.loads(out)
    assert (code, consumed["records"]) == (0, 2000)
    assert consumed["mb_per_s"] > 0
    assert consumed["fetch_p50_ms"] <= consumed["fetch_max_ms"]
    code, out, _ = tidelog("bench", "consume", topic, "-n", "10")
    assert code == 0
    assert out.splitlines()[:2] == ["MEASURE        VALUE", "records        10"]
    # A producer creates a topic it names first where the cluster allows it (tidelog dev does);
    # a name no topic may have is refused.
    assert tidelog("bench", "produce", "bad!topic", "-n", "1")[0] == 1
