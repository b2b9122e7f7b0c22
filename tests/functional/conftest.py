"""Functional tier: handlers fed API Gateway events, and the whole stack over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tidelog import runtime
from tidelog.local.lambdas import FunctionRuntime

EVENTS = Path(__file__).parent / "events"


@pytest.fixture
def api_event():
    def load(name: str) -> dict:
        return json.loads((EVENTS / f"{name}.json").read_text())

    return load


@pytest.fixture
def function(dev, template, monkeypatch):
    """A fresh Lambda environment of a template function, pointed at the session's emulator."""
    environment = {}
    for spec in template.functions():
        environment.update(spec.environment)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", dev.aws_url)
    runtime.reset()

    def make(logical_id: str) -> FunctionRuntime:
        (spec,) = [s for s in template.functions() if s.logical_id == logical_id]
        return FunctionRuntime(spec, template.arn(logical_id))

    yield make
    runtime.reset()
