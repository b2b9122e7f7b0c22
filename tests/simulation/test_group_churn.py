"""Members join, leave and die while commits flow; rebalances run on their own thread as the
state machine runs them. Checked: never two owners of a partition in one generation, every
stale commit rejected, no committed offset going backwards, every partition owned again once
the churn stops. Over the in-memory stores and against the locked emulator's DynamoDB."""

from __future__ import annotations

import contextlib
import random
import threading
import time

import pytest
from tests.support.resources import new_table

from tidelog.errors import TidelogError
from tidelog.groups.coordinator import Coordinator, JoinRequest, OffsetCommit
from tidelog.groups.model import Limits
from tidelog.log import keys
from tidelog.log.fetch import LogReader
from tidelog.log.topics import Topics
from tidelog.storage import Put
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore

SEED = random.randrange(2**32)
PARTITIONS = 6
SESSION_MS = 1000


class ThreadRebalancer:
    """Runs each started generation's assignment after its delay, on a thread."""

    def __init__(self) -> None:
        self.coordinator: Coordinator | None = None

    def start(self, group: str, generation: int, delay_ms: int) -> None:
        def run() -> None:
            time.sleep(0.02)
            assert self.coordinator is not None
            self.coordinator.assign(group, generation)

        threading.Thread(target=run, daemon=True).start()


@pytest.fixture(params=["memory", "emulator"])
def meta(request, template):
    if request.param == "memory":
        return MemoryMetadataStore()
    ddb = request.getfixturevalue("dev_client")("dynamodb")
    return DynamoMetadataStore(ddb, new_table(ddb, template))


def clock_ms() -> int:
    return time.time_ns() // 1_000_000


def test_churn(meta):
    rng = random.Random(SEED)
    topics = Topics(meta, clock_ms)
    topic = topics.create("churned", PARTITIONS, {})
    for p in range(PARTITIONS):
        head = {"next_offset": 10**9, "log_start_offset": 0}
        meta.write(Put({"pk": keys.log_pk(topic.topic_id, p), "sk": keys.HEAD_SK, **head}))
    rebalancer = ThreadRebalancer()
    coord = Coordinator(
        meta,
        topics,
        LogReader(meta, MemoryObjectStore(clock_ms)),
        rebalancer,
        clock_ms=clock_ms,
        limits=Limits(min_session_timeout_ms=100, max_session_timeout_ms=60_000),
        initial_rebalance_delay_ms=0,
    )
    rebalancer.coordinator = coord
    request = JoinRequest(
        topics=("churned",), session_timeout_ms=SESSION_MS, rebalance_timeout_ms=SESSION_MS
    )
    lock = threading.Lock()
    owners: dict[int, dict[str, set]] = {}  # generation -> member -> partitions
    stable_seen: list[tuple[float, int]] = []  # (when a heartbeat answered, its generation)
    accepted: list[tuple[float, int, str, int, int]] = []  # (asked at, gen, member, p, offset)
    failures: list[str] = []
    counter = [0]
    stop = threading.Event()

    def member_life(lifetime: float, dies: bool) -> None:
        joined = coord.join("g", request)
        member, generation = joined.member_id, joined.generation
        born = time.monotonic()
        while not stop.is_set() and time.monotonic() - born < lifetime:
            try:
                beat = coord.heartbeat("g", member, generation)
            except TidelogError as exc:
                if exc.kafka_error.name == "REBALANCE_IN_PROGRESS":
                    generation = exc.generation  # type: ignore[attr-defined]
                    time.sleep(0.02)
                    continue
                if exc.kafka_error.name == "UNKNOWN_MEMBER_ID":
                    # Expired under a slow machine: join again, as a Kafka consumer does.
                    joined = coord.join("g", request)
                    member, generation = joined.member_id, joined.generation
                    continue
                raise
            answered = time.monotonic()
            generation = beat.generation
            mine = {tp.partition for tp in beat.assignment}
            with lock:
                stable_seen.append((answered, generation))
                owners.setdefault(generation, {})[member] = mine
            for partition in mine:
                with lock:
                    counter[0] += 1
                    offset = counter[0]
                asked = time.monotonic()
                stale = rng.random() < 0.2
                used = generation - 1 if stale else generation
                try:
                    (result,) = coord.commit(
                        "g", member, used, [OffsetCommit("churned", partition, offset)]
                    )
                except TidelogError as exc:
                    if stale and exc.kafka_error.name not in (
                        "ILLEGAL_GENERATION",
                        "REBALANCE_IN_PROGRESS",
                    ):
                        failures.append(f"stale commit failed oddly: {exc}")
                    continue
                if stale:
                    failures.append(
                        f"a commit from generation {used} (current {generation}) passed"
                    )
                if result.error is None:
                    with lock:
                        accepted.append((asked, used, member, partition, offset))
            time.sleep(0.05)
        if not dies:
            with contextlib.suppress(TidelogError):
                coord.leave("g", member)

    threads = []
    started = time.monotonic()
    while time.monotonic() - started < 4.0:
        thread = threading.Thread(
            target=member_life, args=(rng.uniform(0.5, 2.5), rng.random() < 0.4)
        )
        thread.start()
        threads.append(thread)
        time.sleep(rng.uniform(0.1, 0.4))
    survivors = [threading.Thread(target=member_life, args=(60, False)) for _ in range(3)]
    for thread in survivors:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    # The churn is over: the survivors must end up owning every partition.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        group = coord.describe("g")
        assignment = group.current_assignment()
        if (
            group.state.value == "Stable"
            and assignment is not None
            and set(group.members) == set(assignment.members)
        ):
            owned = [tp.partition for ps in assignment.members.values() for tp in ps]
            if sorted(owned) == list(range(PARTITIONS)):
                break
        time.sleep(0.1)
    else:
        pytest.fail(f"seed {SEED}: the survivors never owned every partition")
    stop.set()
    for thread in survivors:
        thread.join(timeout=30)

    assert not failures, f"seed {SEED}: {failures[:5]}"
    for generation, members in owners.items():
        seen: set = set()
        for partitions in members.values():
            assert not partitions & seen, f"seed {SEED}: two owners in generation {generation}"
            seen |= partitions
    for asked, generation, _, _, _ in accepted:
        later = [when for when, g in stable_seen if g > generation and when < asked]
        assert not later, (
            f"seed {SEED}: a generation-{generation} commit passed after a newer one was Stable"
        )
    final = coord.committed("g")
    for partition in range(PARTITIONS):
        offsets = [o for _, _, _, p, o in accepted if p == partition]
        if offsets:
            assert final[("churned", partition)].offset == max(offsets), f"seed {SEED}"
    # Enough happened to prove something: many generations, several seen Stable and owned.
    assert coord.describe("g").generation >= 8, f"seed {SEED}: too little churn"
    assert len(owners) >= 2, f"seed {SEED}: too few Stable generations observed"
