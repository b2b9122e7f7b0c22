"""One chaos run: a `tidelog dev` stack, standalone agents beside its own, real clients, a
nemesis, a final read, and the checker's verdict (``tidelog chaos``; docs/reliability.md).

Everything runs as processes on this machine, on loopback ports. A run's folder keeps what
anyone needs to re-check it: ``history.jsonl`` (every operation), ``result.json`` (the
checker's verdict), ``schedule.json`` (the faults, from the seed) and ``logs/``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from tidelog.chaos import nemesis
from tidelog.chaos.checker import Result, check
from tidelog.chaos.history import HistoryWriter, read_history, write_history
from tidelog.chaos.nemesis import Fault
from tidelog.storage.faults import FaultFile

TOPIC = "chaos"
GROUP = "chaos-readers"
PARTITIONS = 6
TXN_TOPIC = "chaos-txn"  # the transactional workload's, apart: its markers take offsets
TXN_PARTITIONS = 3
TXN_PRODUCERS = (("txn0", 4.0), ("txn1", 4.0))  # name, transactions a second
STANDALONE_AGENTS = 2  # beside the dev stack's own: three in all
# Housekeeping races the workload: every schedule 60 times faster, rolls of objects older
# than 15 s (longer than any request lives here: a pause is 8 s), collection after 30 s.
HOUSEKEEPING = {"TIDELOG_ROLL_SETTLE_MS": "15000", "TIDELOG_GC_GRACE_MS": "30000"}
SCHEDULE_SPEEDUP = "60"
PRODUCERS = (  # role, name, records a second
    ("rdkafka-producer", "rd0", 40.0),
    ("rdkafka-producer", "rd1", 40.0),
    ("kafka-python-producer", "kp0", 20.0),
    ("http-producer", "http0", 10.0),
)
GROUP_MEMBERS = 2
MEMBER_PROTOCOLS = ("classic", "consumer")  # by member index: the group mixes them
# A consumer-protocol member's session, set by the coordinator: 12 s, heartbeats every 3 s
# (the classic members ask for 6 s; librdkafka times a heartbeat out after its interval).
CONSUMER_GROUPS = {
    "TIDELOG_CONSUMER_SESSION_TIMEOUT_MS": "12000",
    "TIDELOG_CONSUMER_HEARTBEAT_INTERVAL_MS": "3000",
    # Kafka's bounds (45 s and 5 s at least) lowered to let them be.
    "TIDELOG_CONSUMER_MIN_SESSION_TIMEOUT_MS": "12000",
    "TIDELOG_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS": "3000",
}
AGENT_STARTS = 3
# Clients yield the CPU to the system under test, as if on machines of their own: an
# idempotent librdkafka producer spins while its five requests in flight wait (librdkafka
# issue 3692), and on a shared machine that starves the very agents it waits for.
CLIENT_NICENESS = "10"


@dataclass(frozen=True)
class RunOptions:
    seconds: float
    seed: int
    out: Path
    progress: Callable[[str], None] = lambda _: None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Process:
    """A child process with its output in a file."""

    command: list[str]
    env: dict[str, str]
    log_path: Path
    popen: subprocess.Popen[bytes] = field(init=False)
    _log: IO[bytes] = field(init=False)

    def __post_init__(self) -> None:
        self._log = self.log_path.open("ab")
        self.popen = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            self.command, stdout=self._log, stderr=subprocess.STDOUT, env=self.env
        )

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, number: int) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(number)

    def stop(self, timeout: float = 20) -> None:
        self.signal(signal.SIGCONT)  # a paused process cannot hear SIGTERM
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        self._log.close()

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.popen.wait()
        self._log.close()

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output():
            if self.popen.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.command[3:5]} did not start:\n{self.output()[-3000:]}")
            time.sleep(0.1)


class Cluster:
    """The dev stack and the standalone agents, which the nemesis kills, pauses and skews."""

    def __init__(self, out: Path, seed: int) -> None:
        self.out = out
        self.fault_file = out / "faults.json"
        FaultFile.write(self.fault_file, {})
        self.api_port, self.aws_port, self.kafka_port = free_port(), free_port(), free_port()
        self.env = {
            **os.environ,
            "TIDELOG_FAULTS": "nemesis",
            "TIDELOG_FAULT_FILE": str(self.fault_file),
            "TIDELOG_FAULT_SEED": str(seed),
            **HOUSEKEEPING,
            **CONSUMER_GROUPS,
        }
        self.env.pop("TIDELOG_TABLE", None)
        self.env.pop("TIDELOG_BUCKET", None)
        self.dev = Process(
            [
                *(sys.executable, "-m", "tidelog.cli", "dev"),
                *("--api-port", str(self.api_port), "--aws-port", str(self.aws_port)),
                *("--kafka-port", str(self.kafka_port)),
                *("--schedule-speedup", SCHEDULE_SPEEDUP),
            ],
            self.env,
            out / "logs" / "dev.log",
        )
        self.dev.wait_for("Kafka", timeout=120)
        from tidelog.client import Http  # noqa: PLC0415 - extra: client

        with Http(self.api_url, timeout_s=30) as http:
            http.post("/v1/topics", {"name": TOPIC, "partitions": PARTITIONS})
            http.post("/v1/topics", {"name": TXN_TOPIC, "partitions": TXN_PARTITIONS})
        self.agent_ports = [free_port() for _ in range(STANDALONE_AGENTS)]
        self.agents: list[Process | None] = [None] * STANDALONE_AGENTS
        self.lock = threading.Lock()
        for i in range(STANDALONE_AGENTS):
            self.start_agent(i)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def bootstrap(self) -> str:
        ports = [self.kafka_port, *self.agent_ports]
        return ",".join(f"127.0.0.1:{port}" for port in ports)

    def start_agent(self, i: int, skew_ms: int = 0) -> None:
        """Start agent ``i`` on its port, over its own staging directory: a restarted agent
        recovers what its previous life staged."""
        env = {
            **self.env,
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.aws_port}",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "TIDELOG_STAGING_DIR": str(self.out / "agents" / f"{i}" / "staging"),
            "TIDELOG_CACHE_DIR": str(self.out / "agents" / f"{i}" / "cache"),
            "TIDELOG_CLOCK_SKEW_MS": str(skew_ms),
        }
        for attempt in range(AGENT_STARTS):
            agent = Process(
                [
                    *(sys.executable, "-m", "tidelog.cli", "agent"),
                    *("--kafka-port", str(self.agent_ports[i])),
                ],
                env,
                self.out / "logs" / f"agent-{i}.log",
            )
            try:
                agent.wait_for("Kafka on")
                break
            except RuntimeError:  # restarted, as a supervisor restarts a service
                agent.kill()
                if attempt == AGENT_STARTS - 1:
                    raise
        with self.lock:
            self.agents[i] = agent

    def agent(self, i: int) -> Process:
        with self.lock:
            agent = self.agents[i]
        assert agent is not None
        return agent

    def stop(self) -> None:
        for agent in self.agents:
            if agent is not None:
                agent.stop()
        self.dev.stop(timeout=30)


class Workload:
    """The clients: producers, an assign consumer and a consumer group, each its own process."""

    def __init__(self, cluster: Cluster, out: Path) -> None:
        self.cluster = cluster
        self.histories = out / "histories"
        self.histories.mkdir(parents=True, exist_ok=True)
        self.logs = out / "logs"
        self.producers = [self.start(role, name, rate=rate) for role, name, rate in PRODUCERS]
        self.producers += [
            self.start("txn-producer", name, rate=rate, topic=TXN_TOPIC)
            for name, rate in TXN_PRODUCERS
        ]
        self.producers.append(self.start("txn-reader", "txr0", topic=TXN_TOPIC))
        self.consumers = [
            self.start("assign-consumer", "a0"),
            self.start("committed-consumer", "c0", topic=TXN_TOPIC),
        ]
        self.members = [self.start_member(i) for i in range(GROUP_MEMBERS)]
        self._members_started = GROUP_MEMBERS
        self.lock = threading.Lock()

    def start(
        self, role: str, name: str, rate: float = 0.0, topic: str = TOPIC, *extra: str
    ) -> Process:
        partitions = TXN_PARTITIONS if topic == TXN_TOPIC else PARTITIONS
        command = [
            *("nice", "-n", CLIENT_NICENESS),
            *(sys.executable, "-m", "tidelog.chaos.workers", role, "--name", name),
            *("--history", str(self.histories / f"{name}.jsonl"), "--topic", topic),
            *("--bootstrap", self.cluster.bootstrap, "--api", self.cluster.api_url),
            *("--partitions", str(partitions), "--rate", str(rate), "--group", GROUP),
            *extra,
        ]
        return Process(command, dict(os.environ), self.logs / f"{name}.log")

    def start_member(self, index: int) -> Process:
        """Member ``g<index>``: even ones speak the classic protocol, odd ones KIP-848's, so
        the group is mixed (the first consumer-protocol member upgrades it)."""
        protocol = MEMBER_PROTOCOLS[index % len(MEMBER_PROTOCOLS)]
        return self.start("group-consumer", f"g{index}", 0.0, TOPIC, "--protocol", protocol)

    def new_member(self) -> Process:
        with self.lock:
            index = self._members_started
            self._members_started += 1
        member = self.start_member(index)
        with self.lock:
            self.members.append(member)
        return member

    def kill_member(self, pick: int) -> str:
        with self.lock:
            live = [m for m in self.members if m.popen.poll() is None]
            victim = live[pick % len(live)]
            self.members.remove(victim)
        victim.kill()
        return victim.log_path.stem

    def stop_producers(self) -> None:
        for producer in self.producers:
            producer.signal(signal.SIGTERM)
        for producer in self.producers:
            producer.stop(timeout=60)

    def stop_consumers(self) -> None:
        for consumer in [*self.consumers, *self.members]:
            consumer.stop(timeout=30)

    def kill(self) -> None:
        for process in [*self.producers, *self.consumers, *self.members]:
            if process.popen.poll() is None:
                process.kill()


class Nemesis:
    """Carries out a schedule, one thread per lane, recording each fault as it starts and heals."""

    def __init__(self, cluster: Cluster, workload: Workload, history: HistoryWriter) -> None:
        self.cluster = cluster
        self.workload = workload
        self.history = history
        self.started = time.monotonic()
        self.failures: list[BaseException] = []

    def run(self, faults: Sequence[Fault]) -> list[threading.Thread]:
        lanes = [
            [f for f in faults if f.kind in nemesis.PROCESS_FAULTS],
            [f for f in faults if f.kind in nemesis.STORAGE_FAULTS],
        ]
        threads = [threading.Thread(target=self._lane, args=(lane,), daemon=True) for lane in lanes]
        for thread in threads:
            thread.start()
        return threads

    def _lane(self, faults: Sequence[Fault]) -> None:
        try:
            self._carry_out(faults)
        except BaseException as exc:  # the run fails with it, never goes on without faults
            self.failures.append(exc)
            raise

    def _carry_out(self, faults: Sequence[Fault]) -> None:
        for fault in faults:
            time.sleep(max(0.0, self.started + fault.start_s - time.monotonic()))
            detail = self._start(fault)
            self.history.record("invoke", "fault", fault=fault.kind, **detail)
            time.sleep(max(0.0, self.started + fault.end_s - time.monotonic()))
            self._heal(fault)
            self.history.record("ok", "fault", fault=fault.kind, **detail)

    def _start(self, fault: Fault) -> dict[str, Any]:
        agent = fault.target % STANDALONE_AGENTS
        if fault.kind == "kill-agent":
            self.cluster.agent(agent).kill()
            return {"agent": agent}
        if fault.kind == "pause-agent":
            self.cluster.agent(agent).signal(signal.SIGSTOP)
            return {"agent": agent}
        if fault.kind == "clock-skew":
            skew = nemesis.SKEW_MS if fault.target % 2 else -nemesis.SKEW_MS
            self.cluster.agent(agent).stop()
            self.cluster.start_agent(agent, skew_ms=skew)
            return {"agent": agent, "skew_ms": skew}
        if fault.kind == "rebalance-kill":
            joined = self.workload.new_member()  # the group rebalances ...
            time.sleep(1.5)
            killed = self.workload.kill_member(fault.target)  # ... and loses one midway
            return {"joined": joined.log_path.stem, "killed": killed}
        FaultFile.write(self.cluster.fault_file, nemesis.STORAGE_RATES[fault.kind])
        return {}

    def _heal(self, fault: Fault) -> None:
        agent = fault.target % STANDALONE_AGENTS
        if fault.kind == "kill-agent":
            self.cluster.start_agent(agent)
        elif fault.kind == "pause-agent":
            self.cluster.agent(agent).signal(signal.SIGCONT)
        elif fault.kind == "clock-skew":
            self.cluster.agent(agent).stop()
            self.cluster.start_agent(agent)
        elif fault.kind in nemesis.STORAGE_FAULTS:
            FaultFile.write(self.cluster.fault_file, {})


def final_reads(cluster: Cluster, history: HistoryWriter) -> None:
    """Every partition from its start to its high watermark, over Kafka and over HTTP, and the
    group's committed offsets."""
    from kafka import KafkaConsumer, TopicPartition  # noqa: PLC0415 - extra: chaos
    from tidelog.client import Http  # noqa: PLC0415 - extra: client

    with Http(cluster.api_url, timeout_s=30) as http:
        committed = http.get(f"/v1/groups/{GROUP}/offsets")
        offsets = {str(o["partition"]): int(o["offset"]) for o in committed.get("offsets", [])}
        history.record("ok", "committed", group=GROUP, offsets=offsets)
        for partition in range(PARTITIONS):
            records: list[list[Any]] = []
            offset = 0
            while True:
                path = f"/v1/topics/{TOPIC}/partitions/{partition}/records"
                answer = http.get(path, offset=offset)
                records += [[r["offset"], r["value"]] for r in answer["records"]]
                offset = int(answer["next_offset"])
                if offset >= int(answer["high_watermark"]):
                    break
            history.record("ok", "read", reader="http", partition=partition, records=records)
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap.split(","), enable_auto_commit=False
    )
    try:
        for partition in range(PARTITIONS):
            where = TopicPartition(TOPIC, partition)
            consumer.assign([where])
            consumer.seek_to_beginning(where)
            end = consumer.end_offsets([where])[where]
            read: list[list[Any]] = []
            deadline = time.monotonic() + 120
            while consumer.position(where) < end and time.monotonic() < deadline:
                for batch in consumer.poll(1000, max_records=5000).values():
                    read += [[m.offset, m.value.decode()] for m in batch if m.offset < end]
            history.record("ok", "read", reader="kafka", partition=partition, records=read)
    finally:
        consumer.close()


