"""Threads that carry their creator's context.

A thread starts in an empty context and a pool's worker runs every task in its own, so context
variables (:data:`tidelog.principals.acting_for`: whose role a call is made in) would stop at the
first hand-off. These carry a copy of the creator's, as asyncio's tasks do. And the main
thread's wait for the signal that stops a process.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

_T = TypeVar("_T")


class ContextPool(ThreadPoolExecutor):
    """A thread pool whose tasks run in a copy of the context that submitted them."""

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


def thread(target: Callable[[], object], *, name: str, daemon: bool = True) -> threading.Thread:
    """An unstarted thread running ``target`` in a copy of the caller's context."""
    return threading.Thread(
        target=contextvars.copy_context().run, args=(target,), name=name, daemon=daemon
    )


SIGNAL_CHECK_S = 0.5
"""How late a pending signal handler runs, at most."""


def await_signal(stopping: threading.Event) -> None:
    """Block the main thread until ``stopping`` is set by a signal handler. The wait is timed:
    a signal the kernel delivers to another thread only marks Python's handler pending, and it
    runs when the main thread next runs bytecode, which an untimed wait never does."""
    while not stopping.wait(SIGNAL_CHECK_S):
        pass
