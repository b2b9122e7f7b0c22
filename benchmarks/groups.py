"""Consumer groups on the local stack, over HTTP, with the assignment state machine executing
on the emulator: time from a join to a Stable assignment, and from a member's death to its
partitions being owned again; the classic protocol and KIP-848's (benchmarks.consumer_groups)
side by side."""

from __future__ import annotations

import os
import statistics
import time
import uuid
from typing import Any

from benchmarks import consumer_groups
from benchmarks.http import call
from benchmarks.produce import _topic
from benchmarks.report import Section
from tidelog.local import dev

SESSION_MS = 1000
HEARTBEAT_S = SESSION_MS / 3 / 1000  # Kafka's heartbeat.interval.ms default: a third


def _join(api: str, group: str, topic: str) -> str:
    status, body = call(
        api,
        "POST",
        f"/v1/groups/{group}/members",
        {"topics": [topic], "session_timeout_ms": SESSION_MS, "rebalance_timeout_ms": SESSION_MS},
    )
    assert status == 200, body
    return str(body["member_id"])


def _beat(api: str, group: str, member: str, generations: dict[str, int]) -> tuple[int, Any]:
    """A heartbeat naming the newest generation the member heard of: during a rebalance, that
    joins it (as a consumer does once it has given its partitions up)."""
    status, body = call(
        api,
        "POST",
        f"/v1/groups/{group}/members/{member}/heartbeat",
        {"generation_id": generations.get(member, 0)},
    )
    if status in (200, 409):
        generations[member] = int(body["generation_id"])
    return status, body


def _until_stable(api: str, group: str, member: str, pause: float) -> Any:
    deadline = time.perf_counter() + 60
    generations: dict[str, int] = {}
    while time.perf_counter() < deadline:
        status, body = _beat(api, group, member, generations)
        if status == 200:
            return body
        if status != 409:
            raise RuntimeError(f"heartbeat failed: {status} {body}")
        time.sleep(pause)
    raise RuntimeError(f"{group} never became Stable")


def _join_to_stable(api: str, topic: str) -> float:
    group = f"bench-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    member = _join(api, group, topic)
    _until_stable(api, group, member, 0.01)
    return (time.perf_counter() - start) * 1000


def _death_to_reassigned(api: str, topic: str, partitions: int) -> float:
    group = f"bench-{uuid.uuid4().hex[:8]}"
    members = [_join(api, group, topic), _join(api, group, topic)]
    deadline = time.perf_counter() + 60
    stable: dict[str, int] = {}
    generations: dict[str, int] = {}
    while len(stable) < len(members):  # both heartbeat until both own their share
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{group} never became Stable")
        for member in members:
            status, body = _beat(api, group, member, generations)
            if status not in (200, 409):
                raise RuntimeError(f"heartbeat failed: {status} {body}")
            if status == 200:
                stable[member] = sum(len(a["partitions"]) for a in body["assignment"])
        time.sleep(0.01)
    survivor = members[0]
    died = time.perf_counter()  # the other member's last heartbeat
    while time.perf_counter() - died < 60:
        time.sleep(HEARTBEAT_S)
        status, body = _beat(api, group, survivor, generations)
        if status not in (200, 409):
            raise RuntimeError(f"the survivor's heartbeat failed: {status} {body}")
        owned = (
            sum(len(a["partitions"]) for a in body.get("assignment", ())) if status == 200 else 0
        )
        if owned == partitions:
            return (time.perf_counter() - died) * 1000
    raise RuntimeError(f"{group}: the survivor never got every partition")


def run(progress: Any = print) -> Section:
    section = Section(
        "Consumer groups",
        "Over HTTP on `tidelog dev`, the assignment state machine executing on the emulator "
        "(rebalance delay 0; Kafka's group.initial.rebalance.delay.ms of 3 s would add to the "
        "first join), the classic protocol and KIP-848's consumer protocol on the same stack, "
        "ten runs each.",
        ("measurement", "protocol", "median", "worst", "vs classic", "what bounds it"),
    )
    settings = {
        "TIDELOG_INITIAL_REBALANCE_DELAY_MS": "0",
        "TIDELOG_GROUP_MIN_SESSION_TIMEOUT_MS": "500",
        "TIDELOG_CONSUMER_SESSION_TIMEOUT_MS": str(consumer_groups.SESSION_MS),
        "TIDELOG_CONSUMER_HEARTBEAT_INTERVAL_MS": str(consumer_groups.HEARTBEAT_MS),
        "TIDELOG_CONSUMER_MIN_SESSION_TIMEOUT_MS": str(consumer_groups.SESSION_MS),
        "TIDELOG_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS": str(consumer_groups.HEARTBEAT_MS),
    }
    os.environ.update(settings)
    server = dev.start("127.0.0.1", 0, 0, kafka_port=0)
    try:
        api = server.api_url
        topic = _topic(api, partitions=6)
        progress("  join -> assigned")
        joins = [_join_to_stable(api, topic) for _ in range(10)]
        kip848 = [consumer_groups.join_to_assigned(api, topic, 6, 0.01) for _ in range(10)]
        section.rows += _rows(
            "join -> every partition assigned",
            joins,
            kip848,
            "a Step Functions execution: start, Wait 0 s, Lambda task",
            "the same execution; the member is answered its epoch at once, its partitions at "
            "the heartbeat after the target is written (the HTTP API's heartbeats do not wait; "
            "the client polls at 0.1 s while it has nothing)",
        )
        progress("  death -> partitions reassigned")
        deaths = [_death_to_reassigned(api, topic, 6) for _ in range(10)]
        kip848 = [consumer_groups.death_to_reassigned(api, topic, 6) for _ in range(10)]
        section.rows += _rows(
            f"member death -> partitions reassigned (session {SESSION_MS} ms, heartbeats "
            f"every {HEARTBEAT_S * 1000:.0f} ms)",
            deaths,
            kip848,
            "session timeout + the survivor's next heartbeat, its join (one more) and a "
            "barrier poll (1 s) + a rebalance",
            "session timeout + the survivor's next heartbeat + the execution + one more "
            "heartbeat: no barrier to wait at",
        )
    finally:
        server.stop()
        for name in settings:
            os.environ.pop(name, None)
    section.notes.append(
        "Expiry is found by the next operation on the group (here the survivor's heartbeat), "
        "never by DynamoDB TTL; so death-to-reassignment is the session timeout plus at most "
        "one heartbeat interval plus one rebalance."
    )
    return section


def _rows(
    what: str, classic: list[float], kip848: list[float], classic_why: str, kip848_why: str
) -> list[tuple[str, ...]]:
    ratio = statistics.median(kip848) / statistics.median(classic)
    return [
        (what, "classic", *_spread(classic), "1.00x", classic_why),
        (what, "consumer (KIP-848)", *_spread(kip848), f"{ratio:.2f}x", kip848_why),
    ]


def _spread(times: list[float]) -> tuple[str, str]:
    return f"{statistics.median(times):.0f} ms", f"{max(times):.0f} ms"
