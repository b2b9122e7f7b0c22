"""Fixtures shared by every tier.

No test can reach real AWS: credentials are fake, the default endpoint is a closed local port,
and botocore refuses to send anything to a host outside the loopback.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import botocore.endpoint
import pytest

for _name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
    os.environ.pop(_name, None)
os.environ.update(
    AWS_ACCESS_KEY_ID="test",
    AWS_SECRET_ACCESS_KEY="test",
    AWS_DEFAULT_REGION="us-east-1",
    AWS_CONFIG_FILE=os.devnull,
    AWS_SHARED_CREDENTIALS_FILE=os.devnull,
    AWS_ENDPOINT_URL="http://127.0.0.1:9",  # discard port: a client nobody pointed fails fast
    AWS_EC2_METADATA_DISABLED="true",
)

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_send = botocore.endpoint.Endpoint._send


def _loopback_only(self: Any, request: Any) -> Any:
    host = urlsplit(request.url).hostname
    if host not in LOOPBACK:
        raise RuntimeError(f"a test tried to reach {request.url}: tests never leave the machine")
    return _send(self, request)


botocore.endpoint.Endpoint._send = _loopback_only

from tests.support import agents, devserver  # noqa: E402
from tests.support.dynamodb_local import DynamoDBLocal, unavailable  # noqa: E402

from tidelog.local.paths import template_path  # noqa: E402
from tidelog.local.stack import aws_client  # noqa: E402
from tidelog.local.template import Template  # noqa: E402

LONG = ("tests/conformance/", "tests/spark/", "tests/browser/", "tests/chaos/")
"""The long tests (`make test-long`): Kafka itself, its Java programs and franz-go as referees,
Spark jobs, the console in a browser, a minute of faults. Each starts processes of its own (a
JVM, a Go program, a Spark session, Chromium, three agents), so they take a third of the
suite's time for under 2% of its tests; CI runs them after `make test`."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        if item.path.relative_to(root).as_posix().startswith(LONG):
            item.add_marker(pytest.mark.long)


@pytest.fixture(autouse=True)
def _no_agent_outlives_its_test() -> Iterator[None]:
    before = agents.running()
    yield
    agents.reap(before)


@pytest.fixture(scope="session")
def template() -> Template:
    return Template(template_path())


@pytest.fixture(scope="session")
def dev() -> Iterator[devserver.DevProcess]:
    """One `tidelog dev` for the session: the locked AWS emulator plus the tidelog API. Groups
    rebalance at once and accept short sessions, so membership tests run in seconds. Its
    schedules run a thousand times slower (maintenance every 17 hours): housekeeping happens
    when a test runs it, never in the middle of a test that maintains partitions itself (a
    scheduled compaction once beat the Spark compaction job to its partition). Every function's
    calls are held to its role's policies; one refused fails the session, even where the code
    that made it recovered."""
    template = os.environ.get("TIDELOG_TEST_TEMPLATE")  # tests/functional/test_local_iam.py
    options = ("--template", template) if template else ()
    process = devserver.start("--schedule-speedup", "0.001", *options, env=devserver.FAST_GROUPS)
    yield process
    _, output = process.stop()
    refused = [line for line in output.splitlines() if "AccessDenied:" in line]
    assert not refused, "a role lacks a permission its code uses:\n" + "\n".join(refused[:5])


@pytest.fixture(scope="session")
def dev_client(dev: devserver.DevProcess) -> Callable[[str], Any]:
    def client(service: str) -> Any:
        return aws_client(service, dev.aws_url, "us-east-1")

    return client


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[DynamoDBLocal]:
    reason = unavailable()
    if reason:
        pytest.skip(f"DynamoDB Local unavailable: {reason}")
    server = DynamoDBLocal()
    yield server
    server.stop()
