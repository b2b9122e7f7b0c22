"""A partition's head item: its high watermark (``next_offset``), log start offset, the
transactions open in it (producer id -> the offset of its first batch: the last stable offset),
and its size in bytes.

The head is always written whole, compare-and-set on its offsets and its size, by whoever moves
them (a commit moves the end and adds to the size; retention and DeleteRecords move the start;
retention and compaction take from the size): none can put back what another moved. The open
transactions change only with the end (a transactional batch or a marker is appended), so
comparing the end covers them.

The size is Kafka's DescribeLogDirs partition size: the stored (so compressed) bytes of the
partition's live index entries, kept here so describing 10,000 partitions reads 100 heads a call
instead of querying each partition's index. A head written before tidelog kept sizes has none
(None): its partition is sized by querying its index (``sizes``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from tidelog.errors import ConflictError, TidelogError
from tidelog.log import keys
from tidelog.log.entries import log_size, partition_entries
from tidelog.storage import (
    AttrAbsent,
    Compare,
    ConditionFailedError,
    ItemAbsent,
    MetadataStore,
    Put,
    Write,
    all_of,
)


class OffsetOutOfRangeError(TidelogError):
    """The offset is below the log start or beyond the end (HTTP 416, as a Range miss)."""

    http_status = 416
    default_kafka_error = "OFFSET_OUT_OF_RANGE"

    def __init__(self, offset: int, log_start_offset: int, high_watermark: int) -> None:
        super().__init__(
            f"offset {offset} is out of range: the log holds [{log_start_offset}, {high_watermark})"
        )
        self.log_start_offset = log_start_offset
        self.high_watermark = high_watermark

    def to_dict(self) -> dict[str, object]:
        return {
            **super().to_dict(),
            "log_start_offset": self.log_start_offset,
            "high_watermark": self.high_watermark,
        }


@dataclass(frozen=True)
class Head:
    log_start_offset: int
    next_offset: int  # the high watermark
    open_txns: Mapping[int, int] = field(default_factory=dict)  # producer id -> first offset
    # The offset of the latest ABORT marker that closed a transaction (-1: none): a
    # read_committed fetch from past it has no aborted transaction to look up.
    last_abort: int = -1
    size: int | None = 0  # bytes of the live index entries; None: not kept (an older head)

    @property
    def last_stable_offset(self) -> int:
        """Kafka's LSO: the first offset of the earliest open transaction, else the end."""
        return min(self.open_txns.values(), default=self.next_offset)

    @classmethod
    def from_item(cls, item: Mapping[str, object] | None) -> Head | None:
        if item is None:
            return None
        raw = item.get("open_txns")
        open_txns = (
            {int(pid): int(str(first)) for pid, first in raw.items()}
            if isinstance(raw, Mapping)
            else {}
        )
        return cls(
            int(str(item["log_start_offset"])),
            int(str(item["next_offset"])),
            open_txns,
            int(str(item.get("last_abort", -1))),
            None if item.get("size") is None else int(str(item["size"])),
        )

    def resized(self, delta: int) -> Head:
        return self if self.size is None else replace(self, size=self.size + delta)


def high_watermark(meta: MetadataStore, topic_id: str, partition: int) -> tuple[int, int]:
    """(log start offset, high watermark) of a partition, read strongly consistently."""
    head = Head.from_item(meta.get(keys.log_pk(topic_id, partition), keys.HEAD_SK))
    return (0, 0) if head is None else (head.log_start_offset, head.next_offset)


def high_watermarks(
    meta: MetadataStore, partitions: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], tuple[int, int]]:
    """``high_watermark`` of many partitions (topic id, partition): a hundred heads a call."""
    return {
        p: (head.log_start_offset, head.next_offset)
        for p, head in read_heads(meta, partitions).items()
    }


def read_head(meta: MetadataStore, topic_id: str, partition: int) -> Head:
    """A partition's head, read strongly consistently; a partition never written to has an
    empty one."""
    return Head.from_item(meta.get(keys.log_pk(topic_id, partition), keys.HEAD_SK)) or EMPTY


def read_heads(
    meta: MetadataStore, partitions: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], Head]:
    """``read_head`` of many partitions (topic id, partition): a hundred heads a call."""
    pks = {p: keys.log_pk(*p) for p in partitions}
    items = meta.get_many([(pk, keys.HEAD_SK) for pk in pks.values()])
    return {p: Head.from_item(items.get((pk, keys.HEAD_SK))) or EMPTY for p, pk in pks.items()}


EMPTY = Head(0, 0)


def put_head(pk: str, new: Head, old: Head | None) -> Put:
    """Write ``new`` if the head is still ``old`` (None: the partition has no head yet)."""
    condition = (
        ItemAbsent()
        if old is None
        else all_of(
            Compare("next_offset", "=", old.next_offset),
            Compare("log_start_offset", "=", old.log_start_offset),
            AttrAbsent("size") if old.size is None else Compare("size", "=", old.size),
        )
    )
    item: dict[str, object] = {
        "pk": pk,
        "sk": keys.HEAD_SK,
        "next_offset": new.next_offset,
        "log_start_offset": new.log_start_offset,
    }
    if new.open_txns:
        item["open_txns"] = {str(pid): first for pid, first in sorted(new.open_txns.items())}
    if new.last_abort >= 0:
        item["last_abort"] = new.last_abort
    if new.size is not None:
        item["size"] = new.size
    return Put(item, condition)


def transact_with_head(
    meta: MetadataStore,
    pk: str,
    writes: Sequence[Write],
    *,
    size_delta: int = 0,
    start_at_least: int = 0,
    attempts: int = 5,
) -> None:
    """``writes`` and the head resized by ``size_delta`` and started at ``start_at_least`` or
    later, in one transaction (the head's write last); ``writes`` alone, with no read of the
    head, when neither changes it. A commit moving the head meanwhile makes this read it again
    and retry; one of ``writes`` failing raises ConditionFailedError with its position."""
    if size_delta == 0 and start_at_least == 0:
        meta.transact(writes)
        return
    for _ in range(attempts):
        head = Head.from_item(meta.get(pk, keys.HEAD_SK))
        if head is None:
            raise ValueError(f"{pk} has index entries but no head")
        new = replace(
            head.resized(size_delta),
            log_start_offset=max(head.log_start_offset, start_at_least),
        )
        try:
            meta.transact([*writes, put_head(pk, new, head)] if new != head else writes)
        except ConditionFailedError as exc:
            ours = [i for i in exc.failed if i < len(writes)]
            if ours:
                current = {i: exc.current.get(i) for i in ours}
                raise ConditionFailedError(str(exc), failed=ours, current=current) from exc
            continue
        return
    raise ConflictError(f"{pk}: commits kept moving its head; the next pass tries again")


def sizes(meta: MetadataStore, partitions: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Each partition's size in bytes (topic id, partition), from its head: a hundred a call."""
    return {p: size(meta, p, head) for p, head in read_heads(meta, partitions).items()}


def size(meta: MetadataStore, partition: tuple[str, int], head: Head) -> int:
    """The partition's size in bytes: its head's, or, for a head that keeps none, its index's."""
    return head.size if head.size is not None else log_size(partition_entries(meta, *partition))
