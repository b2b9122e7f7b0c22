"""CloudWatch metrics in the Embedded Metric Format, through aws-lambda-powertools, with each
thread's metrics its own.

Powertools keeps metrics in class attributes shared by every ``Metrics`` instance: right in
Lambda, where an execution environment runs one invocation at a time. `tidelog dev` runs many
invocations at once in one process, and there a shared set is flushed by whichever invocation
finishes first, into its own line, and the next one to flush may find it empty and fail (after
its work was done: a produce committed, then answered 502). Here each thread gets its own
powertools provider, so an invocation flushes exactly what it added, in Lambda and locally.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import (
    AmazonCloudWatchEMFProvider,
)

__all__ = ["MetricUnit", "Metrics"]

_Handler = TypeVar("_Handler", bound=Callable[..., Any])


class Metrics:
    def __init__(self, *, namespace: str, service: str) -> None:
        self._namespace, self._service = namespace, service
        self._threads = threading.local()

    @property
    def _provider(self) -> AmazonCloudWatchEMFProvider:
        provider: AmazonCloudWatchEMFProvider | None = getattr(self._threads, "provider", None)
        if provider is None:
            provider = AmazonCloudWatchEMFProvider(
                namespace=self._namespace,
                service=self._service,
                metric_set={},
                dimension_set={},
                metadata_set={},
                default_dimensions={},
            )
            self._threads.provider = provider
        return provider

    def add_metric(self, name: str, unit: MetricUnit, value: float) -> None:
        self._provider.add_metric(name=name, unit=unit, value=value)

    def flush_metrics(self) -> None:
        """Print this thread's metrics as one EMF line and forget them (nothing when none)."""
        provider = self._provider
        if provider.metric_set:
            provider.flush_metrics(raise_on_empty_metrics=False)

    def log_metrics(self, handler: _Handler) -> _Handler:
        """Flush what an invocation added when it ends, as powertools' decorator does."""

        @functools.wraps(handler)
        def flushing(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            finally:
                self.flush_metrics()

        return flushing  # type: ignore[return-value]
