"""Transactional ids' items: read, moved by conditional writes, listed, and found due.

Every transition is written on condition that the item is still the version it was computed
from, so of two agents moving one id, one wins and the other computes again from what won. A
transition that begins a transaction also puts its timeout's due item in the same write, and
one that decides its end puts a due item soon after, in case the agent ending it dies before
it is done: the timeout sweep reads only what is due, so its cost follows open transactions,
not ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from tidelog.storage import (
    Compare,
    ConditionFailedError,
    Delete,
    ItemAbsent,
    MetadataStore,
    Put,
    Write,
)
from tidelog.txn import keys
from tidelog.txn.state import State, Txn


class Superseded(Exception):
    """The item moved since it was read: compute the transition again."""


class TxnStore:
    def __init__(self, meta: MetadataStore) -> None:
        self._meta = meta

    def get(self, transactional_id: str) -> Txn | None:
        item = self._meta.get(keys.pk(transactional_id), keys.sk(transactional_id))
        return None if item is None else Txn.from_attributes(item)

    def put(self, old: Txn | None, new: Txn, *, finish_by_ms: int | None = None) -> Txn:
        """``new`` in place of ``old`` (None: there is no item yet); Superseded if the item is
        not ``old`` any more. The written transition, its version advanced. ``finish_by_ms``:
        when the sweep should finish a decided end that is still unfinished then."""
        written = replace(new, version=(old.version if old is not None else 0) + 1)
        pk, sk = keys.pk(new.transactional_id), keys.sk(new.transactional_id)
        condition = ItemAbsent() if old is None else Compare("version", "=", old.version)
        writes: list[Write] = [Put({"pk": pk, "sk": sk, **written.to_attributes()}, condition)]
        due_ms = finish_by_ms
        if written.state == State.ONGOING and (old is None or old.begun != written.begun):
            due_ms = written.started_ms + written.timeout_ms
        if due_ms is not None:
            due = {"pk": pk, "sk": keys.due_sk(due_ms, new.transactional_id)}
            writes.append(Put({**due, "begun": written.begun}))
        try:
            self._meta.transact(writes)
        except ConditionFailedError as exc:
            if 0 in exc.failed:
                raise Superseded(new.transactional_id) from exc
            raise
        return written

    def list(self) -> Iterator[Txn]:
        for shard in range(keys.SHARDS):
            for item in self._meta.query(keys.shard_pk(shard), prefix=keys.ID_PREFIX):
                yield Txn.from_attributes(item)

    def due(self, now_ms: int) -> Iterator[tuple[str, str]]:
        """(transactional id, due item's sort key) of every timeout due by ``now_ms``."""
        for shard in range(keys.SHARDS):
            pk = keys.shard_pk(shard)
            for item in self._meta.query(pk, lo=keys.DUE_PREFIX, hi=keys.due_until(now_ms)):
                sk = str(item["sk"])
                yield keys.parse_due_sk(sk)[1], sk

    def forget_due(self, transactional_id: str, due_sk: str) -> None:
        self._meta.write(Delete(keys.pk(transactional_id), due_sk))
