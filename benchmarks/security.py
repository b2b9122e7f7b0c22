"""What TLS and SASL cost at the Kafka port: one `tidelog agent` with three listeners
(PLAINTEXT, SSL, SASL_SSL with SCRAM-SHA-512) over one `tidelog dev` stack, driven alike by
librdkafka, the ratio of each to PLAINTEXT from the same run (issue 32's target: SASL_SSL at
least 0.7x).

Each run produces 1 KiB messages to 6 partitions (linger 5 ms, acks all) as fast as librdkafka
takes them, then reads them back from the start; the listeners alternate, three runs each, and
the medians are reported. A login happens once per connection, so this measures the steady
cost of encryption, not of logging in; the login itself is timed apart (a new client's first
Metadata answer).
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from tests.support import devserver
from tests.support.agents import AgentProcess
from tests.support.dynamodb_local import free_port

from benchmarks.librdkafka import MESSAGE_BYTES, consume_rate, produce_rate
from benchmarks.report import Section
from tidelog.local.certs import LocalCa

MESSAGES = 30_000
PARTITIONS = 6
RUNS = 3
LOGINS = 10
USER, PASSWORD = "bench", "bench-password"


def run(progress: Any = print) -> Section:
    section = Section(
        "Security at the Kafka port: TLS and SASL/SCRAM against plaintext",
        f"One `tidelog agent` with three listeners over a `tidelog dev` stack; librdkafka "
        f"produces {MESSAGES:,} messages of {MESSAGE_BYTES} bytes to {PARTITIONS} partitions "
        f"(linger 5 ms, acks all), then reads them back; {RUNS} runs each, alternating, "
        "medians; the ratio is to PLAINTEXT. A new client's first Metadata answer (its "
        f"connection, handshake and login): median of {LOGINS}.",
        ("listener", "produce, msg/s (ratio)", "consume, msg/s (ratio)", "first answer, ms"),
    )
    scratch = tempfile.TemporaryDirectory(prefix="tidelog-bench-tls-")
    ca = LocalCa.create(Path(scratch.name))
    issued = ca.issue_server("agent", ["127.0.0.1"])
    ports = {"PLAINTEXT": free_port(), "SSL": free_port(), "SASL_SSL": free_port()}
    progress("  starting tidelog dev and an agent with three listeners")
    dev = devserver.start()
    agent = None
    try:
        agent = AgentProcess(
            dev,
            "--listeners",
            ",".join(f"{name}://:{port}" for name, port in ports.items()),
            "--ssl-certfile",
            str(issued.certfile),
            "--ssl-keyfile",
            str(issued.keyfile),
        )
        admin = AdminClient({"bootstrap.servers": dev.bootstrap})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
        upsert = UserScramCredentialUpsertion(USER, info, PASSWORD.encode())
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(30)
        settings = {name: _settings(name, port, str(ca.cafile)) for name, port in ports.items()}
        results: dict[str, dict[str, list[float]]] = {
            name: {"produce": [], "consume": []} for name in ports
        }
        for i in range(RUNS):
            for name in ports:
                progress(f"  run {i + 1}/{RUNS}: {name}")
                topic = f"bench-sec-{uuid.uuid4().hex[:8]}"
                admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
                results[name]["produce"].append(
                    produce_rate(settings[name], topic, MESSAGES, PARTITIONS)
                )
                results[name]["consume"].append(
                    consume_rate(settings[name], topic, MESSAGES, PARTITIONS)
                )
        logins = {name: _first_answers(settings[name]) for name in ports}
    finally:
        if agent is not None:
            agent.stop()
        dev.stop()
        scratch.cleanup()
    base = {k: statistics.median(results["PLAINTEXT"][k]) for k in ("produce", "consume")}
    for name in ports:
        produce = statistics.median(results[name]["produce"])
        consume = statistics.median(results[name]["consume"])
        section.rows.append(
            (
                name,
                f"{produce:,.0f} ({produce / base['produce']:.2f}x)",
                f"{consume:,.0f} ({consume / base['consume']:.2f}x)",
                f"{statistics.median(logins[name]):.1f}",
            )
        )
    return section


def _settings(listener: str, port: int, cafile: str) -> dict[str, str]:
    settings = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": listener}
    if listener != "PLAINTEXT":
        settings["ssl.ca.location"] = cafile
    if listener == "SASL_SSL":
        settings.update(
            {"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": USER, "sasl.password": PASSWORD}
        )
    return settings


def _first_answers(settings: dict[str, str]) -> list[float]:
    times = []
    for _ in range(LOGINS):
        start = time.perf_counter()
        AdminClient(settings).list_topics(timeout=30)
        times.append((time.perf_counter() - start) * 1000)
    return times
