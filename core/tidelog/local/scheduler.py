"""EventBridge schedules, locally: each scheduled function of the template is invoked with its
schedule's event at its rate, as EventBridge Scheduler invokes it in AWS."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tidelog.local.lambdas import FunctionRuntime
from tidelog.local.template import Schedule

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    runtime: FunctionRuntime
    schedule: Schedule


class Scheduler:
    def __init__(
        self,
        jobs: Sequence[Job],
        *,
        speedup: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``speedup`` divides every interval (tests and demos run hours of schedule fast)."""
        self._jobs = list(jobs)
        self.speedup = speedup
        self._clock = clock
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tidelog-scheduler", daemon=True)
        self.runs = 0

    @classmethod
    def for_runtimes(cls, runtimes: Sequence[FunctionRuntime], speedup: float = 1.0) -> Scheduler:
        return cls([Job(rt, s) for rt in runtimes for s in rt.spec.schedules], speedup=speedup)

    def start(self) -> None:
        if self._jobs:
            self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        due = [self._clock() + self._interval(j) for j in self._jobs]
        while not self._stopping.is_set():
            now = self._clock()
            for i, job in enumerate(self._jobs):
                if due[i] <= now:
                    self._run(job)
                    due[i] = self._clock() + self._interval(job)
            self._stopping.wait(max(0.0, min(due) - self._clock()))

    def _interval(self, job: Job) -> float:
        return job.schedule.interval_s / self.speedup

    def _run(self, job: Job) -> None:
        try:
            job.runtime.invoke(dict(job.schedule.event))
        except Exception:  # a failed run is logged and retried next time, as EventBridge does
            logger.exception("scheduled %s failed", job.runtime.spec.logical_id)
        self.runs += 1
