"""Produce function: records in, offsets out, acknowledged only once committed.

POST /v1/topics/{topic}/records                     JSON records, placed by the partitioner
POST /v1/topics/{topic}/partitions/{p}/batches      RecordBatch v2 bytes, kept as sent
POST /v1/producers                                  a producer id for idempotent produce
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel, Field
from pydantic_core import to_json

from tidelog import api, runtime, snapstart
from tidelog.errors import TidelogError
from tidelog.log.write.plan import AppendResult
from tidelog.log.write.produce import (
    MAX_JSON_TIMESTAMP,
    MAX_RECORDS_PER_REQUEST,
    json_records,
    log_append_time,
    parse_raw,
    plan_json_produce,
)
from tidelog.log.write.producer_ids import allocate_producer_id
from tidelog.log.write.writer import AppendRequest
from tidelog.telemetry import Metrics, MetricUnit

app = api.resolver()
logger = Logger(service="tidelog-produce")
metrics = Metrics(namespace="tidelog", service="produce")


class Header(api.RequestModel):
    key: str
    value: str | None = None


class JsonRecord(api.RequestModel):
    key: str | None = None
    value: str | None = None
    headers: list[Header] = Field(default_factory=list)
    partition: api.Integer | None = None
    timestamp: Annotated[
        api.Integer | None,
        Field(json_schema_extra={"minimum": 0, "maximum": MAX_JSON_TIMESTAMP}),  # INVALID_TIMESTAMP
    ] = None


class ProduceRecords(api.RequestModel):
    records: Annotated[list[JsonRecord], Field(min_length=1, max_length=MAX_RECORDS_PER_REQUEST)]
    encoding: Literal["utf8", "base64"] = "utf8"
    expected_offset: Annotated[int, Field(ge=0), api.INTEGRAL] | None = None


class RecordOffset(BaseModel):
    partition: int
    offset: int
    timestamp: int


class RecordError(BaseModel):
    error: str
    error_code: int
    message: str


class ProduceResult(BaseModel):
    offsets: list[RecordOffset | RecordError]


class BatchesResult(BaseModel):
    partition: int
    base_offset: int
    last_offset: int
    log_append_time: int


class ProducerIdentity(BaseModel):
    producer_id: int
    producer_epoch: int


def _failed(error: TidelogError) -> dict[str, object]:
    return {
        "error": error.kafka_error.name,
        "error_code": error.kafka_error.code,
        "message": error.message,
    }


@app.post(
    "/v1/topics/<topic>/records",
    summary="Produce JSON records",
    responses={
        200: {
            "description": "Each record's partition and offset, or its error, in request order",
            "content": {"application/json": {"model": ProduceResult}},
        }
    },
)
def produce_records(topic: api.TopicName, body: ProduceRecords) -> Response[str]:
    records = json_records(body.records, body.encoding)
    explicit = [r.partition for r in records if r.partition is not None]
    found = runtime.topic_or_create(topic, max(explicit, default=None))
    now = runtime.clock_ms()
    partitioner = runtime.partitioner()
    plan = plan_json_produce(
        found,
        records,
        partitioner,
        now,
        expected_offset=body.expected_offset,
        on_append=partitioner.on_append,
    )
    results = runtime.appender().append(plan.requests) if plan.requests else []
    if body.expected_offset is not None and results and results[0].error is not None:
        raise results[0].error
    stamp = log_append_time(found, now)
    # Answered as plain objects (ProduceResult's, checked by the tests): a model a record cost
    # as much as placing the record.
    offsets: list[dict[str, object]] = []
    produced = 0
    for placed, record in zip(plan.placement, records, strict=True):
        if isinstance(placed, TidelogError):
            offsets.append(_failed(placed))
            continue
        request_index, position = placed
        result: AppendResult = results[request_index]
        if result.error is not None:
            offsets.append(_failed(result.error))
            continue
        produced += 1
        offsets.append(
            {
                "partition": plan.requests[request_index].partition,
                "offset": result.base_offset + position,
                "timestamp": stamp
                if stamp is not None
                else (now if record.timestamp is None else record.timestamp),
            }
        )
    metrics.add_metric(name="RecordsProduced", unit=MetricUnit.Count, value=produced)
    return api.json_response(200, to_json({"offsets": offsets}))


@app.post(
    "/v1/topics/<topic>/partitions/<partition>/batches",
    summary="Produce Kafka record batches (application/vnd.kafka.record-batch)",
)
def produce_batches(
    topic: api.TopicName,
    partition: int,
    expected_offset: Annotated[int | None, Query(ge=0)] = None,
) -> BatchesResult:
    found = runtime.topic_or_create(topic, partition)
    found.check_partition(partition)
    now = runtime.clock_ms()
    batches = parse_raw(found, api.raw_body(app), now)
    (result,) = runtime.appender().append(
        [AppendRequest(found, partition, batches, expected_offset)]
    )
    if result.error is not None:
        raise result.error
    stamp = log_append_time(found, now)
    metrics.add_metric(name="BatchesProduced", unit=MetricUnit.Count, value=len(batches))
    return BatchesResult(
        partition=partition,
        base_offset=result.base_offset,
        last_offset=result.last_offset,
        log_append_time=-1 if stamp is None else stamp,
    )


@app.post("/v1/producers", summary="A producer id for idempotent produce")
def init_producer() -> ProducerIdentity:
    producer_id, epoch = allocate_producer_id(runtime.metadata_store())
    return ProducerIdentity(producer_id=producer_id, producer_epoch=epoch)


# SnapStart: everything a first request would build, built before the snapshot (tidelog.snapstart).
_BAD_TOPIC = "/v1/topics/!/"
snapstart.enable(
    lambda: api.prime(
        app,
        [
            api.Probe(
                "POST",
                _BAD_TOPIC + "records",
                {
                    "records": [
                        {"key": "k", "value": "v", "headers": [{"key": "h", "value": "x"}]},
                        {"value": "v", "partition": 0, "timestamp": 0},
                    ],
                    "expected_offset": 0,
                },
            ),
            api.Probe("POST", _BAD_TOPIC + "partitions/0/batches", query={"expected_offset": "0"}),
        ],
    )
)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
