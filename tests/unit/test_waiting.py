"""Members waiting in JoinGroup and SyncGroup share their group's reads (tidelog.kafka.waiting):
however many wait, an agent reads a group about once per poll, and none is answered from a read
older than what it saw last."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from tidelog.groups.joining import new_member
from tidelog.groups.model import (
    Group,
    Limits,
    RebalanceInProgressError,
    State,
    empty_group,
)
from tidelog.groups.stored import ConsumerProtocolGroupError
from tidelog.kafka.waiting import POLL_S, Waiting


def member(member_id: str, session_ms: int = 6000):
    return new_member(
        member_id,
        topics=("t",),
        topic_pattern=None,
        assignors=("range",),
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=10_000,
        group_instance_id=None,
        now_ms=0,
        limits=Limits(min_session_timeout_ms=100),
    )


class Coordinator:
    """What the waiting side uses of the coordinator: ``load``, slow on purpose, counted."""

    def __init__(self, group: Group, load_s: float = 0.0) -> None:
        self.group = group
        self.load_s = load_s
        self.loads = 0
        self.renewed: list[str] = []
        self.failure: Exception | None = None
        self.in_flight = self.most_in_flight = 0
        self._lock = threading.Lock()

    def load(self, name: str) -> Group:
        with self._lock:
            self.loads += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            seen = self.group
        time.sleep(self.load_s)
        with self._lock:
            self.in_flight -= 1
        if self.failure is not None:
            raise self.failure
        return seen

    def renew(self, name: str, group: Group, waiting) -> None:
        self.renewed.append(waiting.member_id)


def gathering(*members) -> Group:
    return replace(
        empty_group("g"),
        state=State.PREPARING_REBALANCE,
        generation=1,
        members={m.member_id: m for m in members},
    )


def waiting(coordinator, *, clock=time.monotonic, sleep=time.sleep) -> Waiting:
    return Waiting(lambda: coordinator, monotonic=clock, sleep=sleep)


def test_many_waiters_share_a_read():
    coordinator = Coordinator(gathering(member("a")), load_s=0.05)
    shared = waiting(coordinator)
    start = threading.Barrier(50)
    got: list[Group] = []

    def wait() -> None:
        seen = shared._begun()
        start.wait()
        got.append(shared.group("g", seen)[1])

    threads = [threading.Thread(target=wait) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 50
    assert coordinator.loads <= 3  # one read, and at most a couple begun before others saw it


def test_waiters_arriving_during_a_read_share_the_next_one():
    """Each arrives while a read is in flight, begun before it: it waits for that read to end
    and shares the next with everyone who arrived meanwhile (never a read of its own)."""
    coordinator = Coordinator(gathering(member("a")), load_s=0.05)
    shared = waiting(coordinator)
    got: list[int] = []

    def arrive(delay_s: float) -> None:
        time.sleep(delay_s)
        seen = shared._begun()
        number, _ = shared.group("g", seen)
        assert number > seen
        got.append(number)

    threads = [threading.Thread(target=arrive, args=(i * 0.005,)) for i in range(60)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took_s = time.monotonic() - began
    assert len(got) == 60
    assert coordinator.most_in_flight == 1
    assert coordinator.loads <= took_s / 0.05 + 1  # one a read's time, not one an arrival


def test_a_read_begun_before_what_a_waiter_saw_is_never_its_answer():
    coordinator = Coordinator(gathering(member("a")))
    shared = waiting(coordinator)
    number, _ = shared.group("g", shared._begun())
    coordinator.group = gathering(member("a"), member("b"))  # a join written after that read
    again, group = shared.group("g", number)
    assert again > number
    assert set(group.members) == {"a", "b"}
    assert coordinator.loads == 2


def test_a_failed_read_fails_every_waiter_that_shared_it():
    coordinator = Coordinator(gathering(member("a")))
    coordinator.failure = ConsumerProtocolGroupError("g is a consumer group")
    shared = waiting(coordinator)
    with pytest.raises(RebalanceInProgressError):  # Kafka's answer to a waiting classic member
        shared.group("g", shared._begun())


def test_a_waiting_member_renews_its_session_a_third_of_it_apart_until_it_is_answered():
    clock = [0.0]
    coordinator = Coordinator(gathering(member("a", session_ms=3000)))
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    shared = waiting(coordinator, clock=lambda: clock[0], sleep=sleep)
    answered_after = 30  # polls: 6 s
    calls = iter(range(10**6))
    answer = shared.until(
        "g", "a", lambda group: "done" if next(calls) == answered_after else None, 60_000
    )
    assert answer == "done"
    assert slept == [POLL_S] * answered_after
    assert len(coordinator.renewed) == 5  # every second (a third of 3 s) of the six
    assert coordinator.loads == answered_after + 1  # alone, it reads once a poll


def test_a_member_missing_from_the_read_is_told_so():
    coordinator = Coordinator(gathering(member("a")))
    shared = waiting(coordinator)
    with pytest.raises(Exception, match="not in group") as caught:
        shared.until("g", "nobody", lambda group: None, 1000)
    assert caught.value.kafka_error.name == "UNKNOWN_MEMBER_ID"


def test_past_its_rebalance_timeout_a_waiting_member_is_told_to_join_again():
    clock = [0.0]
    coordinator = Coordinator(gathering(member("a")))

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    shared = waiting(coordinator, clock=lambda: clock[0], sleep=sleep)
    with pytest.raises(RebalanceInProgressError):
        shared.until("g", "a", lambda group: None, 1000)
    assert clock[0] == pytest.approx(1.0)


def test_by_default_a_member_waits_its_own_rebalance_timeout_as_read():
    clock = [0.0]
    coordinator = Coordinator(gathering(member("a")))  # its rebalance timeout: 10 s

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    shared = waiting(coordinator, clock=lambda: clock[0], sleep=sleep)
    with pytest.raises(RebalanceInProgressError):
        shared.until("g", "a", lambda group: None)
    assert 10.0 <= clock[0] <= 10.0 + POLL_S + 1e-6  # polls of 0.2 s sum to about 10
    assert coordinator.loads == round(clock[0] / POLL_S) + 1  # one a poll, and no other
