"""A real Apache Kafka broker: one JVM in KRaft mode (broker and controller in one process),
on free loopback ports, from the jars `make referees` copies out of Maven Central (pinned in
tests/referees/broker/pom.xml). The conformance suite sends it the same requests as tidelog's agent.

Its settings are the ones tidelog dev runs with wherever a setting shapes an answer (partitions
of an auto-created topic, group session bounds), so that the two answer alike where Kafka's
behaviour is the spec."""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from tests.support import devserver
from tests.support.dynamodb_local import free_port

from tidelog.local import broker as broker_settings

ROOT = Path(__file__).resolve().parents[2]
JARS = ROOT / ".referees" / "kafka"
START_SECONDS = 20  # the bound on a start; one takes 4-6 s on this machine

# Kafka's defaults, but where tidelog dev's stack differs in a way a request can see: the test
# session's group timings (devserver.FAST_GROUPS), under Kafka's names (tidelog.local.broker).
SESSION_GROUPS = {
    name: devserver.FAST_GROUPS[setting.env]
    for name, setting in broker_settings.SETTINGS.items()
    if setting.env in devserver.FAST_GROUPS
}
SETTINGS = {
    **SESSION_GROUPS,
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}


def missing() -> str | None:
    """Why a broker cannot start here, or None when it can."""
    if shutil.which("java") is None:
        return "no java on PATH: the real Kafka broker needs Java 17"
    if not any(JARS.glob("kafka_2.13-*.jar")):
        return f"no Kafka jars in {JARS}: `make referees` copies them from Maven Central"
    return None


class KafkaBroker:
    """One broker process; ``bootstrap`` once started, stopped by its PID."""

    def __init__(self, **settings: str) -> None:
        self.port, self.controller_port = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.scratch = Path(tempfile.mkdtemp(prefix="kafka-referee-"))
        self.log_path = self.scratch / "broker.log"
        properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
            f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.scratch / "data"),
            **SETTINGS,
            **settings,
        }
        config = self.scratch / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        (self.scratch / "log4j2.properties").write_text(_LOG4J)
        self.cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        java = [
            "java",
            "-Xms128m",
            "-Xmx512m",
            "-XX:TieredStopAtLevel=1",  # a short-lived test broker: start fast, not peak speed
            "-XX:+UseSerialGC",
            f"-Dlog4j2.configurationFile={self.scratch / 'log4j2.properties'}",
            "-cp",
            f"{JARS}/*",
        ]
        formatted = subprocess.run(
            [
                *java,
                "kafka.tools.StorageTool",
                "format",
                f"--cluster-id={self.cluster_id}",
                "-c",
                str(config),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if formatted.returncode != 0:
            raise RuntimeError(f"formatting the broker's log dir failed:\n{formatted.stderr}")
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [*java, "kafka.Kafka", str(config)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # stopped by its own PID and group, never by a pattern
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()  # a start that failed leaves no broker behind
            raise

    def _wait_ready(self) -> None:
        """Until the broker serves requests and both coordinators have loaded their topics, as
        a client would find them after its retries: the suite compares answers, not start-up."""
        deadline = time.monotonic() + START_SECONDS
        while not self._ready():
            if self.process.poll() is not None:
                raise RuntimeError(f"the Kafka broker exited at start:\n{self.output()}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the Kafka broker was not ready in {START_SECONDS} s:\n{self.output()[-4000:]}"
                )
            time.sleep(0.2)

    def _ready(self) -> bool:
        from tests.support.kio_wire import Connection

        try:
            with Connection(self.bootstrap, timeout=5) as conn:
                answer = conn.call(3, 12, {"topics": [], "allow_auto_topic_creation": False})
                if not answer["brokers"] or answer["controller_id"] != 1:
                    return False
                for key_type in (0, 1):  # a group's, then a transaction's coordinator
                    found = conn.call(10, 4, {"key_type": key_type, "coordinator_keys": ["ready"]})
                    if found["coordinators"][0]["error_code"] != "NONE":
                        return False
                init = {"transactional_id": None, "transaction_timeout": -1}
                return bool(conn.call(22, 4, init)["error_code"] == "NONE")
        except OSError:
            return False

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        stop_group(self.process, grace_s=20)
        self._log.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


_LOG4J = """\
status = error
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = out
"""


def stop_group(process: subprocess.Popen[bytes], *, grace_s: float) -> None:
    """A JVM started in its own session, stopped with its children: SIGTERM, then SIGKILL
    past ``grace_s``."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
