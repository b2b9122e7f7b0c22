"""Kafka Connect's workers (connect-runtime 4.3.1, built by `make referees` into
.referees/clients/) against any bootstrap, their REST API on a free loopback port: distributed
(its config, offset and status topics compacted on the cluster, exactly-once source support on)
or standalone (its offsets in a local file, its connectors given at start). Connectors from
Kafka's own distribution are on the classpath (the file connectors, MirrorMaker 2's)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.dynamodb_local import free_port
from tests.support.java_clients import CLASSPATH
from tests.support.kafka_broker import stop_group

START_SECONDS = 90


def _distributed(name: str) -> dict[str, str]:
    return {
        "group.id": name,
        "config.storage.topic": f"{name}-configs",
        "offset.storage.topic": f"{name}-offsets",
        "status.storage.topic": f"{name}-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.storage.partitions": "3",
        "status.storage.partitions": "1",
        "exactly.once.source.support": "enabled",
    }


def _properties(settings: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in settings.items())


class ConnectWorker:
    """One worker, stopped by its PID: distributed, of group ``name``, or, given
    ``standalone`` connectors (name: config), standalone."""

    def __init__(
        self, bootstrap: str, name: str, standalone: dict[str, dict[str, str]] | None = None
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.scratch = Path(tempfile.mkdtemp(prefix="connect-"))
        properties = {
            "bootstrap.servers": bootstrap,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "offset.flush.interval.ms": "500",
            "listeners": self.url,
        }
        if standalone is None:
            properties.update(_distributed(name))
        else:
            properties["offset.storage.file.filename"] = str(self.scratch / "offsets")
        config = self.scratch / "worker.properties"
        config.write_text(_properties(properties))
        connectors = []
        for connector, settings in (standalone or {}).items():
            connectors.append(self.scratch / f"{connector}.properties")
            connectors[-1].write_text(_properties({"name": connector, **settings}))
        main = "ConnectDistributed" if standalone is None else "ConnectStandalone"
        self.log_path = self.scratch / "worker.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    "java",
                    "-Xmx512m",
                    "-cp",
                    CLASSPATH,
                    f"org.apache.kafka.connect.cli.{main}",
                    str(config),
                    *map(str, connectors),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._await_ready()
        except BaseException:
            self.stop()
            raise

    def _await_ready(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Connect worker exited:\n{self.log()}")
            try:
                self.call("GET", "/connectors")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        raise TimeoutError(f"no Connect REST API after {START_SECONDS} s:\n{self.log()}")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            raw = answer.read()
        return json.loads(raw) if raw else None

    def create(self, name: str, config: dict[str, str]) -> None:
        """The connector, created; retried while the worker's group is still rebalancing."""
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                self.call("POST", "/connectors", {"name": name, "config": config})
                return
            except urllib.error.HTTPError as exc:  # 409: a rebalance is under way
                if exc.code != 409 or time.monotonic() > deadline:
                    raise RuntimeError(f"{exc.code} {exc.read()!r}\n{self.log()}") from exc
                time.sleep(0.5)

    def running(self, connector: str) -> bool:
        try:
            status = self.call("GET", f"/connectors/{connector}/status")
        except urllib.error.HTTPError:
            return False
        states = [status["connector"]["state"], *(t["state"] for t in status["tasks"])]
        if "FAILED" in states:
            raise RuntimeError(f"{connector} failed: {status}\n{self.log()}")
        return bool(status["tasks"]) and set(states) == {"RUNNING"}

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-8000:]

    def stop(self) -> None:
        stop_group(self.process, grace_s=30)
        shutil.rmtree(self.scratch, ignore_errors=True)
