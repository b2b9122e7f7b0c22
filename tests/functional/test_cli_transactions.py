"""`tidelog txn` and `tidelog consume --isolation` against `tidelog dev`: a transaction left
open is listed, described and aborted from the shell, and consume shows what each isolation
level reads."""

from __future__ import annotations

import io
import json
import sys
import uuid

import pytest

from tidelog.cli import main
from tidelog.client import Admin, Producer


@pytest.fixture
def tidelog(dev, monkeypatch, capsys):
    monkeypatch.setenv("TIDELOG_URL", dev.api_url)

    def run(*argv: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def test_a_hanging_transaction_is_found_described_and_aborted(dev, tidelog):
    topic, tid = f"cli-{uuid.uuid4().hex[:10]}", f"hang-{uuid.uuid4().hex[:8]}"
    with Admin(dev.api_url) as admin:
        admin.create_topic(topic, 1)
    with Producer(url=dev.api_url, transactional_id=tid) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.produce(topic, "committed-later?", partition=0)
        producer.flush()
        code, out, _ = tidelog("txn", "list", "--state", "Ongoing")
        assert code == 0
        assert any(line.split()[:2] == [tid, "Ongoing"] for line in out.splitlines())
        code, out, _ = tidelog("txn", "describe", tid)
        assert code == 0
        assert f"PARTITIONS        {topic}:0" in out
        code, out, _ = tidelog("consume", topic, "-o", "start", "-e")
        assert (code, out) == (0, "")  # read_committed: held back by the open transaction
        code, out, _ = tidelog(
            "consume", topic, "-o", "start", "-e", "--isolation", "read_uncommitted"
        )
        assert (code, out) == (0, "committed-later?\n")
        code, out, _ = tidelog("txn", "abort", tid, "-o", "json")
        assert code == 0
        assert json.loads(out)["state"] == "CompleteAbort"
    code, out, _ = tidelog("consume", topic, "-o", "start", "-e")
    assert (code, out) == (0, "")
    code, _, err = tidelog("txn", "abort", tid)
    assert code != 0
    assert "INVALID_TXN_STATE" in err
    code, _, err = tidelog("txn", "describe", f"never-{tid}")
    assert code != 0
    assert "TRANSACTIONAL_ID_NOT_FOUND" in err
