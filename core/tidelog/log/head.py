"""A partition's head item: its high watermark (``next_offset``) and log start offset.

The head is always written whole, compare-and-set on every field it carries, by whoever moves
it (a commit moves the end, retention the start): neither can put back what the other moved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tidelog.log import keys
from tidelog.storage import Compare, ItemAbsent, MetadataStore, Put, all_of


@dataclass(frozen=True)
class Head:
    log_start_offset: int
    next_offset: int  # the high watermark

    @classmethod
    def from_item(cls, item: Mapping[str, object] | None) -> Head | None:
        if item is None:
            return None
        return cls(int(str(item["log_start_offset"])), int(str(item["next_offset"])))


def high_watermark(meta: MetadataStore, topic_id: str, partition: int) -> tuple[int, int]:
    """(log start offset, high watermark) of a partition, read strongly consistently."""
    head = Head.from_item(meta.get(keys.log_pk(topic_id, partition), keys.HEAD_SK))
    return (0, 0) if head is None else (head.log_start_offset, head.next_offset)


def high_watermarks(
    meta: MetadataStore, partitions: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], tuple[int, int]]:
    """``high_watermark`` of many partitions (topic id, partition): a hundred heads a call."""
    pks = {p: keys.log_pk(*p) for p in partitions}
    heads = meta.get_many([(pk, keys.HEAD_SK) for pk in pks.values()])
    bounds = {}
    for p, pk in pks.items():
        head = Head.from_item(heads.get((pk, keys.HEAD_SK)))
        bounds[p] = (0, 0) if head is None else (head.log_start_offset, head.next_offset)
    return bounds


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
    item = {
        "pk": pk,
        "sk": keys.HEAD_SK,
        "next_offset": new.next_offset,
        "log_start_offset": new.log_start_offset,
    }
    return Put(item, condition)
