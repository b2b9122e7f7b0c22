"""A `tidelog agent` subprocess over a running `tidelog dev`'s stack, as a user starts one."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from tests.support import devserver
from tests.support.dynamodb_local import free_port

STOP_S = 15
"""How long an agent may take to exit after SIGTERM (it prints its threads' stacks at 10 s)."""

_RUNNING: set[AgentProcess] = set()


def running() -> frozenset[AgentProcess]:
    return frozenset(_RUNNING)


def reap(kept: frozenset[AgentProcess]) -> None:
    """Kill every agent running but those ``kept``: a test that failed midway must not leave
    its agents in the registry for the tests after it (tests/conftest.py keeps those of wider
    fixtures, started before the test)."""
    for agent in _RUNNING - kept:
        agent.kill()


class AgentProcess:
    """A `tidelog agent` subprocess over `tidelog dev`'s stack, found by its name."""

    def __init__(self, dev, *options: str, environ: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - lives with the process
        # Removed on stop, or with this object (a killed agent's staging outlives its process).
        self.scratch = tempfile.TemporaryDirectory(prefix="tidelog-agent-")
        env = {
            **os.environ,
            "AWS_ENDPOINT_URL": dev.aws_url,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "TIDELOG_STAGING_DIR": os.path.join(self.scratch.name, "staging"),
            "TIDELOG_CACHE_DIR": os.path.join(self.scratch.name, "cache"),
            **devserver.FAST_GROUPS,  # the group bounds are each agent's, as each broker's
            **(environ or {}),
        }
        env.pop("TIDELOG_TABLE", None)
        env.pop("TIDELOG_BUCKET", None)
        command = [
            *(sys.executable, "-m", "tidelog.cli", "agent", "--kafka-port", str(self.port)),
            *options,
        ]
        self.env = env
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        _RUNNING.add(self)
        deadline = time.monotonic() + 30
        while "Kafka on" not in output(self.log):
            assert self.process.poll() is None, output(self.log)
            assert time.monotonic() < deadline, output(self.log)
            time.sleep(0.1)
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.node_id = int(re.search(r"as node (\d+)", output(self.log)).group(1))

    def stop(self) -> None:
        """SIGTERM, as a user stops one: it must leave and exit cleanly within STOP_S."""
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"no exit {STOP_S} s after SIGTERM:\n{output(self.log)}") from None
        _RUNNING.discard(self)
        assert code == 0, output(self.log)
        self.scratch.cleanup()

    def kill(self) -> None:
        """SIGKILL: no shutdown; its registry item expires after its session."""
        _RUNNING.discard(self)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def output(log) -> str:
    log.seek(0)
    return log.read()
