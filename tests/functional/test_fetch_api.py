"""Fetch, multi-fetch and ListOffsets over HTTP, against `tidelog dev`."""

from __future__ import annotations

import base64
import threading
import time
import urllib.request
import uuid

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from tests.functional.test_produce_api import BATCH, call, kafka_python_batch
from tests.support.functions import function_module

RAW = {"Accept": "application/vnd.kafka.record-batch"}


@pytest.fixture
def topic(dev):
    name = f"f-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": 2})[0] == 201
    return name


def produce(dev, topic, values, partition=0, **extra):
    records = [{"key": f"k{v}", "value": str(v), "partition": partition, **extra} for v in values]
    status, body = call(dev, "POST", f"/v1/topics/{topic}/records", {"records": records})
    assert status == 200, body
    return [o["offset"] for o in body["offsets"]]


def fetch(dev, topic, offset, partition=0, **query):
    params = "&".join(f"{k}={v}" for k, v in {"offset": offset, **query}.items())
    return call(dev, "GET", f"/v1/topics/{topic}/partitions/{partition}/records?{params}")


def test_records_come_back_at_their_offsets(dev, topic):
    produce(dev, topic, range(5))
    produce(dev, topic, range(5, 8))
    status, body = fetch(dev, topic, 0)
    assert status == 200, body
    assert [(r["offset"], r["key"], r["value"]) for r in body["records"]] == [
        (i, f"k{i}", str(i)) for i in range(8)
    ]
    assert body["records"][0]["timestamp_type"] == "CreateTime"
    function_module("fetch").PartitionRecords.model_validate(body)
    assert (body["high_watermark"], body["log_start_offset"], body["next_offset"]) == (8, 0, 8)
    # From the middle of a batch: the records before the offset are left out.
    assert [r["offset"] for r in fetch(dev, topic, 6)[1]["records"]] == [6, 7]
    # At the end: nothing, and the same offset to come back to.
    assert fetch(dev, topic, 8)[1] == {
        "records": [],
        "high_watermark": 8,
        "last_stable_offset": 8,
        "log_start_offset": 0,
        "next_offset": 8,
    }


def test_offsets_out_of_range_are_416_with_the_bounds(dev, topic):
    produce(dev, topic, range(3))
    status, body = fetch(dev, topic, 4)
    assert (status, body["error"], body["error_code"]) == (416, "OFFSET_OUT_OF_RANGE", 1)
    assert (body["log_start_offset"], body["high_watermark"]) == (0, 3)


