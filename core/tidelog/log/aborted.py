"""A partition's aborted transactions (Kafka's ``.txnindex``): items the commit writes as an
ABORT marker closes a transaction, keyed by the marker's offset, read by offset range for a
read_committed fetch. Like Kafka's search, a scan from the fetch's offset stops at the first
transaction whose last stable offset at abort lies past the fetch's end (tidelog.txn.stable)."""

from __future__ import annotations

from collections.abc import Mapping

from tidelog.log import keys
from tidelog.storage import Delete, MetadataStore
from tidelog.txn.stable import AbortedTxn, search_complete

_PAGE = 32


def aborted_between(
    meta: MetadataStore, topic_id: str, partition: int, start: int, end: int
) -> list[AbortedTxn]:
    """The aborted transactions overlapping offsets ``[start, end)``, in marker order."""
    pk = keys.log_pk(topic_id, partition)
    found = []
    lo = keys.aborted_sk(start)
    while True:
        page = list(meta.query(pk, lo=lo, hi=keys.ABORTED_PREFIX + "~", limit=_PAGE))
        for item in page:
            txn = from_item(item)
            if txn.first_offset < end:
                found.append(txn)
            if search_complete(txn, end):
                return found
        if len(page) < _PAGE:
            return found
        lo = keys.aborted_sk(from_item(page[-1]).last_offset + 1)


def from_item(item: Mapping[str, object]) -> AbortedTxn:
    return AbortedTxn(
        first_offset=int(str(item["first_offset"])),
        last_offset=int(str(item["sk"])[len(keys.ABORTED_PREFIX) :]),
        producer_id=int(str(item["producer_id"])),
        last_stable_offset=int(str(item["last_stable_offset"])),
    )


def forget_below(meta: MetadataStore, topic_id: str, partition: int, log_start: int) -> int:
    """Drop the aborted transactions that ended below the log start, as Kafka drops a
    segment's ``.txnindex`` with it: no fetch can reach them. How many were dropped."""
    if log_start <= 0:
        return 0
    pk = keys.log_pk(topic_id, partition)
    doomed = list(meta.query(pk, lo=keys.ABORTED_PREFIX, hi=keys.aborted_sk(log_start - 1)))
    for item in doomed:
        meta.write(Delete(pk, str(item["sk"])))
    return len(doomed)
