"""A generated corpus of over a thousand bad produce and admin requests (DESIGN.md §4.7):
every one answered 4xx with a Kafka error name, none 5xx, nothing stored, memory bounded."""

from __future__ import annotations

import json
import random
import resource
import struct
import time

import pytest
import zstandard
from kafka.record.default_records import DefaultRecordBatch

from tidelog.log import keys
from tidelog.log.head import high_watermark
from tidelog.records import RecordBatchBuilder
from tidelog.records.crc import crc32c
from tidelog.records.varint import decode_varint

SEED = random.randrange(2**32)
T0 = 1_700_000_000_000
BATCHES = "/v1/topics/{topic}/partitions/{partition}/batches"
RECORDS = "/v1/topics/{topic}/records"
BINARY = "application/vnd.kafka.record-batch"


def valid_batch(rng, n=None, **options):
    builder = RecordBatchBuilder(**options)
    for i in range(n or rng.randint(1, 5)):
        builder.append(rng.choice([None, b"k"]), rng.randbytes(rng.randint(0, 40)), (), T0 + i)
    return builder.build()


def recrc(raw):
    raw = bytearray(raw)
    struct.pack_into(">I", raw, 17, crc32c(memoryview(raw)[21:]))
    return bytes(raw)


def structural_positions(raw):
    """Where a batch's records keep their varints (lengths, deltas, counts): not payload bytes
    and not the int8 record attributes, which Kafka ignores."""
    positions, pos, data = [], 0, raw[61:]
    for _ in range(struct.unpack_from(">i", raw, 57)[0]):
        start = pos
        _, pos = decode_varint(data, pos)
        positions += range(start, pos)
        pos += 1  # attributes
        for _ in range(2):  # timestampDelta, offsetDelta
            start, (_, pos) = pos, decode_varint(data, pos, 10)
            positions += range(start, pos)
        for _ in range(2):  # key, value
            start, (size, pos) = pos, decode_varint(data, pos)
            positions += range(start, pos)
            pos += max(size, 0)
        positions.append(pos)  # header count (the corpus's records have none)
        pos += 1
    return [61 + p for p in positions]


def mangle_records(rng, raw):
    """Damage the records' varints but keep the CRC right: only deeper checks can tell."""
    positions = structural_positions(raw)
    raw = bytearray(raw)
    for _ in range(rng.randint(1, 3)):
        raw[rng.choice(positions)] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFF, rng.randrange(256)])
    return recrc(raw)


def kafka_python_accepts(raw):
    try:
        batch = DefaultRecordBatch(bytearray(raw))
        return (
            len(list(batch)) == batch.record_count
            if hasattr(batch, "record_count")
            else (len(list(batch)) == struct.unpack_from(">i", raw, 57)[0])
        )
    except Exception:  # kafka-python raises a variety of errors on bad input
        return False


def batch_corpus(rng):
    """(body, partition) pairs, each one bad."""
    cases = []
    for _ in range(150):
        cases.append(rng.randbytes(rng.randint(0, 300)))  # noise
    for _ in range(150):
        raw = bytearray(valid_batch(rng))
        raw[rng.randrange(21, len(raw))] ^= rng.randint(1, 255)  # CRC mismatch
        cases.append(bytes(raw))
    for _ in range(100):
        raw = valid_batch(rng)
        cases.append(raw[: rng.randrange(1, len(raw))])  # truncated
    for _ in range(50):
        cases.append(valid_batch(rng) + rng.randbytes(rng.randint(1, 60)))  # trailing junk
    while len(cases) < 700:  # varints, lengths, counts: bad by an independent parser's word
        candidate = mangle_records(rng, valid_batch(rng))
        if not kafka_python_accepts(candidate):
            cases.append(candidate)
    for _ in range(50):
        raw = bytearray(valid_batch(rng))
        struct.pack_into(">i", raw, 57, rng.choice([0, -1, 99, 2**31 - 1]))  # record count
        cases.append(recrc(raw))
    for _ in range(30):
        raw = bytearray(valid_batch(rng))
        raw[16] = rng.choice([3, 4, 127, 255])  # magic
        cases.append(bytes(raw))
    for _ in range(30):
        builder = RecordBatchBuilder()
        # Past message.timestamp.after.max.ms, an hour ahead of the server's clock.
        ahead = rng.choice([2 * 3_600_000, 2**50])
        builder.append(None, b"v", (), int(time.time() * 1000) + ahead)
        cases.append(builder.build())
    for _ in range(30):
        builder = RecordBatchBuilder()
        builder.append(None, b"a", (), T0, offset_delta=0)
        builder.append(None, b"b", (), T0, offset_delta=rng.randint(2, 9))  # offset gap
        cases.append(builder.build())
    for _ in range(20):
        cases.append(valid_batch(rng, 1, is_control_batch=True))
        cases.append(
            valid_batch(
                rng, 1, producer_id=3, producer_epoch=0, base_sequence=0, is_transactional=True
            )
        )
        cases.append(valid_batch(rng, 1, producer_id=3, producer_epoch=-1, base_sequence=0))
    big = RecordBatchBuilder()
    big.append(None, rng.randbytes(20_000), (), T0)  # over max.message.bytes (16 KiB here)
    cases += [big.build()] * 10
    bomb = RecordBatchBuilder("zstd")
    bomb.append(None, b"", (), T0)
    raw = bomb.build()
    body = zstandard.ZstdCompressor(level=19).compress(bytes(80 * 1024 * 1024))
    header = bytearray(raw[:61])
    struct.pack_into(">i", header, 8, 61 - 12 + len(body))
    bomb_batch = recrc(bytes(header) + body)  # 80 MiB once decompressed: over the 64 MiB cap
    cases += [bomb_batch] * 3
    return cases


