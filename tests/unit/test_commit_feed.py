"""The feed of what this process commits: listeners held weakly, and none can fail an append."""

from __future__ import annotations

import gc

from tidelog.log.feed import CommitFeed, Committed
from tidelog.log.head import Head


class Listener:
    def __init__(self, fail: bool = False) -> None:
        self.heard: list[Committed] = []
        self.fail = fail

    def hear(self, committed):
        self.heard.append(committed)
        if self.fail:
            raise RuntimeError("a listener's own trouble")


def test_every_listener_hears_even_when_one_fails():
    feed = CommitFeed()
    failing, steady = Listener(fail=True), Listener()
    feed.subscribe(failing.hear)
    feed.subscribe(steady.hear)
    committed = Committed({("t", 0): Head(0, 4)}, {}, 1.5)
    feed.publish(committed)
    assert failing.heard == steady.heard == [committed]


def test_a_listener_gone_is_dropped_not_kept_alive():
    feed = CommitFeed()
    listener = Listener()
    feed.subscribe(listener.hear)
    del listener
    gc.collect()
    feed.publish(Committed({("t", 0): Head(0, 1)}, {}, 0.0))
    assert feed._listeners == []
