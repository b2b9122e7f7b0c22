"""A partition's aborted transactions, as this host read them lately: a read_committed fetch
asks for the few that overlap it, and consumers ask again at every fetch.

The aborted index's items (tidelog.log.aborted) are written once, by the commit of the ABORT
marker they name, and deleted only below the log start: what was read stays true. The head's
``last_abort`` says whether a newer one exists, so a partition's list is read whole once (from
the first offset asked for) and then only grows by the newer items. A partition with more
aborted transactions than ``per_partition`` is not kept: its fetches search the index
themselves, as without the cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from tidelog.log import keys
from tidelog.log.aborted import aborted_between, from_item
from tidelog.storage import MetadataStore
from tidelog.txn.stable import AbortedTxn, search_complete


@dataclass
class _Known:
    start: int  # every aborted transaction whose marker is at or after this ...
    until: int  # ... and at or before this (a head's last_abort) is in ``txns``
    txns: list[AbortedTxn] = field(default_factory=list)  # in marker order


class AbortedCache:
    def __init__(
        self, meta: MetadataStore, *, partitions: int = 1024, per_partition: int = 4096
    ) -> None:
        self._meta = meta
        self._partitions = partitions
        self._per_partition = per_partition
        self._known: OrderedDict[str, _Known] = OrderedDict()
        self._lock = threading.Lock()

    def between(
        self, topic_id: str, partition: int, start: int, end: int, *, last_abort: int
    ) -> list[AbortedTxn]:
        """The aborted transactions overlapping ``[start, end)``, the head showing the latest
        ABORT marker at ``last_abort``."""
        meta = self._meta
        pk = keys.log_pk(topic_id, partition)
        with self._lock:
            known = self._known.get(pk)
            if known is not None:
                self._known.move_to_end(pk)
        if known is None or start < known.start:
            known = self._read(meta, pk, start, last_abort)
        elif last_abort > known.until:
            newer = self._items(meta, pk, known.until + 1, last_abort)
            if newer is not None:
                known = _Known(known.start, last_abort, known.txns + newer)
                self._keep(pk, known)
        if known is None or known.until < last_abort:
            return aborted_between(meta, topic_id, partition, start, end)
        found = []
        for txn in known.txns:
            if txn.last_offset < start:
                continue
            if txn.first_offset < end:
                found.append(txn)
            if search_complete(txn, end):
                break
        return found

    def _read(self, meta: MetadataStore, pk: str, start: int, last_abort: int) -> _Known | None:
        txns = self._items(meta, pk, start, last_abort)
        if txns is None:
            return None
        known = _Known(start, last_abort, txns)
        self._keep(pk, known)
        return known

    def _items(
        self, meta: MetadataStore, pk: str, first: int, last: int
    ) -> list[AbortedTxn] | None:
        """The items with markers in ``[first, last]``; None when more than a partition may
        keep."""
        if last < first:
            return []
        items = list(
            meta.query(
                pk,
                lo=keys.aborted_sk(first),
                hi=keys.aborted_sk(last),
                limit=self._per_partition + 1,
            )
        )
        if len(items) > self._per_partition:
            return None
        return [from_item(item) for item in items]

    def _keep(self, pk: str, known: _Known) -> None:
        if len(known.txns) > self._per_partition:
            return
        with self._lock:
            self._known[pk] = known
            self._known.move_to_end(pk)
            while len(self._known) > self._partitions:
                self._known.popitem(last=False)
