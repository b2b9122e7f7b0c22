"""Offsets committed inside a transaction (TxnOffsetCommit, KIP-98 and KIP-447): held pending
beside the group's offsets, invisible to OffsetFetch, until the transaction ends. A commit moves
them into the group's offsets; an abort drops them. While any is pending, a fetch that asks for
stable offsets (``require_stable``) is told UNSTABLE_OFFSET_COMMIT for its partitions.

Items, under the group's offsets key (tidelog.groups.items.TXN_OFFSET_PREFIX)::

    ("offsets#<group>", "~txn#<topic>#<partition>#<transactional id>")
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tidelog.groups import items
from tidelog.groups.consumer.model import ConsumerGroup, StaleMemberEpochError
from tidelog.groups.model import (
    Committed,
    Group,
    IllegalGenerationError,
    known_member,
)
from tidelog.storage import Delete, ItemExists, MetadataStore, Put, Write
from tidelog.storage.metadata import MAX_TRANSACTION_WRITES
from tidelog.txn.guard import TxnGuard

PREFIX = items.TXN_OFFSET_PREFIX


@dataclass(frozen=True)
class PendingOffset:
    topic: str
    partition: int
    offset: int
    metadata: str
    leader_epoch: int = -1


def pending_sk(topic: str, partition: int, transactional_id: str) -> str:
    return f"{PREFIX}{topic}#{partition:010d}#{transactional_id}"


def is_pending(sk: str) -> bool:
    return sk.startswith(PREFIX)


def hold(
    meta: MetadataStore,
    group: str,
    guard: TxnGuard,
    offsets: Sequence[PendingOffset],
    *,
    now_ms: int,
) -> None:
    """Hold ``offsets`` pending in the transaction ``guard`` names, which must still be the
    open one (ConditionFailedError: it is not)."""
    for start in range(0, len(offsets), MAX_TRANSACTION_WRITES - 1):
        chunk = offsets[start : start + MAX_TRANSACTION_WRITES - 1]
        writes: list[Write] = [guard.check()]
        for o in chunk:
            writes.append(
                Put(
                    {
                        "pk": items.offsets_pk(group),
                        "sk": pending_sk(o.topic, o.partition, guard.transactional_id),
                        "topic": o.topic,
                        "partition": o.partition,
                        "offset": o.offset,
                        "metadata": o.metadata,
                        "leader_epoch": o.leader_epoch,
                        "commit_ms": now_ms,
                        "transactional_id": guard.transactional_id,
                    }
                )
            )
        meta.transact(writes)


def settle(
    meta: MetadataStore, groups: Iterable[str], transactional_id: str, *, commit: bool, now_ms: int
) -> None:
    """The transaction ended: its pending offsets become the groups' (``commit``) or go. Each
    pending item is deleted in the same write that commits it, so settling twice (a retry, a
    second agent) commits nothing twice."""
    for group in groups:
        pending = [
            item
            for item in meta.query(items.offsets_pk(group), prefix=PREFIX)
            if item.get("transactional_id") == transactional_id
        ]
        for start in range(0, len(pending), MAX_TRANSACTION_WRITES // 2):
            writes: list[Write] = []
            for item in pending[start : start + MAX_TRANSACTION_WRITES // 2]:
                writes.append(Delete(str(item["pk"]), str(item["sk"]), ItemExists()))
                if commit:
                    committed = Committed(
                        str(item["topic"]),
                        items.int_of(item["partition"]),
                        items.int_of(item["offset"]),
                        str(item.get("metadata", "")),
                        now_ms,
                        items.int_of(item.get("leader_epoch", -1)),
                    )
                    writes.append(
                        Put(items.offset_item(group, committed, generation=-1, member_id=""))
                    )
            meta.transact(writes)


def unstable(meta: MetadataStore, group: str) -> set[tuple[str, int]]:
    """The group's partitions with an offset pending in an open transaction."""
    return {
        (str(item["topic"]), items.int_of(item["partition"]))
        for item in meta.query(items.offsets_pk(group), prefix=PREFIX)
    }


def check_member(group: Group | ConsumerGroup, member_id: str, generation: int) -> None:
    """KIP-447: a TxnOffsetCommit naming a member and generation is fenced as an OffsetCommit
    is, so a zombie's transaction cannot commit offsets for partitions it lost (Kafka's
    GroupMetadata.validateOffsetCommit for transactional commits). A producer that is not a
    member (generation -1, no member id) is not checked, as on Kafka. In a consumer group the
    generation is the member's epoch; a stale one is ILLEGAL_GENERATION, as Kafka answers."""
    if isinstance(group, ConsumerGroup):
        if generation < 0 and (not member_id or not group.members):
            return
        try:
            group.member_at(member_id, generation)
        except StaleMemberEpochError as exc:  # not one of TxnOffsetCommit's errors
            raise IllegalGenerationError(exc.message) from exc
        return
    if member_id:
        known_member(group, member_id)
    if generation >= 0 and generation != group.generation:
        raise IllegalGenerationError(
            f"generation {generation} is not group {group.name}'s current {group.generation}"
        )
