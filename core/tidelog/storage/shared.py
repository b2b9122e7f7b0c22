"""Item reads shared by the callers that want them at once, as a group commit shares writes.

A wave of consumers starting together reads by the hundred: after a rebalance each member's
OffsetFetch reads its committed offsets, each ListOffsets (librdkafka resets each partition
with a request of its own) and each fetch read heads. Made one BatchGetItem a request, they
queue at the table; shared, the callers that come while a read is out wait for it to end and
then go together in the next, a hundred keys a call.

Each caller's answer comes from a read begun after it called, never from one already out:
what it learns is as new as a read of its own would have been (a consumer told a write was
acknowledged is never shown an item from before it). A caller alone reads at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Generic, TypeVar

from tidelog.storage.metadata import Item, MetadataStore

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Round(Generic[K, V]):
    def __init__(self) -> None:
        self.keys: set[K] = set()
        self.done = False
        self.found: dict[K, V] = {}
        self.error: BaseException | None = None


class SharedReads(Generic[K, V]):
    """``read(keys)`` answers from one call of ``read_many`` over the keys of every caller
    that came while the call before it was out. A key ``read_many`` does not answer is left
    out; its failure is every caller's of that round."""

    def __init__(self, read_many: Callable[[Sequence[K]], dict[K, V]]) -> None:
        self._read_many = read_many
        self._changed = threading.Condition()
        self._gathering: _Round[K, V] = _Round()
        self._reading = False

    def read(self, keys: Iterable[K]) -> dict[K, V]:
        wanted = set(keys)
        if not wanted:
            return {}
        with self._changed:
            joined = self._gathering
            joined.keys |= wanted
            while not self._leads(joined):
                if joined.done:
                    return _answer(joined, wanted)
                self._changed.wait()
        joined.error = RuntimeError("a shared read ended unfinished")
        try:
            joined.found, joined.error = self._read_many(list(joined.keys)), None
        except Exception as exc:  # noqa: BLE001 - every caller of the round hears of it
            joined.error = exc
        finally:
            with self._changed:
                joined.done, self._reading = True, False
                self._changed.notify_all()  # its callers, and the next round's, one to lead
        return _answer(joined, wanted)

    def _leads(self, joined: _Round[K, V]) -> bool:
        """Whether this caller leads ``joined``: no read is out and its round still gathers.
        Called under the lock; leading takes the round, and a new one gathers behind it."""
        if self._reading or joined is not self._gathering:
            return False
        self._reading, self._gathering = True, _Round()
        return True


def _answer(joined: _Round[K, V], wanted: set[K]) -> dict[K, V]:
    if joined.error is not None:
        raise joined.error
    return {key: value for key, value in joined.found.items() if key in wanted}


class SharedGetsStore:
    """``inner`` with each ``get_many`` shared (SharedReads) by the callers in the same lane:
    ``lane()`` names whose reads may be made together (in `tidelog dev` the functions share a
    process, each in its own role, and the emulator checks each call's role), and only calls
    whose keys are of the same kinds (what their partition keys start with, up to a ``#``) go
    together. A role's policy may allow kinds only in calls of their own (a function's
    ``dynamodb:LeadingKeys`` conditions hold for every key of a call): a call made of calls
    that each named the same kinds is allowed wherever each of them was."""

    def __init__(self, inner: MetadataStore, lane: Callable[[], Hashable] = lambda: None) -> None:
        self.inner = inner
        # All but get_many are the inner store's own.
        self.get, self.query = inner.get, inner.query
        self.write, self.transact = inner.write, inner.transact
        self._lane = lane
        self._lanes: dict[Hashable, SharedReads[tuple[str, str], Item]] = {}
        self._lock = threading.Lock()

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        lane = (self._lane(), frozenset(pk.split("#", 1)[0] for pk, _ in keys))
        with self._lock:
            shared = self._lanes.get(lane)
            if shared is None:
                shared = self._lanes[lane] = SharedReads(self.inner.get_many)
        return shared.read(keys)
