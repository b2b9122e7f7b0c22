"""The console's lag history: every group's total lag, sampled by the console into bounded rings
in memory, so a lag trend is on screen without any datastore.

``LagHistory`` is the pure part (the rings; the caller gives every time). ``LagSampler`` fills it
from the API on a thread: every ``interval_s`` while the console is in use, pausing after
``idle_s`` without a request (``None``: never), since each sample costs the API one request per
group, and against the deployed stack each request is a Lambda invocation.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from urllib.parse import quote

from tidelog.client.http import Http

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 10.0
DEFAULT_SAMPLES = 360  # an hour at the default interval
DEFAULT_MAX_GROUPS = 1000


class LagHistory:
    """Per group, the last ``samples`` (time in ms, total lag in records); at most ``max_groups``
    groups, the first ones by name (memory stays bounded however many groups the cluster has)."""

    def __init__(
        self, *, samples: int = DEFAULT_SAMPLES, max_groups: int = DEFAULT_MAX_GROUPS
    ) -> None:
        if samples < 1 or max_groups < 1:
            raise ValueError("a lag history keeps at least one sample of one group")
        self.samples = samples
        self.max_groups = max_groups
        self._rings: dict[str, deque[tuple[int, int]]] = {}
        self._lock = threading.Lock()

    def record(self, at_ms: int, lags: dict[str, int]) -> None:
        """One sample of every group the cluster has now: a group gone from ``lags`` is gone
        from the history too."""
        kept = sorted(lags)[: self.max_groups]
        with self._lock:
            self._rings = {g: self._rings.get(g) or deque(maxlen=self.samples) for g in kept}
            for group in kept:
                self._rings[group].append((at_ms, lags[group]))

    def of(self, group: str) -> list[tuple[int, int]]:
        with self._lock:
            return list(self._rings.get(group, ()))

    def groups(self) -> int:
        with self._lock:
            return len(self._rings)


def total_lags(http: Http) -> dict[str, int]:
    """Every group's total lag in records, as the API reports each group's committed offsets.
    A group that has committed nothing has no lag to tell (Kafka's tools show "-"), not 0."""
    lags = {}
    for group in http.get("/v1/groups")["groups"]:
        name = group["group"]
        offsets = http.get(f"/v1/groups/{quote(name, safe='')}/offsets")["offsets"]
        if offsets:
            lags[name] = sum(p["lag"] for p in offsets)
    return lags


class LagSampler:
    """Samples ``total_lags`` into ``history`` on a daemon thread. ``touch()`` says the console
    is in use: it starts the thread the first time and wakes it from an idle pause."""

    def __init__(
        self,
        http: Http,
        history: LagHistory | None = None,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        idle_s: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("the lag sampling interval is a positive number of seconds")
        self.http = http
        self.history = history or LagHistory()
        self.interval_s = interval_s
        self.idle_s = idle_s
        self.clock = clock
        self.error: str | None = None  # the last sample's failure, shown under the chart
        self._used = clock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def touch(self) -> None:
        self._used = self.clock()
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="tidelog-console-lag", daemon=True
                    )
                    self._thread.start()
        self._wake.set()

    def sample(self) -> None:
        """One sample now; a failure is kept (for the page) and logged, never raised."""
        try:
            lags = total_lags(self.http)
        except Exception as exc:  # noqa: BLE001 - the API may be down: the next sample retries
            self.error = f"{type(exc).__name__}: {exc}"
            logger.warning("lag sample failed: %s", self.error)
            return
        self.error = None
        self.history.record(int(self.clock() * 1000), lags)

    @property
    def paused(self) -> bool:
        """Waiting for the console to be used (not yet started, or idle)."""
        return self._thread is None or not self._wake.is_set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            if self._thread.is_alive():
                raise RuntimeError("the lag sampler did not stop")

    def _idle(self) -> bool:
        return self.idle_s is not None and self.clock() - self._used > self.idle_s

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._idle():
                self._wake.clear()
                if not self._idle():  # touched between the check and the clear
                    continue
                self._wake.wait()
                continue
            started = time.monotonic()
            self.sample()
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))
