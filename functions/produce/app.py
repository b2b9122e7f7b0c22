"""Produce function: records in, offsets out, acknowledged only once committed.

POST /v1/topics/{topic}/records                     JSON records, placed by the partitioner
POST /v1/topics/{topic}/partitions/{p}/batches      RecordBatch v2 bytes, kept as sent
POST /v1/producers                                  a producer id for idempotent produce

Transactions (Kafka's, KIP-98 and KIP-447), the producer's side and the operator's:

POST /v1/transactions/{id}/init          InitProducerId: the id's producer, epoch bumped
POST /v1/transactions/{id}/partitions    AddPartitionsToTxn (begins the transaction)
POST /v1/transactions/{id}/offsets       AddOffsetsToTxn and TxnOffsetCommit in one
POST /v1/transactions/{id}/end           EndTxn: commit or abort
GET  /v1/transactions                    ListTransactions
GET  /v1/transactions/{id}               DescribeTransactions
POST /v1/transactions/{id}/abort         abort an open transaction, fencing its producer

A transaction's batches go to the batches route with ``?transactional_id=``.
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
from tidelog.transactions.offsets import PendingOffset
from tidelog.txn.state import Txn

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
    transactional_id: Annotated[str | None, Query(pattern=api.ID_PATTERN)] = None,
) -> BatchesResult:
    found = runtime.topic_or_create(topic, partition)
    found.check_partition(partition)
    now = runtime.clock_ms()
    batches = parse_raw(found, api.raw_body(app), now)
    guard = None
    first = next((b for b in batches if b.transactional), None)
    if transactional_id is not None and first is not None:
        guard = runtime.transactions().guard(
            transactional_id, first.producer_id, first.producer_epoch, (topic, partition)
        )
    (result,) = runtime.appender().append(
        [AppendRequest(found, partition, batches, expected_offset, guard=guard)]
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


# -- transactions ---------------------------------------------------------------------------


class TxnInit(api.RequestModel):
    transaction_timeout_ms: Annotated[int, Field(ge=1), api.INTEGRAL] = 60_000
    # KIP-360: a producer resuming its identity names it; -1 for a new one.
    producer_id: api.Integer = -1
    producer_epoch: api.Integer = -1


class TxnProducer(api.RequestModel):
    producer_id: api.Integer
    producer_epoch: api.Integer


class TxnPartition(api.RequestModel):
    topic: api.TopicField
    partition: Annotated[int, Field(ge=0), api.INTEGRAL]


class TxnPartitions(TxnProducer):
    partitions: Annotated[list[TxnPartition], Field(min_length=1, max_length=1000)]


class TxnOffset(TxnPartition):
    offset: Annotated[int, Field(ge=0), api.INTEGRAL]
    metadata: str = ""


class TxnOffsets(TxnProducer):
    group: Annotated[str, Field(min_length=1, max_length=255)]
    offsets: Annotated[list[TxnOffset], Field(max_length=10_000)]
    member_id: str = ""  # KIP-447: the consumer's member id and generation, to be fenced by
    generation_id: api.Integer = -1


class TxnEnd(TxnProducer):
    commit: bool


class TxnDescription(BaseModel):
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_ms: int
    partitions: list[dict[str, object]]
    groups: list[str]


class TxnList(BaseModel):
    transactions: list[TxnDescription]


def _described(txn: Txn) -> TxnDescription:
    return TxnDescription(
        transactional_id=txn.transactional_id,
        state=txn.state.value,
        producer_id=txn.producer_id,
        producer_epoch=txn.epoch,
        transaction_timeout_ms=txn.timeout_ms,
        transaction_start_ms=txn.started_ms,
        partitions=[{"topic": t, "partition": p} for t, p in sorted(txn.partitions)],
        groups=sorted(txn.groups),
    )


def _checked(partitions: list[TxnPartition]) -> list[tuple[str, int]]:
    for wanted in partitions:
        runtime.topic_cache().get(wanted.topic, wanted.partition).check_partition(wanted.partition)
    return [(p.topic, p.partition) for p in partitions]


@app.post(
    "/v1/transactions/<transactional_id>/init", summary="InitProducerId: begin as the id's producer"
)
def init_transactions(transactional_id: api.TransactionalId, body: TxnInit) -> ProducerIdentity:
    expected = (body.producer_id, body.producer_epoch) if body.producer_id >= 0 else None
    txn = runtime.transactions().init_producer_id(
        transactional_id, body.transaction_timeout_ms, expected
    )
    return ProducerIdentity(producer_id=txn.producer_id, producer_epoch=txn.epoch)


@app.post("/v1/transactions/<transactional_id>/partitions", summary="AddPartitionsToTxn")
def add_partitions(transactional_id: api.TransactionalId, body: TxnPartitions) -> TxnDescription:
    txn = runtime.transactions().add_partitions(
        transactional_id, body.producer_id, body.producer_epoch, _checked(body.partitions)
    )
    return _described(txn)


@app.post(
    "/v1/transactions/<transactional_id>/offsets",
    summary="AddOffsetsToTxn and TxnOffsetCommit: offsets that commit with the transaction",
)
def commit_offsets(transactional_id: api.TransactionalId, body: TxnOffsets) -> TxnDescription:
    coordinator = runtime.transactions()
    _checked([TxnPartition(topic=o.topic, partition=o.partition) for o in body.offsets])
    coordinator.add_offsets(transactional_id, body.producer_id, body.producer_epoch, body.group)
    coordinator.commit_offsets(
        transactional_id,
        body.producer_id,
        body.producer_epoch,
        body.group,
        [PendingOffset(o.topic, o.partition, o.offset, o.metadata) for o in body.offsets],
        member_id=body.member_id,
        generation=body.generation_id,
    )
    return _described(coordinator.describe(transactional_id))


@app.post("/v1/transactions/<transactional_id>/end", summary="EndTxn: commit or abort")
def end_transaction(transactional_id: api.TransactionalId, body: TxnEnd) -> TxnDescription:
    txn = runtime.transactions().end_txn(
        transactional_id, body.producer_id, body.producer_epoch, body.commit
    )
    return _described(txn)


@app.get("/v1/transactions", summary="ListTransactions")
def list_transactions(
    state: Annotated[str | None, Query(pattern=r"^[A-Za-z]{1,20}$")] = None,
) -> TxnList:
    listed = [
        _described(t)
        for t in runtime.transactions().list()
        if state is None or t.state.value.lower() == state.lower()
    ]
    return TxnList(transactions=listed)


@app.get("/v1/transactions/<transactional_id>", summary="DescribeTransactions")
def describe_transaction(transactional_id: api.TransactionalId) -> TxnDescription:
    return _described(runtime.transactions().describe(transactional_id))


@app.post(
    "/v1/transactions/<transactional_id>/abort",
    summary="Abort an open transaction (a hanging one), fencing its producer",
)
def abort_transaction(transactional_id: api.TransactionalId) -> TxnDescription:
    return _described(runtime.transactions().abort(transactional_id))


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
