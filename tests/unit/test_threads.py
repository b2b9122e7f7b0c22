"""Threads and pools that carry their creator's context (tidelog.threads)."""

from __future__ import annotations

import contextvars

from tidelog.threads import ContextPool, thread

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
