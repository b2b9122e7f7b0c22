"""The long-running hosts freeze their start-up objects out of the collector's scans."""

from __future__ import annotations

import gc
import weakref

from tidelog import collector


class Node:
    me: Node


def test_startup_objects_are_frozen_and_later_garbage_is_still_collected():
    try:
        frozen = collector.freeze_startup_objects()
        assert frozen > 1000  # pytest and its plugins, at least
        assert gc.get_freeze_count() > 1000
        cycle = Node()
        cycle.me = cycle
        gone = weakref.ref(cycle)
        del cycle
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
