"""Fetch function: committed records out, by offset or by time.

GET  /v1/topics/{topic}/partitions/{p}/records   records from ?offset= (JSON, or raw batches
                                                 with Accept: application/vnd.kafka.record-batch)
POST /v1/fetch                                   many partitions in one request (multifetch)
GET  /v1/topics/{topic}/partitions/{p}/offsets   ListOffsets: ?at=earliest|latest|<ms>

Every read takes Kafka's ``isolation``: ``read_committed`` (the default, as librdkafka's) reads
below the last stable offset and leaves out aborted transactions and markers on the server;
``read_uncommitted`` reads to the high watermark, aborted records included.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel, Field

from tidelog import api, runtime, snapstart
from tidelog.errors import TidelogError
from tidelog.log.read import serve
from tidelog.telemetry import Metrics, MetricUnit

app = api.resolver()
logger = Logger(service="tidelog-fetch")
metrics = Metrics(namespace="tidelog", service="fetch")

Encoding = Literal["utf8", "base64"]
Isolation = Literal["read_committed", "read_uncommitted"]
READ_COMMITTED: Isolation = "read_committed"
MaxBytes = Annotated[int, Field(ge=1, le=serve.MAX_FETCH_BYTES), api.INTEGRAL]
MaxWait = Annotated[int, Field(ge=0, le=serve.MAX_WAIT_MS), api.INTEGRAL]


class RecordHeader(BaseModel):
    key: str
    value: str | None


class FetchedRecord(BaseModel):
    offset: int
    timestamp: int
    timestamp_type: Literal["CreateTime", "LogAppendTime"]
    key: str | None
    value: str | None
    headers: list[RecordHeader]


class PartitionRecords(BaseModel):
    records: list[FetchedRecord]
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    next_offset: int


class FetchPartition(api.RequestModel):
    topic: str  # any string: a bad name is that partition's error, as in Kafka
    partition: Annotated[int, Field(ge=0), api.INTEGRAL]
    offset: Annotated[int, Field(ge=0), api.INTEGRAL]
    max_bytes: MaxBytes = serve.DEFAULT_PARTITION_MAX_BYTES


class MultiFetch(api.RequestModel):
    partitions: Annotated[list[FetchPartition], Field(min_length=1, max_length=1000)]
    max_wait_ms: MaxWait = 0
    min_bytes: Annotated[int, Field(ge=0), api.INTEGRAL] = 1
    max_bytes: MaxBytes = serve.MAX_FETCH_BYTES
    encoding: Encoding = "utf8"
    isolation: Isolation = READ_COMMITTED


class PartitionResult(BaseModel):
    topic: str
    partition: int
    records: list[FetchedRecord] | None = None
    high_watermark: int | None = None
    last_stable_offset: int | None = None
    log_start_offset: int | None = None
    next_offset: int | None = None
    error: str | None = None
    error_code: int | None = None
    message: str | None = None


class MultiFetchResult(BaseModel):
    responses: list[PartitionResult]


class OffsetAnswer(BaseModel):
    offset: int
    timestamp: int


@app.get(
    "/v1/topics/<topic>/partitions/<partition>/records",
    summary="Fetch records from an offset (JSON, or raw batches by Accept header)",
    responses={
        200: {
            "description": "Records from the offset; raw batches when the Accept header asks",
            "content": {
                "application/json": {"model": PartitionRecords},
                serve.RECORD_BATCH_TYPE: {"schema": {"type": "string", "format": "binary"}},
            },
        }
    },
)
def fetch_records(
    topic: api.TopicName,
    partition: int,
    *,
    offset: Annotated[int, Query(ge=0)],
    max_bytes: Annotated[int, Query(ge=1, le=serve.MAX_FETCH_BYTES)] = (
        serve.DEFAULT_PARTITION_MAX_BYTES
    ),
    max_wait_ms: Annotated[int, Query(ge=0, le=serve.MAX_WAIT_MS)] = 0,
    encoding: Annotated[Encoding, Query()] = "utf8",
    isolation: Annotated[Isolation, Query()] = READ_COMMITTED,
) -> Response[Any]:
    found = runtime.topic_cache().get(topic, partition)
    found.check_partition(partition)
    data = serve.fetch_one(
        runtime.log_reader(),
        found,
        partition,
        offset,
        max_bytes=max_bytes,
        max_wait_ms=max_wait_ms,
        committed=isolation == READ_COMMITTED,
    )
    metrics.add_metric(name="BytesFetched", unit=MetricUnit.Bytes, value=data.size)
    accept = app.current_event.get_header_value("accept", default_value="") or ""
    if serve.RECORD_BATCH_TYPE in accept:
        return api.binary_response(
            serve.RECORD_BATCH_TYPE,
            b"".join(b.data for b in data.batches),
            {
                "X-High-Watermark": str(data.high_watermark),
                "X-Last-Stable-Offset": str(data.last_stable_offset),
                "X-Log-Start-Offset": str(data.log_start_offset),
                "X-Next-Offset": str(data.next_offset),
            },
        )
    records, next_offset = serve.render_partition(data, offset, encoding)
    fields = {
        "high_watermark": data.high_watermark,
        "last_stable_offset": data.last_stable_offset,
        "log_start_offset": data.log_start_offset,
        "next_offset": next_offset,
    }
    return api.json_response(200, api.json_object(fields, records=records))


@app.post(
    "/v1/fetch",
    summary="Fetch from many partitions in one request",
    responses={
        200: {
            "description": "Each partition's records or error, in request order",
            "content": {"application/json": {"model": MultiFetchResult}},
        }
    },
)
def multi_fetch(body: MultiFetch) -> Response[str]:
    # A partition named twice is fetched once, from the last place named, as Kafka's broker
    # reads a fetch's partitions into a map.
    last = {(p.topic, p.partition): p for p in body.partitions}
    wanted = [serve.Wanted(p.topic, p.partition, p.offset, p.max_bytes) for p in last.values()]
    answers = serve.fetch_many(
        runtime.log_reader(),
        runtime.topic_cache(),
        wanted,
        max_wait_ms=body.max_wait_ms,
        min_bytes=body.min_bytes,
        max_bytes=body.max_bytes,
        encoding=body.encoding,
        committed=body.isolation == READ_COMMITTED,
    )
    # The records are rendered as JSON once, where they are measured against the response's
    # limit; the answer is put together around them (MultiFetchResult, checked by the tests).
    responses = []
    for want, answer in zip(wanted, answers, strict=True):
        if isinstance(answer, TidelogError):
            details = answer.to_dict()
            failed = PartitionResult(
                topic=want.topic,
                partition=want.partition,
                error=answer.kafka_error.name,
                error_code=answer.kafka_error.code,
                message=answer.message,
                high_watermark=details.get("high_watermark"),  # type: ignore[arg-type]
                log_start_offset=details.get("log_start_offset"),  # type: ignore[arg-type]
            )
            responses.append(failed.model_dump_json().encode())
            continue
        served = PartitionResult(
            topic=want.topic,
            partition=want.partition,
            high_watermark=answer.high_watermark,
            last_stable_offset=answer.last_stable_offset,
            log_start_offset=answer.log_start_offset,
            next_offset=answer.next_offset,
        )
        fields = served.model_dump(exclude={"records"})
        responses.append(api.json_object(fields, records=answer.records_json))
    return api.json_response(200, api.json_object({}, responses=b"[" + b",".join(responses) + b"]"))


@app.get(
    "/v1/topics/<topic>/partitions/<partition>/offsets",
    summary="ListOffsets: the earliest, the latest, or the first offset at a time",
)
def list_offsets(
    topic: api.TopicName,
    partition: int,
    at: Annotated[str, Query(pattern=r"^(earliest|latest|max-timestamp|[0-9]{1,19})$")],
    isolation: Annotated[Isolation, Query()] = READ_COMMITTED,
) -> OffsetAnswer:
    found = runtime.topic_cache().get(topic, partition)
    found.check_partition(partition)
    offset, timestamp = serve.list_offset(
        runtime.log_reader(), found, partition, at, committed=isolation == READ_COMMITTED
    )
    return OffsetAnswer(offset=offset, timestamp=timestamp)


# SnapStart: everything a first request would build, built before the snapshot (tidelog.snapstart).
_BAD_TOPIC = "/v1/topics/!/"
snapstart.enable(
    lambda: api.prime(
        app,
        [
            api.Probe("GET", _BAD_TOPIC + "partitions/0/records", query={"offset": "0"}),
            api.Probe("GET", _BAD_TOPIC + "partitions/0/offsets", query={"at": "earliest"}),
            api.Probe(
                "POST",
                "/v1/fetch",
                {"partitions": [{"topic": "t", "partition": 0, "offset": -1}], "max_wait_ms": 0},
            ),
        ],
    )
)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
