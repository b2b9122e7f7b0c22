"""Housekeeping functions, run on EventBridge schedules (and by ``tidelog dev`` on the same ones).

maintain   roll, retention and compaction of the partitions due: rewrites the index, never
           deletes an object
collect    garbage collection (``gc``: the queue and orphans; ``reconcile``: the daily full
           pass): the only code allowed to delete objects

The scheduled event is ``{"jobs": [...]}``; the answer is what each job did.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from tidelog import runtime
from tidelog.errors import InvalidRequestError
from tidelog.log.lifecycle.housekeeping import COLLECTION_JOBS, MAINTENANCE_JOBS
from tidelog.telemetry import Metrics, MetricUnit

logger = Logger(service="tidelog-housekeeping")
metrics = Metrics(namespace="tidelog", service="housekeeping")


def _jobs(event: dict[str, Any], allowed: tuple[str, ...]) -> tuple[str, ...]:
    jobs = event.get("jobs", list(allowed))
    if not isinstance(jobs, list) or not jobs or any(j not in allowed for j in jobs):
        raise InvalidRequestError(f"jobs must be a non-empty list drawn from {list(allowed)}")
    return tuple(jobs)


def _run(jobs: tuple[str, ...]) -> dict[str, Any]:
    report = runtime.housekeeper().run(jobs).to_dict()
    for name, value in report.items():
        if isinstance(value, int):
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    logger.info("housekeeping done", extra={"jobs": jobs, "report": report})
    return report


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def maintain(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run(_jobs(event, MAINTENANCE_JOBS))


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def collect(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run(_jobs(event, COLLECTION_JOBS))
