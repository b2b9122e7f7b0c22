"""Many writers, many partitions, real stores: every acknowledged record exactly once, at its
acknowledged offset; offsets contiguous from 0; the high watermark equals what was acknowledged.

Runs against the locked emulator (S3 and DynamoDB) and against AWS's DynamoDB Local for the
metadata (objects stay on the emulator)."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from tests.support.resources import new_bucket, new_table

from tidelog.local.stack import aws_client
from tidelog.log.head import high_watermark
from tidelog.log.read.reader import committed_records
from tidelog.log.topics import Topics
from tidelog.log.write.staging import StagingArea
from tidelog.log.write.validate import validate_batches
from tidelog.log.write.writer import AppendRequest, Writer
from tidelog.records import RecordBatchBuilder
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.s3 import S3ObjectStore

WRITERS, REQUESTS, PARTITIONS = 8, 25, 6
SEED = random.randrange(2**32)


@pytest.fixture(params=["emulator", "dynamodb-local"])
def stores(request, dev_client, template):
    if request.param == "emulator":
        ddb = dev_client("dynamodb")
    else:
        ddb = aws_client("dynamodb", request.getfixturevalue("dynamodb_local").url, "us-east-1")
    s3 = dev_client("s3")
    return DynamoMetadataStore(ddb, new_table(ddb, template)), S3ObjectStore(s3, new_bucket(s3))


def payload(writer, request, batch, record):
    return f"{writer}/{request}/{batch}/{record}".encode()


def test_concurrent_writers_lose_and_duplicate_nothing(stores, tmp_path):
    meta, objects = stores
    topic = Topics(meta, lambda: 0).create("concurrent", PARTITIONS, {})
    acknowledged: dict[tuple[int, int], bytes] = {}
    lock = threading.Lock()

    def work(writer_id):
        rng = random.Random(SEED + writer_id)
        writer = Writer(
            meta,
            objects,
            StagingArea(tmp_path / str(writer_id)),
            clock_ms=lambda: 1_700_000_000_000,
            sleep=time.sleep,
            jitter=rng.random,
        )
        for request_id in range(REQUESTS):
            requests, sent = [], []
            for batch_id, partition in enumerate(rng.sample(range(PARTITIONS), rng.randint(1, 2))):
                builder = RecordBatchBuilder()
                values = [
                    payload(writer_id, request_id, batch_id, r) for r in range(rng.randint(1, 4))
                ]
                for value in values:
                    builder.append(None, value, (), 1_700_000_000_000)
                batches = validate_batches(
                    builder.build(), max_message_bytes=10**6, log_append_time=None
                )
                requests.append(AppendRequest(topic, partition, batches))
                sent.append(values)
            for request, result, values in zip(
                requests, writer.append(requests), sent, strict=True
            ):
                assert result.error is None, f"seed {SEED}: {result.error}"
                with lock:
                    for i, value in enumerate(values):
                        acknowledged[(request.partition, result.base_offset + i)] = value

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(work, range(WRITERS)))

    total = 0
    for partition in range(PARTITIONS):
        records = list(committed_records(meta, objects, topic.topic_id, partition))
        offsets = [r.offset for r in records]
        assert offsets == list(range(len(records))), f"seed {SEED}: gaps in {partition}"
        assert high_watermark(meta, topic.topic_id, partition) == (0, len(records))
        for record in records:
            assert acknowledged[(partition, record.offset)] == record.value, f"seed {SEED}"
        total += len(records)
    assert total == len(acknowledged)
    assert len(set(acknowledged.values())) == total  # each record exactly once
