"""Execution environments behave as Lambda's: isolated, reused when warm, one event at a time."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from tidelog.local.lambdas import FunctionRuntime, invoke_as_lambda
from tidelog.local.template import FunctionSpec

HANDLER = """
import threading, time
STATE = {"invocations": 0, "busy": False}
ENVIRONMENT = object()

def handler(event, context):
    if event.get("fail"):
        raise ValueError("asked to fail")
    assert not STATE["busy"], "two invocations at once in one environment"
    STATE["busy"] = True
    STATE["invocations"] += 1
    time.sleep(event.get("sleep", 0))
    STATE["busy"] = False
    return {"environment": id(ENVIRONMENT), "invocations": STATE["invocations"],
            "remaining_ms": context.get_remaining_time_in_millis(),
            "function": context.function_name}
"""


def runtime(tmp_path: Path, source: str = HANDLER, **kwargs) -> FunctionRuntime:
    (tmp_path / "app.py").write_text(source)
    spec = FunctionSpec("Fn", "stack-Fn", tmp_path, "app.handler", {}, timeout_s=3, memory_mb=128)
    return FunctionRuntime(
        spec, "arn:aws:lambda:us-east-1:123456789012:function:stack-Fn", **kwargs
    )


def test_warm_environments_are_reused(tmp_path):
    fn = runtime(tmp_path)
    first, second = fn.invoke({}), fn.invoke({})
    assert first["environment"] == second["environment"]
    assert second["invocations"] == 2
    assert fn.environments == 1
    assert 0 < second["remaining_ms"] <= 3000
    assert second["function"] == "stack-Fn"


def test_concurrent_invocations_get_their_own_environments(tmp_path):
    fn = runtime(tmp_path)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(fn.invoke({"sleep": 0.2}))) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fn.environments == 4
    assert len({r["environment"] for r in results}) == 4


def test_the_environment_cap_makes_invocations_wait(tmp_path):
    fn = runtime(tmp_path, max_environments=2)
    start = time.monotonic()
    threads = [threading.Thread(target=fn.invoke, args=({"sleep": 0.2},)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fn.environments == 2
    assert time.monotonic() - start >= 0.4


def test_a_failed_cold_start_leaves_no_phantom_environment(tmp_path):
    fn = runtime(tmp_path, source="raise ImportError('broken deploy')\n", max_environments=1)
    for _ in range(2):  # would hang on the second call if the failed one still counted
        with pytest.raises(ImportError, match="broken deploy"):
            fn.invoke({})
    assert fn.environments == 0


def test_errors_are_reported_as_lambda_reports_them(tmp_path):
    payload, errored = invoke_as_lambda(runtime(tmp_path), {"fail": True})
    assert errored
    body = json.loads(payload)
    assert (body["errorType"], body["errorMessage"]) == ("ValueError", "asked to fail")
    assert body["stackTrace"]
    payload, errored = invoke_as_lambda(runtime(tmp_path), {})
    assert not errored
    assert json.loads(payload)["invocations"] == 1
