"""The keys of transactional ids' items, sharded over ``SHARDS`` partition keys so listing
them (ListTransactions) and finding the ones due (timeouts) are a query a shard::

    ("txn#<shard>", "id#<transactional id>")          its coordinator state
    ("txn#<shard>", "due#<ms, 15 digits>#<txn id>")   when its open transaction times out
"""

from __future__ import annotations

import zlib

SHARDS = 16
ID_PREFIX = "id#"
DUE_PREFIX = "due#"
DUE_WIDTH = 15


def pk(transactional_id: str) -> str:
    return shard_pk(zlib.crc32(transactional_id.encode()) % SHARDS)


def shard_pk(shard: int) -> str:
    return f"txn#{shard:02d}"


def sk(transactional_id: str) -> str:
    return f"{ID_PREFIX}{transactional_id}"


def due_sk(due_ms: int, transactional_id: str) -> str:
    return f"{DUE_PREFIX}{due_ms:0{DUE_WIDTH}d}#{transactional_id}"


def due_until(now_ms: int) -> str:
    """The highest due sort key at ``now_ms`` ('$' follows '#')."""
    return f"{DUE_PREFIX}{now_ms:0{DUE_WIDTH}d}$"


def parse_due_sk(key: str) -> tuple[int, str]:
    due, transactional_id = key[len(DUE_PREFIX) :].split("#", 1)
    return int(due), transactional_id
