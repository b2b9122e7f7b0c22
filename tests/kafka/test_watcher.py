"""The long-poll watcher: one read per interval for every waiter, woken when its partition
moves, released at its deadline."""

from __future__ import annotations

import itertools
import threading
import time

from tidelog.kafka.watcher import HighWatermarkWatcher
from tidelog.log.feed import Committed
from tidelog.log.head import Head


class Heads:
    def __init__(self):
        self.heads = {("t", 0): 5, ("t", 1): 0}
        self.calls = []
        self.lock = threading.Lock()

    def __call__(self, partitions):
        with self.lock:
            self.calls.append(sorted(partitions))
        return {p: Head(0, self.heads[p]) for p in partitions}


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


def test_settled_is_what_to_wait_past_when_the_last_read_showed_nothing_to_fetch():
    heads = Heads()
    heads.heads[("t", 2)] = 9
    watcher = HighWatermarkWatcher(heads, interval_s=0.01)
    assert watcher.settled({("t", 0): 5}, committed=False) is None  # never read
    assert not watcher.wait({("t", 0): 5, ("t", 2): 9}, time.monotonic() + 0.05)
    assert watcher.settled({("t", 0): 5, ("t", 2): 9}, committed=False) == {
        ("t", 0): 5,
        ("t", 2): 9,
    }
    assert watcher.settled({("t", 0): 4}, committed=False) is None  # a record to fetch
    assert watcher.settled({("t", 0): 6}, committed=False) == {("t", 0): 6}
    assert watcher.settled({("t", 0): 5, ("t", 1): 0}, committed=False) is None  # one unread


def test_settled_read_committed_waits_past_the_high_watermark_behind_an_open_transaction():
    open_at_3 = {("t", 0): Head(0, 5, {7: 3})}
    watcher = HighWatermarkWatcher(lambda partitions: open_at_3, interval_s=0.01)
    assert not watcher.wait({("t", 0): 5}, time.monotonic() + 0.05)
    assert watcher.settled({("t", 0): 3}, committed=True) == {("t", 0): 5}  # its marker moves it
    assert watcher.settled({("t", 0): 2}, committed=True) is None  # offset 2 is stable
    assert watcher.settled({("t", 0): 3}, committed=False) is None  # read_uncommitted sees 3, 4


class HeldAfterFirst(Heads):
    """Reads that answer at once the first time, then wait for ``gate``."""

    def __init__(self):
        super().__init__()
        self.gate = threading.Event()
        self.reads = itertools.count()

    def __call__(self, partitions):
        if next(self.reads) > 0:
            self.gate.wait(10)
        return super().__call__(partitions)


def test_read_since_gives_only_heads_read_after_the_time_asked():
    heads = HeldAfterFirst()
    watcher = HighWatermarkWatcher(heads, interval_s=0.01)
    before = time.monotonic()
    threading.Thread(target=watcher.wait, args=({("t", 1): 0}, before + 2), daemon=True).start()
    while watcher.settled({("t", 1): 0}, committed=False) is None:
        time.sleep(0.005)
    assert watcher.read_since([("t", 1)], before) == {("t", 1): Head(0, 0)}
    assert watcher.read_since([("t", 1)], time.monotonic()) is None  # the next read is held
    assert watcher.read_since([("t", 1), ("t", 0)], before) is None  # ("t", 0) was never read
    heads.gate.set()


def test_a_head_this_process_committed_wakes_its_waiters_without_a_read():
    heads = HeldAfterFirst()
    watcher = HighWatermarkWatcher(heads, interval_s=0.01)
    woken = []
    waiter = threading.Thread(
        target=lambda: woken.append(watcher.wait({("t", 1): 0}, time.monotonic() + 10))
    )
    waiter.start()
    while watcher.settled({("t", 1): 0}, committed=False) is None:
        time.sleep(0.005)  # the first read is in; the next is held from here on
    sent = time.monotonic()
    watcher.observe(Committed({("t", 1): Head(0, 1), ("t", 7): Head(0, 3)}, {}, sent))
    waiter.join(5)
    try:
        assert woken == [True], "woken by the commit, with every read after the first held"
        assert watcher.read_since([("t", 1)], sent) == {("t", 1): Head(0, 1)}
        assert watcher.read_since([("t", 7)], 0) is None, "nobody waits on it: not kept"
    finally:
        heads.gate.set()


def test_a_read_begun_before_an_observed_commit_does_not_undo_it():
    heads = Heads()
    reading, release = threading.Event(), threading.Event()

    def slow_second_read(partitions):
        found = heads(partitions)  # the head as the read finds it: 0 records
        if len(heads.calls) == 2:
            reading.set()
            release.wait(10)
        return found

    watcher = HighWatermarkWatcher(slow_second_read, interval_s=0.01)
    stop = time.monotonic() + 10
    waiter = threading.Thread(target=watcher.wait, args=({("t", 1): 5}, stop), daemon=True)
    waiter.start()
    assert reading.wait(5)
    watcher.observe(Committed({("t", 1): Head(0, 2)}, {}, time.monotonic()))  # while it reads
    release.set()
    while len(heads.calls) < 3:  # a read after the slow one began: the slow one has landed
        time.sleep(0.005)
    assert watcher.settled({("t", 1): 0}, committed=False) is None, "2 records to fetch at 0"
    assert watcher.settled({("t", 1): 2}, committed=False) == {("t", 1): 2}
    heads.heads[("t", 1)] = 6
    waiter.join(5)
