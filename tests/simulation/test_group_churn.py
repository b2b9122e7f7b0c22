"""Members join (half of them as Kafka's clients since KIP-394, with the id they are handed
first), leave and die while commits flow; rebalances run on their own thread as the
state machine runs them, join barrier included. Checked, for an eager and a cooperative
assignor:

- at most one owner of a partition at any instant, across generations: a member owns what a
  Stable heartbeat gave it until a rebalance tells it to give it up (everything, eager; what
  it may not keep, cooperative), it leaves, or it dies; a claim counts while its session can
  still be alive (Kafka reassigns an expired member's partitions, as it must);
- every stale commit rejected: ILLEGAL_GENERATION or REBALANCE_IN_PROGRESS, or
  UNKNOWN_MEMBER_ID for a member that really was removed (Kafka checks the member first);
- no commit passing after a newer generation was seen Stable;
- the committed offset is the last accepted commit (any offset is accepted, lower ones too);
- every partition owned again once the churn stops.

Over the in-memory stores and against the locked emulator's DynamoDB."""

from __future__ import annotations

import contextlib
import random
import threading
import time

import pytest
from tests.support.resources import new_table

from tidelog.errors import TidelogError
from tidelog.groups.coordinator import Coordinator
from tidelog.groups.model import Joined, JoinRequest, Limits
from tidelog.groups.offsets import OffsetCommit
from tidelog.log.read.fetch import LogReader
from tidelog.log.topics import Topics
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore

SEED = random.randrange(2**32)
PARTITIONS = 6
SESSION_MS = 1000
HEARTBEAT_S = SESSION_MS / 3 / 1000  # Kafka's clients heartbeat at a third of the session
CHURNED = 8  # generations at least: joins, leaves and deaths go on until the group has seen them


class ThreadRebalancer:
    """Runs each started generation's assignment after its delay, on a thread."""

    def __init__(self) -> None:
        self.coordinator: Coordinator | None = None

    def start(self, group: str, generation: int, delay_ms: int, **execution) -> None:
        def run() -> None:
            time.sleep(0.02)
            assert self.coordinator is not None
            while self.coordinator.assign(group, generation)["waiting"]:
                time.sleep(0.05)  # the state machine's WaitForMembers

        threading.Thread(target=run, daemon=True).start()


@pytest.fixture(params=["range", "cooperative-sticky"])
def assignor(request):
    return request.param


@pytest.fixture(params=["memory", "emulator"])
def meta(request, template):
    if request.param == "memory":
        return MemoryMetadataStore()
    ddb = request.getfixturevalue("dev_client")("dynamodb")
    return DynamoMetadataStore(ddb, new_table(ddb, template))


def clock_ms() -> int:
    return time.time_ns() // 1_000_000


