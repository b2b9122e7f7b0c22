"""Reads shared by the callers that want them at once (tidelog.storage.shared): a caller alone
reads at once; those that come while a read is out go together in the next; each is answered
from a read begun after it called, with its own keys only."""

from __future__ import annotations

import contextvars
import itertools
import random
import threading
import time
from collections.abc import Sequence

import pytest

from tidelog.storage import Put
from tidelog.storage.errors import StorageUnavailableError
from tidelog.storage.memory import MemoryMetadataStore
from tidelog.storage.shared import SharedGetsStore, SharedReads


class Versioned:
    """A store whose every key holds the number of the read that found it: a read begun
    after a caller's call has a higher number than any begun before it. Key ``"gone"`` does
    not exist. The first read may be held until released."""

    def __init__(self, hold_first: bool = False, takes_s: float = 0.0) -> None:
        self.takes_s = takes_s
        self.calls: list[list[str]] = []
        self.started = threading.Event()
        self.release = threading.Event()
        if not hold_first:
            self.release.set()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def read_many(self, keys: Sequence[str]) -> dict[str, int]:
        with self._lock:
            number = next(self._numbers)
            self.calls.append(sorted(keys))
        self.started.set()
        if number == 1:
            assert self.release.wait(10)
        time.sleep(self.takes_s)
        return {key: number for key in keys if key != "gone"}

    def begun(self) -> int:
        with self._lock:
            return len(self.calls)


