"""Work handed from the event loop to a pool's threads, and its outcome handed back.

asyncio's ``run_in_executor`` wraps each call's future in one of the loop's, chains the two
with callbacks both ways, and wakes the loop once for each call that ends: a write to its
self-pipe, and a turn of the loop, for every request. Under a flood of small requests (a big
group's heartbeats, offset fetches and a ListOffsets per partition), that and a task per
request were about a third of the agent's event loop's time. Here a call that ends queues its
outcome, and wakes the loop only if no wake-up is already on its way: the loop settles every
outcome queued by then in one turn. Nothing else changes: the calls run in the pools they ran
in, in a copy of the context that handed them over (tidelog.threads.ContextPool).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

_T = TypeVar("_T")


class Handoff:
    """Calls into pools, and callbacks from their threads, for one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queued: collections.deque[Callable[[], None]] = collections.deque()
        self._lock = threading.Lock()
        self._waking = False  # a wake-up is on its way: what is queued now will be run

    def run(self, pool: Executor, fn: Callable[..., _T], /, *args: Any) -> asyncio.Future[_T]:
        """``fn(*args)`` in one of ``pool``'s threads; its result, or what it raised, once
        done."""
        future: asyncio.Future[_T] = self._loop.create_future()
        self.run_into(future, pool, fn, *args)
        return future

    def run_into(
        self, future: asyncio.Future[_T], pool: Executor, fn: Callable[..., _T], /, *args: Any
    ) -> None:
        """``run``, settling a future the caller made (and may have handed out) before.
        Cancelling it does not stop a call already begun: its outcome is dropped."""
        pool.submit(self._call, future, fn, args)

    def call_soon(self, callback: Callable[[], None]) -> None:
        """``callback()`` on the loop, from any thread; dropped once the loop has closed."""
        self._queued.append(callback)
        with self._lock:
            if self._waking:
                return  # the wake-up on its way runs this too: it empties the queue after
            self._waking = True
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            self._loop.call_soon_threadsafe(self._run_queued)

    def _call(
        self, future: asyncio.Future[_T], fn: Callable[..., _T], args: tuple[Any, ...]
    ) -> None:
        try:
            result = fn(*args)
        except Exception as exc:  # noqa: BLE001 - the caller's to handle, on the loop
            self.call_soon(functools.partial(_settle, future, None, exc))
        except BaseException as exc:
            # The thread ends, but the caller must still hear of it (set_exception refuses
            # SystemExit and the like).
            failed = RuntimeError(f"{type(exc).__name__} in a worker thread")
            self.call_soon(functools.partial(_settle, future, None, failed))
            raise
        else:
            self.call_soon(functools.partial(_settle, future, result, None))

    def _run_queued(self) -> None:
        with self._lock:
            self._waking = False  # a callback queued from here on wakes the loop again
        queued = self._queued
        while queued:
            callback = queued.popleft()
            try:
                callback()
            except Exception as exc:  # noqa: BLE001 - one failed callback stops no other
                self._loop.call_exception_handler(
                    {"message": "a callback handed to the loop failed", "exception": exc}
                )


def _settle(future: asyncio.Future[Any], result: object, error: Exception | None) -> None:
    if future.cancelled():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)
