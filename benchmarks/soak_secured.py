"""A secured agent under sustained load: SASL_SSL with SCRAM-SHA-512, every request authorized
by ACLs, sessions re-authenticated every 30 s (KIP-368; ``--reauth-ms``). Not part of
`make bench` (it runs for minutes); run it as ``python -m benchmarks.soak_secured --minutes 5``,
and with ``--plaintext`` for the same load on a PLAINTEXT listener without ACLs, the baseline.
``--gc-grace-s 20`` has the collector delete rolled-away objects 20 s after their roll (not the
stack's hour), so that collection runs while the consumers read: its schedule is every 5
minutes, and the table counts the objects it has deleted.

librdkafka produces at a steady rate (at its defaults: idempotent, acks all, five requests in
flight) while a group of two librdkafka consumers reads;
every window prints the agent's resident memory, the produce latency (produce() to delivery
report), the sessions renewed and the objects collected so far. At the end every acknowledged
record must have been consumed, and the log read whole must hold each acknowledged record once,
in the order produced: the run fails otherwise.
"""

from __future__ import annotations

import argparse
import itertools
import re
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from tests.support import devserver
from tests.support.agents import AgentProcess, output
from tests.support.dynamodb_local import free_port

from tidelog.local.certs import LocalCa

PASSWORD = "soak-password"
ADMIN, APP = "soak-admin", "soak-app"
WINDOW_S = 30


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--rate", type=int, default=100, help="records per second (default 100)")
    parser.add_argument("--reauth-ms", type=int, default=30_000, help="the agent's session bound")
    parser.add_argument(
        "--plaintext", action="store_true", help="the baseline: no TLS, SASL or ACLs"
    )
    parser.add_argument(
        "--gc-grace-s", type=int, help="collect rolled-away objects this long after their roll"
    )
    args = parser.parse_args()
    scratch = tempfile.TemporaryDirectory(prefix="tidelog-soak-tls-")
    ca = LocalCa.create(Path(scratch.name))
    issued = ca.issue_server("agent", ["127.0.0.1"])
    grace = {} if args.gc_grace_s is None else {"TIDELOG_GC_GRACE_MS": str(args.gc_grace_s * 1000)}
    dev = devserver.start(env=grace)
    port = free_port()
    try:
        plain = AdminClient({"bootstrap.servers": dev.bootstrap})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
        upserts = [UserScramCredentialUpsertion(u, info, PASSWORD.encode()) for u in (ADMIN, APP)]
        for future in plain.alter_user_scram_credentials(upserts).values():
            future.result(30)
        secured = (
            *("--ssl-certfile", str(issued.certfile), "--ssl-keyfile", str(issued.keyfile)),
            *("--authorizer", "acls", "--super-users", f"User:{ADMIN}"),
            *("--connections-max-reauth-ms", str(args.reauth_ms)),
        )
        protocol = "PLAINTEXT" if args.plaintext else "SASL_SSL"
        agent = AgentProcess(
            dev, "--listeners", f"{protocol}://:{port}", *(() if args.plaintext else secured)
        )
        cafile = None if args.plaintext else str(ca.cafile)
        try:
            return _soak(dev, agent, port, cafile, args.minutes * 60, args.rate)
        finally:
            agent.stop()
    finally:
        dev.stop()
        scratch.cleanup()


def _settings(user: str, port: int, cafile: str | None) -> dict[str, str]:
    if cafile is None:
        return {"bootstrap.servers": f"127.0.0.1:{port}"}
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": cafile,
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": PASSWORD,
    }


def _grant(admin: AdminClient, *, acls: bool) -> str:
    topic = f"soak-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 6, 1)])[topic].result(30)
    if not acls:
        return topic
    principal = f"User:{APP}"
    bindings = [
        AclBinding(
            kind, name, ResourcePatternType.PREFIXED, principal, "*", op, AclPermissionType.ALLOW
        )
        for kind, name, ops in (
            (ResourceType.TOPIC, "soak-", (AclOperation.WRITE, AclOperation.READ)),
            (ResourceType.GROUP, "soak-", (AclOperation.READ,)),
        )
        for op in ops
    ]
    for future in admin.create_acls(bindings).values():
        future.result(30)
    return topic


