"""One Writer shared by concurrent requests (Lambda mode in a long-running host): orphans are
exactly the objects no index item points at, never a referenced one."""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor

from tests.support.objects import object_sets

from tidelog.log.topics import Topics
from tidelog.log.write.staging import StagingArea
from tidelog.log.write.validate import validate_batches
from tidelog.log.write.writer import AppendRequest, Writer
from tidelog.records import RecordBatchBuilder
from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore

SEED = random.randrange(2**32)
T0 = 1_700_000_000_000


class SlowMetadata(MemoryMetadataStore):
    """Widens the windows in which concurrent commits interleave."""

    def __init__(self, rng):
        super().__init__()
        self.rng = rng

    def get(self, pk, sk):
        time.sleep(self.rng.random() / 500)
        return super().get(pk, sk)

    def transact(self, ops):
        time.sleep(self.rng.random() / 500)
        super().transact(ops)


def test_orphans_are_exactly_the_unreferenced_objects(tmp_path):
    rng = random.Random(SEED)
    meta, objects = SlowMetadata(rng), MemoryObjectStore(lambda: T0)
    topic = Topics(meta, lambda: T0).create("shared", 4, {})
    writer = Writer(
        meta,
        objects,
        StagingArea(tmp_path),
        clock_ms=lambda: T0,
        sleep=time.sleep,
        jitter=rng.random,
    )

    def send(i):
        producer, partition = i % 8, i % 4
        builder = RecordBatchBuilder(producer_id=producer, producer_epoch=0, base_sequence=0)
        builder.append(None, b"v%d" % producer, (), T0)
        batches = validate_batches(builder.build(), max_message_bytes=10**6, log_append_time=None)
        # each producer's first send writes; its later sends are retries (all duplicates)
        (result,) = writer.append([AppendRequest(topic, partition, batches)])
        assert result.error is None, f"seed {SEED}: {result.error}"

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(send, range(160)))

    referenced, orphans, stored = object_sets(meta, objects, topic.topic_id, 4)
    assert not orphans & referenced, f"seed {SEED}: a referenced object recorded as an orphan"
    assert orphans == stored - referenced, f"seed {SEED}"
