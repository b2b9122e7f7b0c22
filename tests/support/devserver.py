"""``tidelog dev`` in a subprocess, as a user starts it.

It runs in its own process because moto's state is process-global: an in-process ``mock_aws``
anywhere in the test session would reset the backends under it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import IO, Any

from tests.support.dynamodb_local import free_port


@dataclass
class DevProcess:
    process: subprocess.Popen[str]
    api_port: int
    aws_port: int
    kafka_port: int
    log: IO[str]
    """Where its output goes: a file, never a pipe. Nobody reads a pipe while tests run, and
    once its 64 KiB fill (a metrics line per request does that in a few hundred requests)
    every handler blocks on ``print`` and the stack stops answering."""

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def aws_url(self) -> str:
        return f"http://127.0.0.1:{self.aws_port}"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    def stop(self, timeout: float = 15) -> tuple[int, str]:
        """SIGTERM, then the exit code and everything it printed."""
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            code = -9
        return code, self.output()

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()


FAST_GROUPS = {
    "TIDELOG_INITIAL_REBALANCE_DELAY_MS": "0",
    "TIDELOG_GROUP_MIN_SESSION_TIMEOUT_MS": "200",
    # Transactions past their timeout are aborted within half a second.
    "TIDELOG_TRANSACTION_CLEANUP_INTERVAL_MS": "500",
    # Consumer-protocol members heartbeat every three seconds (librdkafka's heartbeat timeout
    # too: never much shorter); a killed one is gone after twelve.
    "TIDELOG_CONSUMER_SESSION_TIMEOUT_MS": "12000",
    "TIDELOG_CONSUMER_HEARTBEAT_INTERVAL_MS": "3000",
    # Below Kafka's bounds (45 s and 5 s), so lowered as a test broker lowers them.
    "TIDELOG_CONSUMER_MIN_SESSION_TIMEOUT_MS": "1000",
    "TIDELOG_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS": "500",
}


def start(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> DevProcess:
    api_port, aws_port, kafka_port = free_port(), free_port(), free_port()
    command = [sys.executable, "-m", "tidelog.cli", "dev", *args]
    if "--api-port" not in args:
        command += ["--api-port", str(api_port)]
    if "--aws-port" not in args:
        command += ["--aws-port", str(aws_port)]
    if "--kafka-port" not in args:
        command += ["--kafka-port", str(kafka_port)]
    log = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 - lives with the process
    process = subprocess.Popen(
        command,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    dev = DevProcess(process, api_port, aws_port, kafka_port, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"tidelog dev exited early:\n{dev.output()}")
        try:
            if get_json(f"{dev.api_url}/v1/health")[0] == 200:
                return dev
        except OSError:
            time.sleep(0.2)
    dev.stop()
    raise RuntimeError("tidelog dev did not answer /v1/health within a minute")


def get_json(
    url: str, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")
