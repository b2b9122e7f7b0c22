"""Many partitions: what a topic of 10,000 partitions (Kafka's and tidelog's largest) costs the
calls that read every one of them.

- Describing it with each partition's size (`GET /v1/topics/{topic}?sizes=true`, the console's
  topics screen, `tidelog topic describe`), against describing it without: sizes are kept in
  the partitions' head items, read a hundred a call like the offsets. Beside it, in the same
  run, what sizing cost before: one index query per partition, 16 at a time, as the sizes of
  heads written before tidelog kept them are still read.
- Kafka's Metadata for it, through librdkafka (`list_topics`), against a 6-partition topic's:
  the first ask, which encodes the topic's entry whole, and the asks after it, which reuse the
  entry's bytes (tidelog.kafka.codec.KeyedPartitions) until an agent comes or goes.
"""

from __future__ import annotations

import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka.admin import AdminClient
from tests.support import devserver

from benchmarks.http import call
from benchmarks.report import Section
from tidelog.local.stack import aws_client
from tidelog.log.entries import log_size, partition_entries
from tidelog.log.topics import MAX_PARTITIONS, TOPICS_PK
from tidelog.storage.dynamodb import DynamoMetadataStore

WIDE = MAX_PARTITIONS
NARROW = 6
PER_REQUEST = 500  # records of one produce, one to each of as many partitions
DESCRIBES = 5
METADATA_SAMPLES = 40
INDEX_READS = 16  # in flight at once, as sizing by index query read them


def run(progress: Any = print) -> Section:
    section = Section(
        f"Many partitions: a topic of {WIDE:,}",
        f"`tidelog dev` on the emulator. A {WIDE:,}-partition topic holding one record in each "
        f"partition. Describing it: medians of {DESCRIBES}, the ratio to describing it without "
        f"sizes. Metadata: librdkafka's `list_topics` for the one topic, {METADATA_SAMPLES} "
        f"samples, the ratio to a {NARROW}-partition topic's.",
        ("measurement", "median", "p99", "ratio"),
    )
    dev = devserver.start()
    try:
        wide, narrow = f"bench-wide-{uuid.uuid4().hex[:6]}", f"bench-narrow-{uuid.uuid4().hex[:6]}"
        for name, partitions in ((wide, WIDE), (narrow, NARROW)):
            status, answer = call(
                dev.api_url, "POST", "/v1/topics", {"name": name, "partitions": partitions}
            )
            if status != 201:
                raise RuntimeError(f"creating {name}: {status} {answer}")
        progress(f"  one record into each of {WIDE:,} partitions")
        _fill(dev.api_url, wide)
        progress("  describing, with and without sizes")
        plain = _times(lambda: _describe(dev.api_url, wide, sizes=False), DESCRIBES)
        sized = _times(lambda: _describe(dev.api_url, wide, sizes=True), DESCRIBES)
        progress("  sizing by one index query per partition, as before")
        by_index = _times(lambda: _sizes_by_index(dev.aws_url, wide), 1)
        progress("  Metadata through librdkafka")
        admin = AdminClient({"bootstrap.servers": dev.bootstrap, "log_level": 2})  # not its goodbye
        narrow_metadata = _times(lambda: _metadata(admin, narrow, NARROW), METADATA_SAMPLES)
        wide_metadata = _times(lambda: _metadata(admin, wide, WIDE), METADATA_SAMPLES)
    finally:
        dev.stop()
    base = statistics.median(plain)
    meta_base = statistics.median(narrow_metadata)
    for label, times, baseline in (
        ("describe, without sizes", plain, base),
        ("describe, with sizes (from the heads)", sized, base),
        ("sizes by one index query per partition (before)", by_index, base),
        (f"Metadata, {NARROW} partitions", narrow_metadata, meta_base),
        (f"Metadata, {WIDE:,} partitions, the first ask", wide_metadata[:1], meta_base),
        (f"Metadata, {WIDE:,} partitions, asked again", wide_metadata[1:], meta_base),
    ):
        section.rows.append(
            (
                label,
                f"{statistics.median(times):.0f} ms",
                f"{_p99(times):.0f} ms",
                f"{statistics.median(times) / baseline:.2f}x",
            )
        )
    section.notes.append(
        "Sizes in the heads turn sizing from a query per partition into the head reads the "
        "offsets already make: the describe with sizes costs what the one without does."
    )
    section.notes += [
        "(2026-11-27) Metadata keeps each big topic's encoded entry, by topic, range and the "
        "agents' ids "
        "(tidelog.kafka.codec.KeyedPartitions): asked again, a 10,000-partition topic answers in "
        "24 ms at the median and 70 ms at p99 (goal: p99 <= 100 ms); before, every ask took 283 "
        "ms at the median and 602 ms at p99 (a rendezvous hash per partition, every field of "
        "every partition classified and encoded through kio again, and 10,000 answers allocated "
        "in a process whose collector then swept a large heap). The first ask after an agent "
        "comes or goes pays the encoding once (235 ms here).",
    ]
    return section


def _fill(api: str, topic: str) -> None:
    for start in range(0, WIDE, PER_REQUEST):
        records = [{"value": f"r{p}", "partition": p} for p in range(start, start + PER_REQUEST)]
        status, answer = call(api, "POST", f"/v1/topics/{topic}/records", {"records": records})
        if status != 200:
            raise RuntimeError(f"producing to {topic}: {status} {answer}")


def _describe(api: str, topic: str, *, sizes: bool) -> None:
    status, answer = call(
        api, "GET", f"/v1/topics/{topic}" + ("?sizes=true" if sizes else ""), None
    )
    if status != 200 or len(answer["partitions"]) != WIDE:
        raise RuntimeError(f"describing {topic}: {status}")
    if sizes and not all(p["size_bytes"] > 0 for p in answer["partitions"]):
        raise RuntimeError(f"{topic}: a partition holding a record is sized 0")


def _sizes_by_index(aws_url: str, topic: str) -> None:
    client = aws_client("dynamodb", aws_url, "us-east-1")
    meta = DynamoMetadataStore(client, client.list_tables()["TableNames"][0])
    topic_id = _topic_id(meta, topic)
    with ThreadPoolExecutor(INDEX_READS) as pool:
        sized = list(
            pool.map(lambda p: log_size(partition_entries(meta, topic_id, p)), range(WIDE))
        )
    if not all(sized):
        raise RuntimeError(f"{topic}: a partition holding a record is sized 0 by its index")


def _topic_id(meta: DynamoMetadataStore, topic: str) -> str:
    item = meta.get(TOPICS_PK, topic)
    if item is None:
        raise RuntimeError(f"{topic} has no topic item")
    return str(item["topic_id"])


def _metadata(admin: AdminClient, topic: str, partitions: int) -> None:
    described = admin.list_topics(topic=topic, timeout=30).topics[topic]
    if described.error is not None or len(described.partitions) != partitions:
        raise RuntimeError(f"Metadata for {topic}: {described.error}")


def _times(operation: Any, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        times.append((time.perf_counter() - start) * 1000)
    return times


def _p99(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
