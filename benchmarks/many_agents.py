"""Many agents: three `tidelog agent`s on one stack against one, driven by the same clients.

Every agent serves every partition (all state is in DynamoDB and S3); a client is shown the
agents of the zone it names, and each partition is led by one of them by rendezvous hash, so a
producer writing every partition spreads its requests over all the agents it is shown. Here one
agent serves zone ``solo`` and three serve zone ``trio``, all on one `tidelog dev` stack. Three
librdkafka producers (processes of their own, each bootstrapped at a different agent of its
zone) write the same 1 KiB messages round-robin over one topic; then three consumers read a
third of its partitions each. Runs alternate between the zones; medians reported. Beside the
rates: the agents' CPU per message (the fair figure when everything shares two cores) and the
flush objects written, since each agent gathers its own group commits.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from tests.support import devserver
from tests.support.agents import AgentProcess

from benchmarks.kafka import PRODUCTION, _cpu_seconds
from benchmarks.librdkafka import consume_rate, produce_rate
from benchmarks.report import Section
from benchmarks.wide import _flush_keys

CLIENTS = 3
MESSAGES = 30_000
"""Per client."""
PARTITIONS = 12
RUNS = 3
ZONES = {"solo": 1, "trio": 3}


def run(progress: Any = print) -> Section:
    section = Section(
        "Many agents",
        f"`tidelog dev`'s stack with one agent in one zone and three in another. {CLIENTS} "
        f"librdkafka producers, each bootstrapped at a different agent of its zone, write "
        f"{MESSAGES:,} messages of 1 KiB each round-robin over a topic of {PARTITIONS} "
        f"partitions (linger 5 ms, acks all); then {CLIENTS} consumers read "
        f"{PARTITIONS // CLIENTS} partitions each. {RUNS} alternating runs, medians.",
        ("measurement", "one agent", "three agents", "ratio"),
    )
    results: dict[str, list[dict[str, float]]] = {zone: [] for zone in ZONES}
    spread: dict[str, list[int]] = {}
    dev = devserver.start()
    agents = {
        zone: [AgentProcess(dev, "--zone", zone, environ=PRODUCTION) for _ in range(count)]
        for zone, count in ZONES.items()
    }
    try:
        _await_registry(agents)
        for i in range(RUNS):
            for zone, serving in agents.items():
                topic = f"agents-{zone}-{i}"
                spread[zone] = _create(serving[0].bootstrap, topic, zone)
                flushes = _flush_keys(dev.aws_url)
                measured = {}
                for phase in ("produce", "consume"):
                    cpu = sum(_cpu_seconds(agent.process.pid) for agent in serving)
                    measured[phase] = _drive(phase, [a.bootstrap for a in serving], topic, zone)
                    used = sum(_cpu_seconds(agent.process.pid) for agent in serving) - cpu
                    measured[f"{phase}_cpu_us"] = used / (CLIENTS * MESSAGES) * 1e6
                    if phase == "produce":
                        written = len(_flush_keys(dev.aws_url) - flushes)
                        measured["flushes"] = written / (CLIENTS * MESSAGES) * 10_000
                results[zone].append(measured)
                progress(
                    f"    {ZONES[zone]} agent(s), run {i + 1}: produce "
                    f"{measured['produce']:,.0f} msg/s, consume {measured['consume']:,.0f} msg/s"
                )
    finally:
        for serving in agents.values():
            for agent in serving:
                agent.stop()
        dev.stop()
    one, three = (
        {k: statistics.median(r[k] for r in results[zone]) for k in results[zone][0]}
        for zone in ZONES
    )
    rows = (
        ("produce msg/s, all clients", "produce", ",.0f", ""),
        ("consume msg/s, all clients", "consume", ",.0f", ""),
        ("agents' CPU per message produced", "produce_cpu_us", ".1f", " µs"),
        ("agents' CPU per message consumed", "consume_cpu_us", ".1f", " µs"),
        ("flush objects per 10,000 messages", "flushes", ".1f", ""),
    )
    for label, key, spec, unit in rows:
        section.rows.append(
            (
                label,
                f"{one[key]:{spec}}{unit}",
                f"{three[key]:{spec}}{unit}",
                f"{three[key] / one[key]:.2f}x (reported)",
            )
        )
    section.notes.append(
        "Runs (produce / consume msg/s): "
        + "; ".join(
            f"{ZONES[zone]} agent(s): "
            + ", ".join(f"{r['produce']:,.0f} / {r['consume']:,.0f}" for r in runs)
            for zone, runs in results.items()
        )
    )
    section.notes.append(
        f"Partitions led by each of the three agents (rendezvous hash): {spread['trio']}."
    )
    section.notes.append(
        "On two cores the agents add no CPU: the producers, the consumers, the emulator and "
        "every agent share the same two, so the rates show what three agents cost, not what "
        "they add. The figure that carries to agents on machines of their own is the CPU per "
        "message: each agent gathers group commits from a third of the requests, so the same "
        "load makes about three times the flush objects, each with the fixed cost of a PUT and "
        "a DynamoDB transaction through botocore; and a consumer fetches from every agent that "
        "leads one of its partitions, each fetch carrying fewer records. An idle agent (its "
        "registry heartbeat and long-poll watcher) used 3 ms of CPU a second when measured."
    )
    return section


def _await_registry(agents: dict[str, list[AgentProcess]], timeout: float = 30.0) -> None:
    """Until a client of each zone is shown every agent of it (agents register as they start;
    Metadata reads the registry at most once a second)."""
    deadline = time.monotonic() + timeout
    for zone, serving in agents.items():
        admin = AdminClient(_settings(serving[0].bootstrap, zone))
        while len(admin.list_topics(timeout=10).brokers) != len(serving):
            if time.monotonic() > deadline:
                raise RuntimeError(f"zone {zone}: not every agent registered in {timeout:.0f} s")
            time.sleep(0.5)


def _create(bootstrap: str, topic: str, zone: str) -> list[int]:
    """Creates the topic; returns how many of its partitions each agent of the zone leads."""
    admin = AdminClient(_settings(bootstrap, zone))
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    described = admin.list_topics(topic, timeout=10)
    leaders = [p.leader for p in described.topics[topic].partitions.values()]
    return [leaders.count(broker) for broker in sorted(described.brokers)]


def _drive(phase: str, bootstraps: list[str], topic: str, zone: str) -> float:
    """Messages per second over every client: from the first client's start to the last one's
    end, each client a process of its own."""
    clients = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "benchmarks.many_agents", phase),
                *(bootstraps[k % len(bootstraps)], topic, zone, str(k)),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(CLIENTS)
    ]
    spans = []
    for client in clients:
        out, _ = client.communicate(timeout=600)
        if client.returncode != 0:
            raise RuntimeError(f"a {phase} client failed ({client.returncode})")
        spans.append(json.loads(out.splitlines()[-1]))
    start, end = min(s for s, _ in spans), max(e for _, e in spans)
    return CLIENTS * MESSAGES / (end - start)


def _settings(bootstrap: str, zone: str) -> dict[str, str]:
    return {"bootstrap.servers": bootstrap, "client.id": f"bench,tidelog_az={zone}"}


def _drive_here(phase: str, bootstrap: str, topic: str, zone: str, k: int) -> tuple[float, float]:
    settings = _settings(bootstrap, zone)
    start = time.time()
    if phase == "produce":
        produce_rate(settings, topic, MESSAGES, PARTITIONS)
    else:
        mine = list(range(k, PARTITIONS, CLIENTS))
        consume_rate(settings, topic, MESSAGES, mine)
    return start, time.time()


if __name__ == "__main__":
    phase, bootstrap, topic, zone, k = sys.argv[1:]
    print(json.dumps(_drive_here(phase, bootstrap, topic, zone, int(k))), flush=True)
