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
        deadline = time.monotonic() + 30
        while "Kafka on" not in output(self.log):
            assert self.process.poll() is None, output(self.log)
            assert time.monotonic() < deadline, output(self.log)
            time.sleep(0.1)
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.node_id = int(re.search(r"as node (\d+)", output(self.log)).group(1))

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=15) == 0, output(self.log)
        self.scratch.cleanup()


def output(log) -> str:
    log.seek(0)
    return log.read()