def final_committed_reads(cluster: Cluster, history: HistoryWriter) -> None:
    """The transactional topic read_committed to its last stable offset, over HTTP (filtered
    on the server) and over Kafka (filtered by kafka-python)."""
    from kafka import KafkaConsumer, TopicPartition  # noqa: PLC0415 - extra: chaos
    from tidelog.client import Http  # noqa: PLC0415 - extra: client

    with Http(cluster.api_url, timeout_s=30) as http:
        # Every producer has stopped: any end still unfinished (its agent killed while
        # writing markers) is finished by the timeout sweep within seconds.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            bounds = http.get(f"/v1/topics/{TXN_TOPIC}")["partitions"]
            if all(p["last_stable_offset"] == p["high_watermark"] for p in bounds):
                break
            time.sleep(1)
        for partition in range(TXN_PARTITIONS):
            records: list[list[Any]] = []
            offset = 0
            while True:
                path = f"/v1/topics/{TXN_TOPIC}/partitions/{partition}/records"
                answer = http.get(path, offset=offset, isolation="read_committed")
                records += [[r["offset"], r["value"]] for r in answer["records"]]
                offset = int(answer["next_offset"])
                if offset >= int(answer["last_stable_offset"]):
                    break
            history.record("ok", "txn-read", reader="http", partition=partition, records=records)
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap.split(","),
        enable_auto_commit=False,
        isolation_level="read_committed",
    )
    try:
        for partition in range(TXN_PARTITIONS):
            where = TopicPartition(TXN_TOPIC, partition)
            consumer.assign([where])
            consumer.seek_to_beginning(where)
            end = consumer.end_offsets([where])[where]  # the last stable offset
            read: list[list[Any]] = []
            deadline = time.monotonic() + 120
            while consumer.position(where) < end and time.monotonic() < deadline:
                for batch in consumer.poll(1000, max_records=5000).values():
                    read += [[m.offset, m.value.decode()] for m in batch if m.offset < end]
            history.record("ok", "txn-read", reader="kafka", partition=partition, records=read)
    finally:
        consumer.close()


