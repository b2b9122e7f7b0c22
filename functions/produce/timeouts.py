"""The transaction timeout sweep, on an EventBridge schedule (and by ``tidelog dev`` on the
same one): every transaction open past its ``transaction.timeout.ms`` is aborted and its
producer fenced, and every end left unfinished is finished (tidelog.transactions). Agents sweep
the ids they coordinate themselves; this covers a stack that serves transactions over HTTP
alone. It reads only the timeouts due, so an idle cluster costs a query per shard a run.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from tidelog import runtime
from tidelog.telemetry import Metrics, MetricUnit

logger = Logger(service="tidelog-transaction-timeouts")
metrics = Metrics(namespace="tidelog", service="transactions")


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    ended = runtime.transactions().expire()
    metrics.add_metric(name="TransactionsTimedOut", unit=MetricUnit.Count, value=ended)
    if ended:
        logger.info("transactions timed out and aborted", extra={"ended": ended})
    return {"ended": ended}
