"""The nemesis's switch for the stores' faults (tidelog.storage.faults.FaultFile): rates read
from a file another process rewrites, applied to the calls they name, and the faults counted."""

from __future__ import annotations

import json
import os

import pytest

from tidelog.storage import StorageUnavailableError
from tidelog.storage.faults import AWS_LATENCY, FaultFile, FaultPlan


def plan_over(path):
    return FaultPlan.controlled(7, FaultFile(path, every_s=0))


def test_no_file_or_a_torn_one_means_no_faults(tmp_path):
    path = tmp_path / "faults.json"
    plan = plan_over(path)
    assert plan.run("GET", lambda: 1, mutates=False, kind="s3.get") == 1
    path.write_text('{"before": 1')  # half written
    assert plan.run("GET", lambda: 2, mutates=False, kind="s3.get") == 2


def test_rates_follow_the_file_and_strike_only_the_calls_named(tmp_path):
    path = tmp_path / "faults.json"
    plan = plan_over(path)
    FaultFile.write(path, {"only": "s3.", "before": 1.0})
    with pytest.raises(StorageUnavailableError):
        plan.run("GET", lambda: 1, mutates=False, kind="s3.get")
    assert plan.run("GetItem", lambda: 2, mutates=False, kind="dynamodb.get") == 2
    FaultFile.write(path, {})
    assert plan.run("GET", lambda: 3, mutates=False, kind="s3.get") == 3


def test_an_indefinite_fault_lands_the_write_and_loses_its_answer(tmp_path):
    path = tmp_path / "faults.json"
    plan = plan_over(path)
    FaultFile.write(path, {"after": 1.0})
    done = []
    with pytest.raises(StorageUnavailableError) as failure:
        plan.run("PUT", lambda: done.append(1), mutates=True, kind="s3.put")
    assert done == [1]
    assert failure.value.ambiguous


def test_latency_and_spikes_come_from_the_file(tmp_path):
    path = tmp_path / "faults.json"
    slept = []
    plan = FaultPlan.controlled(7, FaultFile(path, every_s=0))
    plan.sleep = slept.append
    FaultFile.write(path, {"latency": "aws", "spike": 1.0, "spike_s": 1.5})
    plan.run("GET", lambda: b"", mutates=False, kind="s3.get", size=len)
    assert plan.latency is AWS_LATENCY
    assert slept[0] >= 1.5


def test_each_process_reports_what_it_injected_when_the_rates_change(tmp_path):
    path = tmp_path / "faults.json"
    plan = plan_over(path)
    FaultFile.write(path, {"before": 1.0})
    for _ in range(3):
        with pytest.raises(StorageUnavailableError):
            plan.run("GET", lambda: 1, mutates=False, kind="s3.get")
    FaultFile.write(path, {})
    plan.run("GET", lambda: 1, mutates=False, kind="s3.get")
    lines = (tmp_path / "faults.json.injected").read_text().splitlines()
    assert json.loads(lines[-1]) == {"pid": os.getpid(), "injected": 3}
    assert FaultFile.injected(path) == 3