def _soak(
    dev: devserver.DevProcess,
    agent: AgentProcess,
    port: int,
    cafile: str | None,
    seconds: float,
    rate: int,
) -> int:
    admin = AdminClient(_settings(ADMIN, port, cafile))
    topic = _grant(admin, acls=cafile is not None)
    acked: set[str] = set()
    consumed: set[str] = set()
    latencies: list[float] = []
    lock = threading.Lock()
    stop = threading.Event()

    def produce() -> None:
        # librdkafka's defaults but for the linger: idempotent, five requests in flight
        producer = Producer(
            {**_settings(APP, port, cafile), "linger.ms": 5, "enable.idempotence": True}
        )
        sent = 0
        start = time.monotonic()
        while not stop.is_set():
            value = str(sent)
            began = time.monotonic()

            def delivered(err, msg, value=value, began=began) -> None:
                if err is None:
                    with lock:
                        acked.add(value)
                        latencies.append((time.monotonic() - began) * 1000)

            producer.produce(topic, value.encode(), callback=delivered)
            sent += 1
            producer.poll(0)
            ahead = sent / rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
        producer.flush(60)

    def consume(done: threading.Event) -> None:
        consumer = Consumer(
            {
                **_settings(APP, port, cafile),
                "group.id": "soak-group",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([topic])
        while not done.is_set():
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                with lock:
                    consumed.add(message.value().decode())
        consumer.close()

    drained = threading.Event()
    threads = [threading.Thread(target=produce)] + [
        threading.Thread(target=consume, args=(drained,)) for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    print(
        "| minute | agent RSS, MiB | produce p50 / p99, ms | acked | consumed | sessions renewed "
        "| objects collected |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        time.sleep(WINDOW_S)
        with lock:
            window, latencies[:] = sorted(latencies), []
            counts = len(acked), len(consumed)
        p50 = statistics.median(window) if window else float("nan")
        p99 = window[int(len(window) * 0.99)] if window else float("nan")
        renewed = len(re.findall(r"renewed", output(agent.log)))
        minute = (time.monotonic() - started) / 60
        print(
            f"| {minute:.1f} | {_rss_mib(agent.process.pid):.0f} | {p50:.1f} / {p99:.1f} | "
            f"{counts[0]:,} | {counts[1]:,} | {renewed} | {_collected(dev.output()):,} |",
            flush=True,
        )
    stop.set()
    threads[0].join()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with lock:
            if acked <= consumed:
                break
        time.sleep(1)
    drained.set()
    for thread in threads[1:]:
        thread.join()
    missing = acked - consumed
    print(
        f"\nacked {len(acked):,}, consumed {len(consumed):,}, "
        f"acked but never consumed {len(missing)}"
    )
    logged = _log_history(topic, port, cafile)
    stored = {str(v) for values in logged for v in values}
    duplicated = sum(len(values) - len(set(values)) for values in logged)
    reordered = sum(1 for values in logged for a, b in itertools.pairwise(values) if b < a)
    lost = len(acked - stored)
    print(
        f"the log: {lost} acked but not in it, {duplicated} duplicated, "
        f"{reordered} out of the order produced; {_collected(dev.output()):,} objects collected"
    )
    return 1 if missing or lost or duplicated or reordered else 0


def _log_history(topic: str, port: int, cafile: str | None) -> list[list[int]]:
    """The log itself, each partition read whole from its start, in order. A record that
    cannot be read (its object collected while the log still pointed at it) fails the run."""
    consumer = Consumer(
        {**_settings(APP, port, cafile), "group.id": f"soak-check-{uuid.uuid4().hex[:6]}"}
    )
    metadata = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    logged = []
    for partition in metadata:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
        consumer.assign([TopicPartition(topic, partition, low)])
        values: list[int] = []
        deadline = time.monotonic() + 120
        while len(values) < high - low:
            if time.monotonic() > deadline:
                raise RuntimeError(f"partition {partition}: {len(values)} of {high - low} read")
            message = consumer.poll(5)
            if message is None:
                continue
            if message.error() is not None:
                raise RuntimeError(f"partition {partition}: {message.error()}")
            values.append(int(message.value()))
        logged.append(values)
    consumer.close()
    return logged


def _collected(output: str) -> int:
    """Objects the collector has deleted so far, from its runs' reports in the dev log."""
    return sum(
        int(found.group(1))
        for line in output.splitlines()
        if "housekeeping done" in line and (found := re.search(r'"objects_deleted":\s*(\d+)', line))
    )


def _rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024


if __name__ == "__main__":
    raise SystemExit(main())
