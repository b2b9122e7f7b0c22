"""The long-poll watcher: one read per interval for every waiter, woken when its partition
moves, released at its deadline."""

from __future__ import annotations

import itertools
import threading
import time

from tidelog.kafka.watcher import HighWatermarkWatcher


class Heads:
    def __init__(self):
        self.heads = {("t", 0): 5, ("t", 1): 0}
        self.calls = []
        self.lock = threading.Lock()

    def __call__(self, partitions):
        with self.lock:
            self.calls.append(sorted(partitions))
        return {p: self.heads[p] for p in partitions}


def test_a_head_already_past_the_offset_returns_at_once():
    watcher = HighWatermarkWatcher(Heads(), interval_s=0.01)
    assert watcher.wait({("t", 0): 4}, time.monotonic() + 5)


def test_many_waiters_cost_one_read_per_interval_and_all_wake_on_a_commit():
    heads = Heads()
    watcher = HighWatermarkWatcher(heads, interval_s=0.05)
    woken = []

    def waiter():
        woken.append(watcher.wait({("t", 1): 0}, time.monotonic() + 10))

    threads = [threading.Thread(target=waiter) for _ in range(50)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)
    # A read an interval (about 4 here), where a poll per waiter would make 50 at once.
    assert 0 < len(heads.calls) < 50
    assert all(call == [("t", 1)] for call in heads.calls)
    heads.heads[("t", 1)] = 1
    for thread in threads:
        thread.join(5)
    assert woken == [True] * 50


def test_a_quiet_partition_releases_its_waiter_at_the_deadline_and_the_poll_stops():
    heads = Heads()
    watcher = HighWatermarkWatcher(heads, interval_s=0.01)
    start = time.monotonic()
    assert not watcher.wait({("t", 1): 0}, start + 0.1)
    assert time.monotonic() - start >= 0.1
    time.sleep(0.05)
    reads = len(heads.calls)
    time.sleep(0.1)
    assert len(heads.calls) == reads  # nobody waits: nothing is read


def test_a_failed_read_is_tried_again():
    heads = Heads()
    failures = iter([RuntimeError("throttled")])

    def flaky(partitions):
        error = next(failures, None)
        if error is not None:
            raise error
        return heads(partitions)

    heads.heads[("t", 1)] = 3
    watcher = HighWatermarkWatcher(flaky, interval_s=0.01)
    assert watcher.wait({("t", 1): 2}, time.monotonic() + 5)


def test_a_slow_read_is_followed_by_a_pause_as_long():
    """600 partitions waited on are six BatchGetItems a poll; on a busy store they take longer
    than the interval, and polling back to back would take all the store gives this host."""
    heads = Heads()
    began: list[float] = []

    def slow(partitions):
        began.append(time.monotonic())
        time.sleep(0.1)
        return heads(partitions)

    watcher = HighWatermarkWatcher(slow, interval_s=0.01)
    assert not watcher.wait({("t", 1): 0}, time.monotonic() + 0.75)
    gaps = [b - a for a, b in itertools.pairwise(began)]
    assert gaps
    assert all(gap >= 0.2 - 0.01 for gap in gaps)  # the read's 0.1 s, and a pause as long
