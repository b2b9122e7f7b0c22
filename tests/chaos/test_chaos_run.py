"""The proof under faults, in every `make test`: a 60-second chaos run (tidelog.chaos) with a
fixed seed and every kind of fault, plain and transactional workloads, whose whole history must
hold no anomaly. `make chaos` runs
the long ones (docs/reliability.md)."""

from __future__ import annotations

import itertools
import json

from tidelog.chaos import nemesis
from tidelog.chaos.history import read_history
from tidelog.chaos.run import RunOptions, run
from tidelog.storage.faults import FaultFile

SEED = 1  # every kind of fault within 60 s (the schedule test below holds it to that)
SECONDS = 60


def test_the_schedule_has_every_fault_kind_within_a_minute():
    kinds = {f.kind for f in nemesis.schedule(SEED, SECONDS)}
    assert kinds == set(nemesis.FAULTS)


def test_the_schedule_is_the_seeds_and_heals_before_the_end():
    first, again = nemesis.schedule(7, 600), nemesis.schedule(7, 600)
    assert first == again
    assert first != nemesis.schedule(8, 600)
    assert all(f.start_s >= 5 and f.end_s <= 595 for f in first)
    for lane in (nemesis.PROCESS_FAULTS, nemesis.STORAGE_FAULTS):
        windows = [f for f in first if f.kind in lane]
        assert all(a.end_s <= b.start_s for a, b in itertools.pairwise(windows))


def test_a_minute_of_faults_loses_duplicates_and_reorders_nothing(tmp_path):
    result = run(RunOptions(SECONDS, SEED, tmp_path, progress=print))
    summary = result.summary()
    assert result.valid, f"seed {SEED}, history {tmp_path / 'history.jsonl'}:\n" + json.dumps(
        summary["anomalies"], indent=1
    )
    assert summary["counts"]["send:ok"] >= 3000
    ops = read_history([tmp_path / "history.jsonl"])
    struck = {op.value["fault"] for op in ops if op.f == "fault" and op.type == "ok"}
    assert struck >= set(nemesis.FAULTS)
    assert FaultFile.injected(tmp_path / "faults.json") > 0  # the storage faults did strike
    assert summary["counts"].get("commit:ok", 0) > 0  # the group made progress
    # The transactional workload ran through the faults, and was read read_committed.
    # (A transaction is a dozen round trips to the one emulator the whole run shares, under
    # faults: a few a producer in a minute.)
    assert summary["counts"].get("txn:ok", 0) >= 5
    assert summary["counts"].get("txn-poll:ok", 0) > 0
    assert summary["counts"].get("txn-read:ok", 0) == 6  # 3 partitions, Kafka and HTTP
