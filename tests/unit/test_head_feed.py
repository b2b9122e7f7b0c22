"""The feed of heads this process commits: listeners held weakly, and none can fail an append."""

from __future__ import annotations

import gc

from tidelog.log.head import Head
from tidelog.log.write.feed import HeadFeed


class Listener:
    def __init__(self, fail: bool = False) -> None:
        self.heard: list[tuple[dict, float]] = []
        self.fail = fail

    def hear(self, heads, sent):
        self.heard.append((dict(heads), sent))
        if self.fail:
            raise RuntimeError("a listener's own trouble")


def test_every_listener_hears_even_when_one_fails():
    feed = HeadFeed()
    failing, steady = Listener(fail=True), Listener()
    feed.subscribe(failing.hear)
    feed.subscribe(steady.hear)
    feed.publish({("t", 0): Head(0, 4)}, 1.5)
    assert failing.heard == steady.heard == [({("t", 0): Head(0, 4)}, 1.5)]


def test_a_listener_gone_is_dropped_not_kept_alive():
    feed = HeadFeed()
    listener = Listener()
    feed.subscribe(listener.hear)
    del listener
    gc.collect()
    feed.publish({("t", 0): Head(0, 1)}, 0.0)
    assert feed._listeners == []
