"""The hand-off of calls to a pool's threads and of their outcomes back to the event loop
(tidelog.kafka.handoff): every outcome arrives, each once, with as few wake-ups of the loop as
the calls' ends allow."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tidelog.kafka.handoff import Handoff
from tidelog.threads import ContextPool


def on_loop(test):
    """The coroutine test run to its end on a loop of its own."""

    @functools.wraps(test)
    def run() -> None:
        asyncio.run(test())

    return run


class CountingLoop:
    """A loop not yet running, whose wake-ups from other threads are counted."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.wakeups = 0
        wake = self.loop.call_soon_threadsafe

        def counted(*args, **kwargs):
            self.wakeups += 1
            return wake(*args, **kwargs)

        self.loop.call_soon_threadsafe = counted  # type: ignore[method-assign]

    def __enter__(self) -> CountingLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.close()


def test_calls_that_end_before_the_loop_turns_wake_it_once():
    with CountingLoop() as counting, ThreadPoolExecutor(8) as pool:
        handoff = Handoff(counting.loop)
        futures = [handoff.run(pool, lambda n=n: n * n) for n in range(50)]
        pool.shutdown(wait=True)  # every call has ended; the loop has not turned yet
        assert counting.wakeups == 1
        results = counting.loop.run_until_complete(asyncio.wait_for(asyncio.gather(*futures), 10))
    assert results == [n * n for n in range(50)]


def test_a_call_that_ends_after_the_loop_emptied_the_queue_wakes_it_again():
    with CountingLoop() as counting, ThreadPoolExecutor(1) as pool:
        handoff = Handoff(counting.loop)
        run = counting.loop.run_until_complete
        first = run(asyncio.wait_for(handoff.run(pool, lambda: "first"), 10))
        second = run(asyncio.wait_for(handoff.run(pool, lambda: "second"), 10))
    assert (first, second) == ("first", "second")
    assert counting.wakeups == 2


@on_loop
async def test_every_outcome_arrives_while_calls_end_as_the_loop_settles_others():
    # Workers end all the while the loop runs what they queued: a call whose end raced the
    # loop emptying the queue must still be settled (or the await below never ends).
    handoff = Handoff(asyncio.get_running_loop())
    with ThreadPoolExecutor(8) as pool:
        for _ in range(20):
            futures = [handoff.run(pool, lambda n=n: n) for n in range(200)]
            assert await asyncio.wait_for(asyncio.gather(*futures), 10) == list(range(200))


@on_loop
async def test_what_a_call_raises_is_raised_to_its_caller():
    class Refused(Exception):
        pass

    handoff = Handoff(asyncio.get_running_loop())
    error = Refused("no")

    def refuse():
        raise error

    with ThreadPoolExecutor(1) as pool, pytest.raises(Refused) as raised:
        await handoff.run(pool, refuse)
    assert raised.value is error


@on_loop
async def test_a_call_that_ends_its_thread_still_answers_its_caller():
    handoff = Handoff(asyncio.get_running_loop())

    def leave():
        raise SystemExit(3)

    failed = pytest.raises(RuntimeError, match="SystemExit in a worker thread")
    with ThreadPoolExecutor(1) as pool, failed:
        await asyncio.wait_for(handoff.run(pool, leave), 10)


@on_loop
async def test_a_cancelled_callers_outcome_is_dropped():
    loop = asyncio.get_running_loop()
    handoff = Handoff(loop)
    reported = []
    loop.set_exception_handler(lambda _, context: reported.append(context))
    release = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        future = handoff.run(pool, release.wait)
        future.cancel()
        release.set()
        after = await asyncio.wait_for(handoff.run(pool, lambda: "next"), 10)
    assert future.cancelled()
    assert after == "next"
    assert reported == []


@on_loop
async def test_run_into_settles_the_future_the_caller_made():
    loop = asyncio.get_running_loop()
    handoff = Handoff(loop)
    mine = loop.create_future()
    with ThreadPoolExecutor(1) as pool:
        handoff.run_into(mine, pool, lambda: 42)
        assert await asyncio.wait_for(mine, 10) == 42


@on_loop
async def test_a_failing_callback_stops_no_other():
    loop = asyncio.get_running_loop()
    handoff = Handoff(loop)
    reported = []
    loop.set_exception_handler(lambda _, context: reported.append(context["exception"]))
    ran = asyncio.Event()

    def fail():
        raise ValueError("a defect")

    threading.Thread(target=lambda: (handoff.call_soon(fail), handoff.call_soon(ran.set))).start()
    await asyncio.wait_for(ran.wait(), 10)
    assert [type(e) for e in reported] == [ValueError]


def test_a_callback_after_the_loop_closed_is_dropped():
    loop = asyncio.new_event_loop()
    handoff = Handoff(loop)
    loop.close()
    handoff.call_soon(lambda: None)  # no error: nobody is waiting


@on_loop
async def test_calls_run_in_the_context_that_handed_them_over():
    acting = contextvars.ContextVar("acting", default="nobody")
    acting.set("alice")
    handoff = Handoff(asyncio.get_running_loop())
    with ContextPool(1) as pool:
        assert await asyncio.wait_for(handoff.run(pool, acting.get), 10) == "alice"