def _in_thread(target, *args):
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = target(*args)
        except Exception as exc:  # reported to the test
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def _until(done, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_a_caller_alone_reads_at_once_its_own_keys():
    store = Versioned()
    shared = SharedReads(store.read_many)
    assert shared.read(["a", "b", "gone"]) == {"a": 1, "b": 1}
    assert shared.read(["c"]) == {"c": 2}
    assert shared.read([]) == {}
    assert store.calls == [["a", "b", "gone"], ["c"]]


def test_callers_that_come_during_a_read_share_the_next_and_each_gets_its_own_keys():
    store = Versioned(hold_first=True)
    shared = SharedReads(store.read_many)
    first, first_out = _in_thread(shared.read, ["a"])
    assert store.started.wait(10)
    waiters = [_in_thread(shared.read, keys) for keys in (["a", "b"], ["c"], ["c", "gone"])]
    time.sleep(0.05)  # they are waiting, not reading: the first read is still out
    assert store.calls == [["a"]]
    store.release.set()
    for thread, _ in [(first, first_out), *waiters]:
        thread.join(10)
    assert first_out == {"value": {"a": 1}}  # the read out when the others came
    assert [out["value"] for _, out in waiters] == [{"a": 2, "b": 2}, {"c": 2}, {"c": 2}]
    assert store.calls == [["a"], ["a", "b", "c", "gone"]]  # one read for the three


def test_a_rounds_failure_is_each_of_its_callers_and_the_next_round_reads_again():
    calls = []
    release = threading.Event()

    def read_many(keys: Sequence[str]) -> dict[str, int]:
        calls.append(sorted(keys))
        if len(calls) == 1:
            assert release.wait(10)
            return {}
        if len(calls) == 2:
            raise StorageUnavailableError("throttled")
        return dict.fromkeys(keys, 3)

    shared = SharedReads(read_many)
    first, _ = _in_thread(shared.read, ["x"])
    _until(lambda: calls)
    waiters = [_in_thread(shared.read, [key]) for key in "ab"]
    time.sleep(0.05)
    release.set()
    first.join(10)
    for thread, out in waiters:
        thread.join(10)
        assert isinstance(out["error"], StorageUnavailableError)
    assert shared.read(["a"]) == {"a": 3}


@pytest.mark.parametrize("seed", range(5))
def test_every_answer_is_from_a_read_begun_after_its_call(seed):
    """Threads calling at random with random keys: each answer holds exactly its keys that
    exist, all from one read, numbered past every read begun before the call."""
    rng = random.Random(seed)
    store = Versioned(takes_s=0.001)
    shared = SharedReads(store.read_many)
    failures: list[str] = []
    plans = [
        [(rng.sample("abcdefg", rng.randint(1, 4)), rng.random() / 500) for _ in range(40)]
        for _ in range(12)
    ]

    def caller(plan) -> None:
        for keys, pause in plan:
            time.sleep(pause)
            before = store.begun()
            found = shared.read(keys)
            if set(found) != set(keys) - {"gone"}:
                failures.append(f"seed {seed}: asked {keys}, answered {found}")
            numbers = set(found.values())
            if len(numbers) != 1 or min(numbers) <= before:
                failures.append(f"seed {seed}: {keys} after read {before}: {found}")

    threads = [threading.Thread(target=caller, args=(plan,)) for plan in plans]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert len(store.calls) < sum(len(plan) for plan in plans)  # some were shared


def test_the_store_shares_only_within_a_lane():
    """In tidelog dev each function's reads are made in its own role: one role's read out
    holds up no other role's, and two roles' callers never share a BatchGetItem."""
    inner = MemoryMetadataStore()
    for key in ("a", "b"):
        inner.write(Put({"pk": "p", "sk": key, "v": key}))
    calls: list[tuple[str | None, list[str]]] = []
    lane: contextvars.ContextVar[str | None] = contextvars.ContextVar("lane", default=None)
    release = threading.Event()
    real = inner.get_many

    def get_many(keys):
        calls.append((lane.get(), sorted(sk for _, sk in keys)))
        assert release.wait(10)
        return real(keys)

    inner.get_many = get_many  # type: ignore[method-assign]
    store = SharedGetsStore(inner, lane.get)

    def as_role(role: str, key: str):
        lane.set(role)
        return store.get_many([("p", key)])

    def call(role: str, key: str):
        return _in_thread(contextvars.copy_context().run, as_role, role, key)

    callers = [call("produce", "a")]
    _until(lambda: len(calls) == 1)
    callers.append(call("fetch", "a"))
    _until(lambda: len(calls) == 2)  # out beside the produce role's
    callers += [call("fetch", "b"), call("produce", "b")]
    time.sleep(0.05)  # each waits for its own role's read
    release.set()
    for thread, _ in callers:
        thread.join(10)
    assert [out["value"] for _, out in callers] == [
        {("p", key): {"pk": "p", "sk": key, "v": key}} for key in "aabb"
    ]
    assert sorted(calls, key=lambda c: (c[0] or "", c[1])) == [
        ("fetch", ["a"]),
        ("fetch", ["b"]),
        ("produce", ["a"]),
        ("produce", ["b"]),
    ]


def test_only_calls_naming_the_same_kinds_of_key_go_together():
    """The produce role may read heads (``log#...``) and transactional ids (``txn#...``), but
    not in one call: its policy's LeadingKeys conditions hold for every key of a call."""
    inner = MemoryMetadataStore()
    for pk in ("log#t-0", "log#t-1", "txn#x"):
        inner.write(Put({"pk": pk, "sk": "s"}))
    calls: list[list[str]] = []
    release = threading.Event()
    real = inner.get_many

    def get_many(keys):
        calls.append(sorted(pk for pk, _ in keys))
        assert release.wait(10)
        return real(keys)

    inner.get_many = get_many  # type: ignore[method-assign]
    store = SharedGetsStore(inner)
    callers = [_in_thread(store.get_many, [("log#t-0", "s")])]
    _until(lambda: len(calls) == 1)
    callers.append(_in_thread(store.get_many, [("txn#x", "s")]))
    _until(lambda: len(calls) == 2)  # out at once: another kind, another lane
    callers += [
        _in_thread(store.get_many, keys)
        for keys in ([("log#t-1", "s")], [("log#t-0", "s"), ("txn#x", "s")], [("txn#x", "s")])
    ]
    time.sleep(0.05)
    release.set()
    for thread, out in callers:
        thread.join(10)
        assert "error" not in out
    assert sorted(calls) == [
        ["log#t-0"],
        ["log#t-0", "txn#x"],  # both kinds: its own lane, as it asked
        ["log#t-1"],
        ["txn#x"],
        ["txn#x"],
    ]