def run(options: RunOptions) -> Result:
    out = options.out
    (out / "logs").mkdir(parents=True, exist_ok=True)
    faults = nemesis.schedule(options.seed, options.seconds)
    (out / "schedule.json").write_text(json.dumps([asdict(f) for f in faults], indent=1))
    options.progress(f"seed {options.seed}: {len(faults)} faults over {options.seconds:.0f} s")
    cluster = Cluster(out, options.seed)
    workload: Workload | None = None
    try:
        (out / "histories").mkdir(exist_ok=True)
        control = HistoryWriter(out / "histories" / "nemesis.jsonl", "nemesis")
        final = HistoryWriter(out / "histories" / "final.jsonl", "final")
        workload = Workload(cluster, out)
        options.progress(f"cluster up: agents {cluster.bootstrap}, API {cluster.api_url}")
        control.record("invoke", "fault", fault="housekeeping", speedup=int(SCHEDULE_SPEEDUP))
        nemesis_ = Nemesis(cluster, workload, control)
        lanes = nemesis_.run(faults)
        deadline = time.monotonic() + options.seconds
        while time.monotonic() < deadline:
            time.sleep(min(10.0, max(0.0, deadline - time.monotonic())))
            left = max(0.0, deadline - time.monotonic())
            options.progress(f"{options.seconds - left:.0f} / {options.seconds:.0f} s")
        for lane in lanes:
            lane.join()
        if nemesis_.failures:
            raise RuntimeError(f"the nemesis failed: {nemesis_.failures[0]!r}")
        control.record("ok", "fault", fault="housekeeping", speedup=int(SCHEDULE_SPEEDUP))
        options.progress("healed; producers flushing")
        workload.stop_producers()
        time.sleep(5)  # consumers catch up
        workload.stop_consumers()
        options.progress("final read")
        final_reads(cluster, final)
        final_committed_reads(cluster, final)
        control.close()
        final.close()
    finally:
        if workload is not None:  # after a failure: no client outlives its run
            workload.kill()
        cluster.stop()
    ops = read_history(sorted((out / "histories").glob("*.jsonl")))
    write_history(out / "history.jsonl", ops)
    result = check(ops)
    (out / "result.json").write_text(json.dumps(result.summary(), indent=1))
    return result
