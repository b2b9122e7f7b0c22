"""The cold-start baseline: a bare Powertools REST handler with what tidelog's produce handler
has around its work (request validation by a pydantic model, the Logger, Metrics) and none of
the work. benchmarks/coldstart.py imports it in a fresh interpreter and invokes it once."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ConfigDict, Field

app = APIGatewayRestResolver(enable_validation=True)
logger = Logger(service="bare")
metrics = Metrics(namespace="bare", service="bare")


class Header(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str
    value: str | None = None


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str | None = None
    value: str | None = None
    headers: list[Header] = Field(default_factory=list)
    partition: int | None = None
    timestamp: int | None = None


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")
    records: Annotated[list[Record], Field(min_length=1)]


class Offsets(BaseModel):
    offsets: list[int]


@app.post("/v1/topics/<topic>/records")
def produce(topic: str, body: Body) -> Offsets:
    metrics.add_metric(name="RecordsProduced", unit=MetricUnit.Count, value=len(body.records))
    return Offsets(offsets=list(range(len(body.records))))


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