def test_churn(meta, assignor):
    rng = random.Random(SEED)
    topics = Topics(meta, clock_ms)
    topics.create("churned", PARTITIONS, {})
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
        topics=("churned",),
        assignors=(assignor,),
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=SESSION_MS,
    )
    lock = threading.Lock()
    claims: dict[str, set[int]] = {}  # member -> the partitions it consumes now
    beat_sent: dict[str, float] = {}  # member -> when its last answered heartbeat was sent
    stable_seen: list[tuple[float, int]] = []  # (when a heartbeat answered, its generation)
    accepted: list[tuple[float, float, int, int, int]] = []  # (asked, done, gen, partition, offset)
    failures: list[str] = []
    counter = [0]
    stop = threading.Event()

    def claim(member: str, partitions: set[int], sent: float) -> None:
        """``member`` consumes ``partitions`` from now; no live claim may overlap them."""
        now = time.monotonic()
        with lock:
            for other, theirs in claims.items():
                alive = beat_sent.get(other, 0) + SESSION_MS / 1000 > now
                if other != member and alive and theirs & partitions:
                    failures.append(
                        f"{member} got {sorted(theirs & partitions)} while {other} still held them"
                    )
            claims[member] = set(partitions)
            beat_sent[member] = sent

    def release(member: str, keep: set[int] = frozenset()) -> None:
        with lock:
            claims[member] = claims.get(member, set()) & keep

    def join() -> Joined:
        """As a Kafka client at JoinGroup v4 and later joins, with the id it is handed first
        (KIP-394), or at once as an older one does."""
        if rng.random() < 0.5:
            return coord.join("g", request)
        return coord.rejoin("g", coord.reserve_member_id("g", request), request)

    def member_life(lifetime: float, dies: bool) -> None:
        joined = join()
        member, generation = joined.member_id, joined.generation
        born = time.monotonic()
        while not stop.is_set() and time.monotonic() - born < lifetime:
            sent = time.monotonic()
            try:
                beat = coord.heartbeat("g", member, generation)
            except TidelogError as exc:
                if exc.kafka_error.name == "REBALANCE_IN_PROGRESS":
                    # Give up what must go, then name the new generation: the join.
                    keep = {tp.partition for tp in exc.keep}  # type: ignore[attr-defined]
                    release(member, keep)
                    generation = exc.generation  # type: ignore[attr-defined]
                    time.sleep(0.02)
                    continue
                if exc.kafka_error.name == "UNKNOWN_MEMBER_ID":
                    # Expired under a slow machine: join again, as a Kafka consumer does.
                    release(member)
                    joined = join()
                    member, generation = joined.member_id, joined.generation
                    continue
                raise
            answered = time.monotonic()
            generation = beat.generation
            mine = {tp.partition for tp in beat.assignment}
            claim(member, mine, sent)
            with lock:
                stable_seen.append((answered, generation))
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
                    name = exc.kafka_error.name
                    removed = (
                        name == "UNKNOWN_MEMBER_ID" and member not in coord.describe("g").members
                    )
                    if (
                        stale
                        and name not in ("ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS")
                        and not removed
                    ):
                        failures.append(f"stale commit failed oddly: {exc}")
                    continue
                if stale:
                    failures.append(
                        f"a commit from generation {used} (current {generation}) passed"
                    )
                if result.error is None:
                    with lock:
                        accepted.append((asked, time.monotonic(), used, partition, offset))
            time.sleep(HEARTBEAT_S)
        release(member)  # a member that leaves, or dies, consumes nothing more
        if not dies:
            with contextlib.suppress(TidelogError):
                coord.leave("g", member)

    # Four seconds of joins, leaves and deaths, and on until the group has been through
    # CHURNED generations: a machine slowed by other work gathers more of them into each
    # rebalance, and a run with too few proves too little.
    threads = []
    started = time.monotonic()
    while time.monotonic() - started < 4.0 or (
        coord.load_meta("g").generation < CHURNED and time.monotonic() - started < 30
    ):
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

    def settled(after: int) -> int:
        """The generation, newer than ``after``, that ends up Stable with its members owning
        every partition and a heartbeat answered in it."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            group = coord.describe("g")
            assignment = group.current_assignment()
            if (
                group.generation > after
                and group.state.value == "Stable"
                and assignment is not None
                and set(group.members) == set(assignment.members)
            ):
                owned = sorted(tp.partition for ps in assignment.members.values() for tp in ps)
                with lock:
                    seen = any(g == group.generation for _, g in stable_seen)
                if owned == list(range(PARTITIONS)) and seen:
                    return group.generation
            time.sleep(0.1)
        pytest.fail(f"seed {SEED}: no generation after {after} ended Stable owning everything")

    # The churn is over: the survivors must end up owning every partition. Then one more member
    # joins, so that commits are checked across at least two generations seen Stable, however
    # slow the machine made the churn.
    first = settled(after=0)
    late = threading.Thread(target=member_life, args=(60, False))
    late.start()
    settled(after=first)
    stop.set()
    for thread in [*survivors, late]:
        thread.join(timeout=30)

    assert not failures, f"seed {SEED}: {failures[:5]}"
    for asked, _, generation, _, _ in accepted:
        later = [when for when, g in stable_seen if g > generation and when < asked]
        assert not later, (
            f"seed {SEED}: a generation-{generation} commit passed after a newer one was Stable"
        )
    final = coord.committed("g")
    for partition in range(PARTITIONS):
        commits = [(a, d, o) for a, d, _, p, o in accepted if p == partition]
        if not commits:
            continue
        got = final[("churned", partition)].offset
        (last,) = [(a, d) for a, d, o in commits if o == got]  # offsets are unique
        overwritten = [o for a, _, o in commits if a > last[1]]
        assert not overwritten, (
            f"seed {SEED}: partition {partition} kept {got}, yet {overwritten} were committed "
            "after that commit returned"
        )
    # Enough happened to prove something: many generations, several seen Stable and owned.
    assert coord.describe("g").generation >= CHURNED, f"seed {SEED}: too little churn"
    assert len({g for _, g in stable_seen}) >= 2, f"seed {SEED}: too few Stable generations"
