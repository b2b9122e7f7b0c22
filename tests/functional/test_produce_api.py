"""Topics and produce over HTTP, against `tidelog dev` (group commit on, as a long-running
host runs it)."""

from __future__ import annotations

import base64
import json
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from tests.support.devserver import get_json
from tests.support.functions import function_module

from tidelog.log.read.reader import committed_records
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.s3 import S3ObjectStore

BATCH = {"Content-Type": "application/vnd.kafka.record-batch"}
JSON = {"Content-Type": "application/json"}


def call(dev, method, path, body=None, headers=None):
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    return get_json(
        f"{dev.api_url}{path}",
        method=method,
        body=data,
        headers=headers or (JSON if body is not None else {}),
    )


@pytest.fixture
def topic(dev):
    name = f"t-{uuid.uuid4().hex[:8]}"
    status, body = call(dev, "POST", "/v1/topics", {"name": name, "partitions": 3})
    assert status == 201, body
    return name


@pytest.fixture
def log_of(dev, dev_client, template):
    (table,) = template.tables()
    meta = DynamoMetadataStore(dev_client("dynamodb"), table.name)
    objects = S3ObjectStore(dev_client("s3"), template.buckets()[0])

    def read(topic_id, partition, offset=0):
        return list(committed_records(meta, objects, topic_id, partition, offset))

    return read


def kafka_python_batch(n, producer_id=-1, epoch=-1, sequence=-1, codec=0):
    builder = DefaultRecordBatchBuilder(2, codec, False, producer_id, epoch, sequence, 10**7)
    for i in range(n):
        builder.append(i, 1_700_000_000_000 + i, b"k%d" % i, b"value %d" % i, [("h", b"x")])
    return bytes(builder.build())


def test_topic_lifecycle(dev, topic):
    status, described = call(dev, "GET", f"/v1/topics/{topic}")
    assert status == 200
    assert [p["high_watermark"] for p in described["partitions"]] == [0, 0, 0]
    assert described["configs"]["retention.ms"] == "604800000"
    assert topic in [t["name"] for t in call(dev, "GET", "/v1/topics")[1]["topics"]]
    status, body = call(dev, "POST", "/v1/topics", {"name": topic, "partitions": 1})
    assert (status, body["error"]) == (409, "TOPIC_ALREADY_EXISTS")
    status, body = call(
        dev, "PATCH", f"/v1/topics/{topic}/configs", {"configs": {"retention.ms": 1000}}
    )
    assert (status, body["configs"]["retention.ms"]) == (200, "1000")
    status, body = call(dev, "POST", f"/v1/topics/{topic}/partitions", {"count": 5})
    assert (status, body["partitions"]) == (200, 5)
    status, body = call(dev, "POST", f"/v1/topics/{topic}/partitions", {"count": 2})
    assert (status, body["error"]) == (409, "INVALID_PARTITIONS")
    assert call(dev, "DELETE", f"/v1/topics/{topic}")[0] == 200
    assert call(dev, "GET", f"/v1/topics/{topic}")[1]["error"] == "UNKNOWN_TOPIC_OR_PARTITION"


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"name": "bad name", "partitions": 1}, 400, "INVALID_TOPIC_EXCEPTION"),
        ({"name": "ok", "partitions": 0}, 400, "INVALID_REQUEST"),
        ({"name": "ok2", "partitions": 1, "configs": {"retention.ms": "x"}}, 400, "INVALID_CONFIG"),
        ({"name": "ok3", "partitions": "3"}, 400, "INVALID_REQUEST"),
    ],
)
def test_bad_topic_requests(dev, body, status, error):
    assert call(dev, "POST", "/v1/topics", body)[:1] == (status,)
    assert call(dev, "POST", "/v1/topics", body)[1]["error"] == error


def test_raw_batches_are_stored_as_sent(dev, topic, log_of):
    raw = kafka_python_batch(3, codec=3)
    status, body = call(dev, "POST", f"/v1/topics/{topic}/partitions/1/batches", raw, BATCH)
    assert status == 200, body
    assert body == {"partition": 1, "base_offset": 0, "last_offset": 2, "log_append_time": -1}
    status, body = call(dev, "POST", f"/v1/topics/{topic}/partitions/1/batches", raw, BATCH)
    assert (body["base_offset"], body["last_offset"]) == (3, 5)
    topic_id = call(dev, "GET", f"/v1/topics/{topic}")[1]["topic_id"]
    records = log_of(topic_id, 1)
    assert [r.offset for r in records] == list(range(6))
    assert records[4].value == b"value 1"
    assert records[4].headers == (("h", b"x"),)


