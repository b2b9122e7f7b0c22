"""Threads and pools that carry their creator's context, and the main thread's wait for the
signal that stops it (tidelog.threads)."""

from __future__ import annotations

import contextvars
import signal
import threading
import time

from tidelog.threads import SIGNAL_CHECK_S, ContextPool, await_signal, thread

ROLE: contextvars.ContextVar[str] = contextvars.ContextVar("role", default="none")


def test_a_pool_task_runs_in_the_context_that_submitted_it():
    with ContextPool(1) as pool:
        token = ROLE.set("produce")
        first = pool.submit(ROLE.get)
        ROLE.reset(token)
        second = pool.submit(ROLE.get)  # the same worker thread: nothing left over
        assert (first.result(), second.result()) == ("produce", "none")
        token = ROLE.set("agent")
        assert list(pool.map(lambda _: ROLE.get(), range(3))) == ["agent"] * 3
        ROLE.reset(token)


def test_a_thread_runs_in_a_copy_of_its_creators_context():
    seen = []
    token = ROLE.set("agent")
    started = thread(lambda: seen.append(ROLE.get()) or ROLE.set("changed"), name="t")
    ROLE.reset(token)
    started.start()
    started.join(5)
    assert seen == ["agent"]
    assert ROLE.get() == "none"  # a copy: the thread's changes stay its own


def test_a_signal_another_thread_receives_still_ends_the_wait():
    stopping = threading.Event()
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: stopping.set())
    released = threading.Event()

    def receive_it_here() -> None:  # once the main thread is waiting
        time.sleep(0.2)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        released.wait(10)

    other = threading.Thread(target=receive_it_here)
    try:
        other.start()
        started = time.monotonic()
        await_signal(stopping)  # an untimed Event.wait() here never returns
        assert time.monotonic() - started < 0.2 + 2 * SIGNAL_CHECK_S
    finally:
        released.set()
        other.join()
        signal.signal(signal.SIGUSR1, previous)
