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


@pytest.fixture(scope="session")
def local_dirs(tmp_path_factory) -> dict[str, str]:
    """This test process's own staging and cache directories, not the template's /tmp ones:
    a directory belongs to one process (tidelog.log.claims), and another run of the suite, or
    an agent, may hold those."""
    return {
        name: str(tmp_path_factory.mktemp(name.lower()))
        for name in ("TIDELOG_STAGING_DIR", "TIDELOG_CACHE_DIR")
    }


@pytest.fixture
def function(dev, template, monkeypatch, local_dirs):
    """A fresh Lambda environment of a template function, pointed at the session's emulator."""
    environment = {}
    for spec in template.functions():
        environment.update(spec.environment)
    environment.update(local_dirs)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", dev.aws_url)
    runtime.reset()

    def make(logical_id: str) -> FunctionRuntime:
        (spec,) = [s for s in template.functions() if s.logical_id == logical_id]
        return FunctionRuntime(spec, template.arn(logical_id))

    yield make
    runtime.reset()


@pytest.fixture
def rest_event(api_event):
    """An API Gateway REST proxy event for a request, shaped like the recorded ones."""
    import base64

    def make(method, resource, path_parameters=None, body=None, content_type=None, query=None):
        event = api_event("get_cluster")
        path = resource
        for name, value in (path_parameters or {}).items():
            path = path.replace("{" + name + "}", str(value))
        binary = isinstance(body, bytes)
        headers = {"Content-Type": content_type} if content_type else {}
        event.update(
            resource=resource,
            path=path,
            httpMethod=method,
            headers=headers,
            multiValueHeaders={k: [v] for k, v in headers.items()},
            pathParameters={k: str(v) for k, v in (path_parameters or {}).items()} or None,
            queryStringParameters=query,
            multiValueQueryStringParameters={k: [v] for k, v in (query or {}).items()} or None,
            body=base64.b64encode(body).decode() if binary else body,
            isBase64Encoded=binary,
        )
        event["requestContext"] = {
            **event["requestContext"],
            "resourcePath": resource,
            "httpMethod": method,
        }
        return event

    return make