def test_idempotent_producer_over_http(dev, topic):
    producer = call(dev, "POST", "/v1/producers")[1]
    pid, epoch = producer["producer_id"], producer["producer_epoch"]
    path = f"/v1/topics/{topic}/partitions/0/batches"
    first = call(dev, "POST", path, kafka_python_batch(2, pid, epoch, 0), BATCH)[1]
    retry = call(dev, "POST", path, kafka_python_batch(2, pid, epoch, 0), BATCH)[1]
    assert retry == first  # the same offsets: not written again
    # A gap (2-4 have not landed) is "retry": they may still be in flight elsewhere.
    status, body = call(dev, "POST", path, kafka_python_batch(1, pid, epoch, 5), BATCH)
    assert (status, body["error"], body["error_code"], body["retriable"]) == (
        503,
        "REQUEST_TIMED_OUT",
        7,
        True,
    )
    # Overlapping what was written (1 again, with 2): out of order, for good.
    status, body = call(dev, "POST", path, kafka_python_batch(2, pid, epoch, 1), BATCH)
    assert (status, body["error"], body["error_code"]) == (400, "OUT_OF_ORDER_SEQUENCE_NUMBER", 45)
    status, body = call(
        dev, "POST", path, kafka_python_batch(1, pid, epoch - 1 if epoch else -2, 2), BATCH
    )
    assert status == 400
    assert call(dev, "GET", f"/v1/topics/{topic}")[1]["partitions"][0]["high_watermark"] == 2


def test_conditional_append(dev, topic):
    path = f"/v1/topics/{topic}/partitions/2/batches"
    assert call(dev, "POST", path + "?expected_offset=0", kafka_python_batch(2), BATCH)[0] == 200
    status, body = call(dev, "POST", path + "?expected_offset=0", kafka_python_batch(1), BATCH)
    assert status == 412
    assert body["high_watermark"] == 2
    assert call(dev, "POST", path + "?expected_offset=2", kafka_python_batch(1), BATCH)[0] == 200


def test_json_records(dev, topic, log_of):
    body = {
        "records": [
            {"key": "user-1", "value": "a"},
            {"key": "user-1", "value": "b", "headers": [{"key": "h", "value": None}]},
            {"value": "keyless", "timestamp": 1234},
            {"value": "nowhere", "partition": 7},
        ]
    }
    status, result = call(dev, "POST", f"/v1/topics/{topic}/records", body)
    assert status == 200
    produce = function_module("produce")
    produce.ProduceResult.model_validate(result)  # answered as declared, no field more or less
    for answer in result["offsets"]:
        assert set(answer) in (
            set(produce.RecordOffset.model_fields),
            set(produce.RecordError.model_fields),
        )
    first, second, keyless, nowhere = result["offsets"]
    assert first["partition"] == second["partition"]  # same key, same partition
    assert second["offset"] == first["offset"] + 1
    assert keyless["timestamp"] == 1234
    assert nowhere["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    encoded = {
        "encoding": "base64",
        "records": [{"value": base64.b64encode(b"\x00\xff").decode(), "partition": 2}],
    }
    (placed,) = call(dev, "POST", f"/v1/topics/{topic}/records", encoded)[1]["offsets"]
    topic_id = call(dev, "GET", f"/v1/topics/{topic}")[1]["topic_id"]
    assert log_of(topic_id, 2, placed["offset"])[0].value == b"\x00\xff"


def test_log_append_time_topics(dev):
    name = f"lat-{uuid.uuid4().hex[:8]}"
    call(
        dev,
        "POST",
        "/v1/topics",
        {"name": name, "partitions": 1, "configs": {"message.timestamp.type": "LogAppendTime"}},
    )
    body = call(
        dev, "POST", f"/v1/topics/{name}/partitions/0/batches", kafka_python_batch(2), BATCH
    )[1]
    assert body["log_append_time"] > 1_700_000_000_000


def test_batches_need_the_binary_content_type(dev, topic):
    status, body = call(
        dev,
        "POST",
        f"/v1/topics/{topic}/partitions/0/batches",
        b"abc",
        {"Content-Type": "text/plain"},
    )
    assert status == 415
    assert body["error"] == "INVALID_REQUEST"


def test_concurrent_producers_share_flushes(dev, topic, log_of):
    def send(i):
        return call(
            dev,
            "POST",
            f"/v1/topics/{topic}/records",
            {"records": [{"value": f"r{i}-{j}", "partition": i % 3} for j in range(5)]},
        )

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(send, range(64)))
    assert {status for status, _ in results} == {200}
    topic_id = call(dev, "GET", f"/v1/topics/{topic}")[1]["topic_id"]
    for partition in range(3):
        records = log_of(topic_id, partition)
        assert [r.offset for r in records] == list(range(len(records)))
        acked = {
            (o["offset"], f"r{i}-{j}".encode())
            for i, (_, body) in enumerate(results)
            for j, o in enumerate(body["offsets"])
            if o["partition"] == partition
        }
        assert {(r.offset, r.value) for r in records} == acked
