"""Cluster function: liveness and the cluster's identity.

GET /v1/health   -> {"status": "ok", "version"}
GET /v1/cluster  -> {"cluster_id", "version"}   (the id is created on first call, as Kafka's)
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from pydantic import BaseModel

from tidelog import __version__, api, runtime
from tidelog.cluster import describe_cluster
from tidelog.telemetry import Metrics, MetricUnit

app = api.resolver()
logger = Logger(service="tidelog-cluster")
metrics = Metrics(namespace="tidelog", service="cluster")


class Health(BaseModel):
    status: str
    version: str


class Cluster(BaseModel):
    cluster_id: str
    version: str


@app.get("/v1/health", summary="Liveness of the API")
def health() -> Health:
    metrics.add_metric(name="HealthChecks", unit=MetricUnit.Count, value=1)
    return Health(status="ok", version=__version__)


@app.get("/v1/cluster", summary="The cluster's id and version")
def cluster() -> Cluster:
    info = describe_cluster(
        runtime.metadata_store(), clock_ms=runtime.clock_ms, random_bytes=runtime.random_bytes
    )
    metrics.add_metric(name="ClusterDescribed", unit=MetricUnit.Count, value=1)
    return Cluster(cluster_id=info.cluster_id, version=info.version)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
