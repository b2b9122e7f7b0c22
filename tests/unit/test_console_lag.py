"""The console's lag history: bounded rings in memory, filled from the API on a thread that
samples while the console is in use and pauses when nobody has looked for a while."""

from __future__ import annotations

import json
import threading
import time
from urllib.parse import unquote

import httpx2
import pytest
from werkzeug.test import Client

from tidelog.client.http import Http
from tidelog.console.lag import LagHistory, LagSampler, total_lags
from tidelog.console.server import Console


def test_each_group_keeps_its_last_samples_only():
    history = LagHistory(samples=3)
    for t in range(5):
        history.record(t, {"a": 10 - t, "b": t})
    assert history.of("a") == [(2, 8), (3, 7), (4, 6)]
    assert history.of("b") == [(2, 2), (3, 3), (4, 4)]
    assert history.of("unknown") == []


def test_a_group_gone_from_the_cluster_is_gone_from_the_history():
    history = LagHistory()
    history.record(1, {"a": 1, "b": 2})
    history.record(2, {"b": 0})
    assert (history.of("a"), history.of("b"), history.groups()) == ([], [(1, 2), (2, 0)], 1)


def test_memory_stays_bounded_however_many_groups_there_are():
    history = LagHistory(samples=2, max_groups=3)
    for t in range(10):
        history.record(t, {f"g{i:04}": i for i in range(1000)})
    assert history.groups() == 3
    assert history.of("g0002") == [(8, 2), (9, 2)]
    assert history.of("g0003") == []


@pytest.mark.parametrize(("samples", "groups"), [(0, 1), (1, 0)])
def test_an_empty_bound_is_refused(samples, groups):
    with pytest.raises(ValueError, match="at least one"):
        LagHistory(samples=samples, max_groups=groups)


class FakeApi:
    """Groups and their committed offsets, as the API answers; counts the requests."""

    def __init__(self, groups):
        self.groups = groups  # name -> list of partition lags
        self.requests = 0
        self.down = False

    def __call__(self, request):
        self.requests += 1
        if self.down:
            return httpx2.Response(503, json={"error": "REQUEST_TIMED_OUT", "message": "down"})
        if request.url.path == "/v1/groups":
            listed = [{"group": g, "state": "Stable", "members": 1} for g in self.groups]
            return httpx2.Response(200, json={"groups": listed})
        group = unquote(request.url.raw_path.decode().split("/")[3])
        lags = self.groups[group]
        offsets = [{"topic": "t", "partition": p, "lag": lag} for p, lag in enumerate(lags)]
        return httpx2.Response(200, content=json.dumps({"group": group, "offsets": offsets}))


def http_over(api):
    return Http("http://api.test", sign=False, transport=httpx2.MockTransport(api))


def test_a_groups_total_lag_is_the_sum_over_its_partitions():
    api = FakeApi({"readers": [4, 3], "a&b=c": [2], "idle": [0], "new": []})
    # "new" has committed nothing: its lag is unknown, not 0 (Kafka's tools show "-").
    assert total_lags(http_over(api)) == {"readers": 7, "a&b=c": 2, "idle": 0}


def test_a_failed_sample_is_kept_for_the_page_and_changes_nothing():
    api = FakeApi({"readers": [5]})
    now = [1000.0]
    sampler = LagSampler(http_over(api), clock=lambda: now[0])
    sampler.sample()
    api.down = True
    now[0] += 10
    sampler.sample()
    assert sampler.error is not None
    assert "down" in sampler.error
    assert sampler.history.of("readers") == [(1_000_000, 5)]
    api.down = False
    sampler.sample()
    assert sampler.error is None
    assert sampler.history.of("readers")[-1] == (1_010_000, 5)


def wait_for(condition, seconds=10):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the sampler never got there"
        time.sleep(0.01)


def test_it_samples_while_in_use_pauses_when_idle_and_wakes_on_use():
    api = FakeApi({"readers": [1]})
    now = [0.0]
    lock = threading.Lock()

    def clock():
        with lock:
            return now[0]

    sampler = LagSampler(http_over(api), interval_s=0.01, idle_s=60, clock=clock)
    assert (api.requests, sampler.paused) == (0, True)  # nothing before the console is used
    sampler.touch()
    try:
        wait_for(lambda: len(sampler.history.of("readers")) >= 3)
        with lock:
            now[0] = 61.0  # a minute and more without a request
        wait_for(lambda: sampler.paused)
        paused = api.requests
        time.sleep(0.2)  # twenty intervals
        assert api.requests - paused <= 2  # at most the sample under way when it paused
        sampler.touch()
        assert not sampler.paused
        wait_for(lambda: api.requests >= paused + 6)
    finally:
        sampler.stop()


def test_without_an_idle_limit_it_never_pauses():
    api = FakeApi({"readers": [1]})
    now = [0.0]
    sampler = LagSampler(http_over(api), interval_s=0.01, clock=lambda: now[0])
    sampler.touch()
    try:
        now[0] = 10**9
        wait_for(lambda: api.requests >= 10)
    finally:
        sampler.stop()


def test_the_interval_is_positive():
    with pytest.raises(ValueError, match="positive"):
        LagSampler(http_over(FakeApi({})), interval_s=0)


def test_only_the_consoles_own_requests_count_as_use():
    """A page of another origin is refused, and does not keep the sampler (and the API's bill)
    going; a page of the console's own starts it."""
    api = FakeApi({"readers": [1]})
    sampler = LagSampler(http_over(api), interval_s=60, idle_s=600)
    app = Client(Console(http_over(api), sampler=sampler, files={"/": b"page"}))
    try:
        assert app.get("/api/v1/groups").status_code == 403  # no console header
        assert app.get("/lag?group=readers", headers={"Host": "rebound.test"}).status_code == 403
        assert app.get("/nothing.js").status_code == 404
        assert sampler.paused
        assert app.get("/").status_code == 200
        assert not sampler.paused
    finally:
        sampler.stop()
