"""A partition's head item: its high watermark (``next_offset``), log start offset, and the
transactions open in it (producer id -> the offset of its first batch: the last stable offset).

The head is always written whole, compare-and-set on its offsets, by whoever moves it (a commit
moves the end; retention and DeleteRecords the start): neither can put back what the other
moved. The open transactions change only with the end (a transactional batch or a marker is
appended), so comparing the end covers them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tidelog.errors import TidelogError
from tidelog.log import keys
from tidelog.storage import Compare, ItemAbsent, MetadataStore, Put, all_of


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
        )


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
    return Put(item, condition)
