"""Every key tidelog writes, in one place (names never reach a key; topic ids do).

Metadata items (one table, ``pk``/``sk``)::

    ("topics", <name>)                              the topic
    ("log#<topic_id>#<partition>", "head")          next offset (high watermark), log start
    ("log#<topic_id>#<partition>", "idx#<offset>")  a committed run of batches: object and range
    ("log#<topic_id>#<partition>", "pid#<id>")      an idempotent producer's last five batches
    ("log#<topic_id>#<partition>", "abt#<offset>")  an aborted transaction, by its marker's offset
    ("txn#<shard>", ...)                            transactions' items: tidelog.txn.keys
    ("producers", "next-id")                        the producer id allocator
    ("orphans", <object key>)                       objects written but never committed
    ("gc", "<due ms>#<digest>")                     the delayed deletion queue: objects, by key
    ("due#<shard>", "<due ms>#<topic_id>#<p>")      a partition housekeeping must visit by then

Objects: ``data/flush/<YYYYMMDDHH>/<uuid>`` (one per flush, many partitions).
"""

from __future__ import annotations

import re
import time
import zlib

OFFSET_WIDTH = 20  # Kafka's segment file names: 20 digits
HEAD_SK = "head"
INDEX_PREFIX = "idx#"
PRODUCER_PREFIX = "pid#"
ABORTED_PREFIX = "abt#"
PRODUCERS_PK = "producers"

ORPHANS_PK = "orphans"
DUE_PREFIX = "due#"
DUE_SHARDS = 16  # spreads commits' marks over keys (DynamoDB: ~1,000 writes/s per key)
DUE_WIDTH = 15  # milliseconds until the year 33658
_LOG_PK = re.compile(r"log#([0-9a-f-]{36})#(\d+)")


def log_pk(topic_id: str, partition: int) -> str:
    return f"log#{topic_id}#{partition}"


def parse_log_pk(pk: str) -> tuple[str, int]:
    match = _LOG_PK.fullmatch(pk)
    if match is None:
        raise ValueError(f"not a log key: {pk!r}")
    return match.group(1), int(match.group(2))


def index_sk(base_offset: int) -> str:
    if not 0 <= base_offset < 10**OFFSET_WIDTH:
        raise ValueError(f"offset {base_offset} out of range")
    return f"{INDEX_PREFIX}{base_offset:0{OFFSET_WIDTH}d}"


def parse_index_sk(sk: str) -> int:
    if not sk.startswith(INDEX_PREFIX) or len(sk) != len(INDEX_PREFIX) + OFFSET_WIDTH:
        raise ValueError(f"not an index key: {sk!r}")
    return int(sk[len(INDEX_PREFIX) :])


def producer_sk(producer_id: int) -> str:
    return f"{PRODUCER_PREFIX}{producer_id:0{OFFSET_WIDTH}d}"


def aborted_sk(marker_offset: int) -> str:
    return f"{ABORTED_PREFIX}{marker_offset:0{OFFSET_WIDTH}d}"


def flush_object_key(written_ms: int, unique: str) -> str:
    hour = time.strftime("%Y%m%d%H", time.gmtime(written_ms / 1000))
    return f"data/flush/{hour}/{unique}"


def due_pk(shard: int) -> str:
    return f"{DUE_PREFIX}{shard:02d}"


def due_shard(topic_id: str, partition: int) -> int:
    return zlib.crc32(f"{topic_id}#{partition}".encode()) % DUE_SHARDS


def due_sk(due_ms: int, topic_id: str, partition: int) -> str:
    return f"{due_ms:0{DUE_WIDTH}d}#{topic_id}#{partition}"


def due_until(now_ms: int) -> str:
    """The highest due sort key at ``now_ms``: every ``due_sk(t, ...)`` with ``t <= now_ms``
    sorts at or below it ('$' follows '#')."""
    return f"{now_ms:0{DUE_WIDTH}d}$"