def json_corpus(rng):
    records = [{"value": "v"}]
    bodies = [
        "",
        "not json",
        "[]",
        "{",
        '{"records": 5}',
        '{"records": []}',
        '{"records": [5]}',
        json.dumps({"records": [{"value": 5}]}),
        json.dumps({"records": [{"key": {"a": 1}}]}),
        json.dumps({"records": [{"value": "v", "color": "red"}]}),
        json.dumps({"records": [{"value": "!!", "headers": []}], "encoding": "base64"}),
        json.dumps({"records": records, "encoding": "latin1"}),
        json.dumps({"records": [{"value": "v", "partition": "1"}]}),
        json.dumps({"records": [{"value": "v", "partition": True}]}),
        json.dumps({"records": [{"value": "v", "partition": 1.5}]}),
        json.dumps({"records": [{"value": "v", "timestamp": -5}]}),
        json.dumps({"records": [{"value": "v", "timestamp": "now"}]}),
        json.dumps({"records": [{"value": "v", "headers": [{"value": "x"}]}]}),
        json.dumps({"records": [{"value": "v", "headers": "h"}]}),
        json.dumps({"records": [{"value": "v", "headers": [{"key": "\ud800"}]}]}),
        json.dumps(
            {
                "records": [{"value": "v", "partition": 0}, {"value": "w", "partition": 1}],
                "expected_offset": 0,
            }
        ),
        json.dumps({"records": records, "expected_offset": -1}),
        json.dumps({"records": [{"value": "v"}] * 10_001}),
    ]
    for _ in range(60):
        bodies.append(rng.randbytes(rng.randint(1, 80)).decode("latin-1"))
    return bodies


@pytest.fixture
def corpus_topic(function, rest_event):
    admin = function("AdminFunction")
    name = f"corpus-{SEED}"
    created = admin.invoke(
        rest_event(
            "POST",
            "/v1/topics",
            body=json.dumps(
                {"name": name, "partitions": 2, "configs": {"max.message.bytes": 16384}}
            ),
            content_type="application/json",
        )
    )
    assert created["statusCode"] == 201, created
    return name


def snapshot(meta, objects, topic_id):
    return (
        [high_watermark(meta, topic_id, p) for p in range(2)],
        sum(1 for _ in objects.list("data/")),
        sum(1 for _ in meta.query(keys.ORPHANS_PK)),
    )


def test_over_a_thousand_bad_requests_change_nothing(function, rest_event, corpus_topic):
    from tidelog import runtime

    rng = random.Random(SEED)
    produce, admin = function("ProduceFunction"), function("AdminFunction")
    topic_id = runtime.topics().get(corpus_topic).topic_id
    meta, objects = runtime.metadata_store(), runtime.object_store()
    before = snapshot(meta, objects, topic_id)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    requests = []
    for body in batch_corpus(rng):
        requests.append(
            (
                produce,
                rest_event(
                    "POST",
                    BATCHES,
                    {"topic": corpus_topic, "partition": rng.randrange(2)},
                    body=body,
                    content_type=BINARY,
                ),
            )
        )
    for body in json_corpus(rng):
        requests.append(
            (
                produce,
                rest_event(
                    "POST",
                    RECORDS,
                    {"topic": corpus_topic},
                    body=body,
                    content_type="application/json",
                ),
            )
        )
    good = valid_batch(rng)
    for topic, partition, query, content_type in [
        (corpus_topic, -1, None, BINARY),
        (corpus_topic, 2, None, BINARY),
        (corpus_topic, "x", None, BINARY),
        ("nope", 0, None, BINARY),
        ("bad name!", 0, None, BINARY),
        (corpus_topic, 0, {"expected_offset": "-3"}, BINARY),
        (corpus_topic, 0, {"expected_offset": "soon"}, BINARY),
        (corpus_topic, 0, None, "text/plain"),
        ("a" * 300, 0, None, BINARY),
    ]:
        body = good if content_type == BINARY else good.decode("latin-1")
        requests.append(
            (
                produce,
                rest_event(
                    "POST",
                    BATCHES,
                    {"topic": topic, "partition": partition},
                    body=body,
                    content_type=content_type,
                    query=query,
                ),
            )
        )
    for body in [
        {"name": "..", "partitions": 1},
        {"name": "x" * 250, "partitions": 1},
        {"name": "ok", "partitions": 0},
        {"name": "ok", "partitions": 10**6},
        {"name": "ok", "configs": {"retention.ms": "-5"}},
        {"partitions": 1},
        {"name": "ok", "configs": {"no.such": 1}},
        {"name": "white space"},
    ]:
        requests.append(
            (
                admin,
                rest_event(
                    "POST", "/v1/topics", body=json.dumps(body), content_type="application/json"
                ),
            )
        )
    assert len(requests) >= 1000

    statuses = {}
    for handler, event in requests:
        response = handler.invoke(event)
        status = response["statusCode"]
        statuses[status] = statuses.get(status, 0) + 1
        assert 400 <= status < 500, f"seed {SEED}: {status} {response['body'][:300]}"
        assert json.loads(response["body"])["error"], f"seed {SEED}: no Kafka error name"

    assert snapshot(meta, objects, topic_id) == before, f"seed {SEED}: state changed"
    assert [t.name for t in runtime.topics().list() if t.name.startswith("ok")] == []
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    assert grown_mb < 600, f"seed {SEED}: peak memory grew by {grown_mb:.0f} MB"
    assert set(statuses) <= {400, 404, 413, 415}, statuses