def test_bad_fetches_are_400_or_404(dev, topic):
    assert fetch(dev, topic, -1)[0] == 400
    assert fetch(dev, topic, 0, max_bytes=0)[0] == 400
    assert fetch(dev, topic, 0, encoding="latin1")[0] == 400
    assert fetch(dev, topic, 0, partition=2)[1]["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert fetch(dev, f"absent-{uuid.uuid4().hex[:8]}", 0)[0] == 404  # fetch never creates


def test_max_bytes_is_soft_for_the_first_batch_and_hard_after(dev, topic):
    for start in range(0, 30, 10):
        produce(dev, topic, range(start, start + 10))
    status, body = fetch(dev, topic, 0, max_bytes=1)
    assert status == 200
    assert [r["offset"] for r in body["records"]] == list(range(10))
    assert body["next_offset"] == 10
    assert len(fetch(dev, topic, 10, max_bytes=10**6)[1]["records"]) == 20


def test_raw_batches_carry_committed_offsets_and_read_in_kafka_python(dev, topic):
    path = f"/v1/topics/{topic}/partitions/1/batches"
    for _ in range(2):
        status, _ = call(dev, "POST", path, kafka_python_batch(3), headers=BATCH)
        assert status == 200
    request = urllib.request.Request(
        f"{dev.api_url}/v1/topics/{topic}/partitions/1/records?offset=1", headers=RAW
    )
    with urllib.request.urlopen(request) as response:
        assert response.headers["Content-Type"] == "application/vnd.kafka.record-batch"
        assert response.headers["X-High-Watermark"] == "6"
        assert response.headers["X-Next-Offset"] == "6"
        data = response.read()
    first = DefaultRecordBatch(data[: len(data) // 2])
    second = DefaultRecordBatch(data[len(data) // 2 :])
    assert (first.base_offset, second.base_offset) == (0, 3)
    assert first.validate_crc()
    assert second.validate_crc()
    assert [r.offset for r in second] == [3, 4, 5]


def test_binary_values_need_base64(dev, topic):
    raw = base64.b64encode(b"\xff\xfe").decode()
    status, _ = call(
        dev,
        "POST",
        f"/v1/topics/{topic}/records",
        {"records": [{"value": raw, "partition": 0}], "encoding": "base64"},
    )
    assert status == 200
    status, body = fetch(dev, topic, 0)
    assert (status, body["error"]) == (400, "INVALID_REQUEST")
    assert "base64" in body["message"]
    assert fetch(dev, topic, 0, encoding="base64")[1]["records"][0]["value"] == raw


def test_long_poll_returns_when_a_record_arrives(dev, topic):
    produce(dev, topic, [0])
    threading.Timer(0.3, produce, (dev, topic, [1])).start()
    started = time.monotonic()
    status, body = fetch(dev, topic, 1, max_wait_ms=5000)
    waited = time.monotonic() - started
    assert status == 200
    assert [r["offset"] for r in body["records"]] == [1]
    assert 0.2 < waited < 4.5
    started = time.monotonic()
    assert fetch(dev, topic, 2, max_wait_ms=300)[1]["records"] == []
    assert time.monotonic() - started >= 0.3


def test_multi_fetch_answers_each_partition(dev, topic):
    produce(dev, topic, range(3), partition=0)
    produce(dev, topic, range(2), partition=1)
    status, body = call(
        dev,
        "POST",
        "/v1/fetch",
        {
            "partitions": [
                {"topic": topic, "partition": 0, "offset": 1},
                {"topic": topic, "partition": 1, "offset": 0},
                {"topic": topic, "partition": 1 + 1, "offset": 0},
                {"topic": f"absent-{uuid.uuid4().hex[:8]}", "partition": 0, "offset": 0},
            ]
        },
    )
    assert status == 200, body
    # Put together around records rendered once, the answer is still the declared model, every
    # field present in every partition's answer.
    models = function_module("fetch")
    models.MultiFetchResult.model_validate(body)
    for answer in body["responses"]:
        assert set(answer) == set(models.PartitionResult.model_fields)
    first, second, missing_partition, missing_topic = body["responses"]
    assert [r["offset"] for r in first["records"]] == [1, 2]
    assert (first["next_offset"], second["next_offset"]) == (3, 2)
    assert missing_partition["error"] == missing_topic["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    status, body = call(
        dev,
        "POST",
        "/v1/fetch",
        {"partitions": [{"topic": topic, "partition": 0, "offset": 9}]},
    )
    (answer,) = body["responses"]
    assert (answer["error"], answer["high_watermark"]) == ("OFFSET_OUT_OF_RANGE", 3)
    # Named twice: fetched once, from the place named last, as Kafka's broker does.
    first, last = ({"topic": topic, "partition": 0, "offset": o} for o in (0, 2))
    status, body = call(dev, "POST", "/v1/fetch", {"partitions": [first, last]})
    (answer,) = body["responses"]
    assert status == 200
    assert [r["offset"] for r in answer["records"]] == [2]


def test_multi_fetch_waits_for_min_bytes(dev, topic):
    threading.Timer(0.3, produce, (dev, topic, [0])).start()
    started = time.monotonic()
    status, body = call(
        dev,
        "POST",
        "/v1/fetch",
        {
            "partitions": [{"topic": topic, "partition": 0, "offset": 0}],
            "max_wait_ms": 5000,
            "min_bytes": 1,
        },
    )
    assert status == 200
    assert [r["offset"] for r in body["responses"][0]["records"]] == [0]
    assert time.monotonic() - started < 4.5


def test_list_offsets(dev, topic):
    offsets_path = f"/v1/topics/{topic}/partitions/0/offsets"
    assert call(dev, "GET", f"{offsets_path}?at=latest")[1] == {"offset": 0, "timestamp": -1}
    for i, stamp in enumerate((1000, 2000, 3000)):
        produce(dev, topic, [i], timestamp=stamp)
    assert call(dev, "GET", f"{offsets_path}?at=earliest")[1] == {"offset": 0, "timestamp": -1}
    assert call(dev, "GET", f"{offsets_path}?at=latest")[1] == {"offset": 3, "timestamp": -1}
    assert call(dev, "GET", f"{offsets_path}?at=1500")[1] == {"offset": 1, "timestamp": 2000}
    assert call(dev, "GET", f"{offsets_path}?at=3000")[1] == {"offset": 2, "timestamp": 3000}
    assert call(dev, "GET", f"{offsets_path}?at=3001")[1] == {"offset": -1, "timestamp": -1}
    assert call(dev, "GET", f"{offsets_path}?at=soon")[0] == 400


def test_a_compacted_topic_refuses_keyless_records(dev):
    name = f"c-{uuid.uuid4().hex[:8]}"
    configs = {"cleanup.policy": "compact"}
    assert call(dev, "POST", "/v1/topics", {"name": name, "configs": configs})[0] == 201
    records = [{"key": "k", "value": "kept"}, {"value": "no key"}]
    status, body = call(dev, "POST", f"/v1/topics/{name}/records", {"records": records})
    assert status == 200
    assert body["offsets"][0]["offset"] == 0
    assert body["offsets"][1]["error"] == "INVALID_RECORD"
    keyless = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 10**6)
    keyless.append(0, 1_700_000_000_000, None, b"value", [])
    path = f"/v1/topics/{name}/partitions/0/batches"
    status, body = call(dev, "POST", path, bytes(keyless.build()), headers=BATCH)
    assert (status, body["error"]) == (400, "INVALID_RECORD")
    # KIP-467: the records at fault, by index in the batch, for the producer to drop.
    assert [e["batch_index"] for e in body["record_errors"]] == [0]
    assert fetch(dev, name, 0)[1]["high_watermark"] == 1
