"""What a partition's ``idx#<base offset>`` items say: where a committed range of offsets lives.

Two kinds, keyed the same way so a reader never cares which it meets:

- a *run*: contiguous batches one flush committed, a byte range of a flush object; the stored
  batches keep the producer's baseOffset, so a reader counts offsets from ``base_offset``;
- a *segment*: batches the roller merged into ``<base>.log``, committed offsets written in, with
  Kafka's ``.index`` and ``.timeindex`` beside it.

While a roll is half done (its later transactions not yet applied), runs inside a segment's
range may still exist. They hold the same bytes at the same offsets, so a reader may use either;
the roller's next pass deletes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tidelog.log import keys
from tidelog.storage import MetadataStore


@dataclass(frozen=True)
class LogEntry:
    base_offset: int
    last_offset: int
    object_key: str
    start: int
    end: int
    batches: int
    max_timestamp: int
    index: str | None = None  # segments only
    timeindex: str | None = None
    delete_horizon_ms: int | None = None  # compacted segments holding tombstones (KIP-534)
    # Runs: when committed (the roller lets fresh runs settle). Segments: when their newest
    # run was committed, as a Kafka segment file's last modification.
    appended_ms: int | None = None

    @property
    def is_segment(self) -> bool:
        return self.index is not None

    @property
    def retention_time(self) -> int | None:
        """The time retention.ms counts from: the newest record's timestamp or, where it is
        below 0 (-1, Kafka's "no timestamp", or a producer's negative one), when the records
        were appended, as Kafka's LogSegment falls back to its file's last modification; None
        if neither is known."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.appended_ms

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def objects(self) -> tuple[str, ...]:
        """Every object this entry keeps alive."""
        return tuple(k for k in (self.object_key, self.index, self.timeindex) if k is not None)

    def to_item(self, pk: str) -> dict[str, object]:
        item: dict[str, object] = {
            "pk": pk,
            "sk": keys.index_sk(self.base_offset),
            "base_offset": self.base_offset,
            "last_offset": self.last_offset,
            "object": self.object_key,
            "start": self.start,
            "end": self.end,
            "batches": self.batches,
            "max_timestamp": self.max_timestamp,
        }
        if self.index is not None:
            item["index"] = self.index
        if self.timeindex is not None:
            item["timeindex"] = self.timeindex
        if self.delete_horizon_ms is not None:
            item["delete_horizon_ms"] = self.delete_horizon_ms
        if self.appended_ms is not None:
            item["appended_ms"] = self.appended_ms
        return item

    @classmethod
    def from_item(cls, item: Mapping[str, object]) -> LogEntry:
        def number(name: str) -> int:
            return int(str(item[name]))

        def optional(name: str) -> str | None:
            value = item.get(name)
            return None if value is None else str(value)

        def optional_number(name: str) -> int | None:
            value = item.get(name)
            return None if value is None else int(str(value))

        return cls(
            base_offset=number("base_offset"),
            last_offset=number("last_offset"),
            object_key=str(item["object"]),
            start=number("start"),
            end=number("end"),
            batches=number("batches"),
            max_timestamp=number("max_timestamp"),
            index=optional("index"),
            timeindex=optional("timeindex"),
            delete_horizon_ms=optional_number("delete_horizon_ms"),
            appended_ms=optional_number("appended_ms"),
        )


def split_leftovers(entries: Iterable[LogEntry]) -> tuple[list[LogEntry], list[LogEntry]]:
    """(the entries a reader uses, the leftovers of a half-done roll), from a partition's
    entries in offset order: a leftover is a run inside the range of an entry before it."""
    live: list[LogEntry] = []
    leftovers: list[LogEntry] = []
    covered = -1
    for entry in entries:
        (leftovers if entry.last_offset <= covered else live).append(entry)
        covered = max(covered, entry.last_offset)
    return live, leftovers


def without_leftovers(entries: Iterable[LogEntry]) -> list[LogEntry]:
    return split_leftovers(entries)[0]


def partition_entries(meta: MetadataStore, topic_id: str, partition: int) -> list[LogEntry]:
    """A partition's entries in offset order, read strongly consistently."""
    pk = keys.log_pk(topic_id, partition)
    return [LogEntry.from_item(i) for i in meta.query(pk, prefix=keys.INDEX_PREFIX)]


def log_size(entries: Iterable[LogEntry]) -> int:
    """A partition's size in bytes as Kafka's DescribeLogDirs counts it: the stored (so
    compressed) batches of its segments, the active one included, a half-done roll's leftovers
    counted once. Segments below the log start count until retention deletes them, as on Kafka,
    where DeleteRecords moves the start and the next retention check deletes the segments."""
    return sum(e.size for e in without_leftovers(entries))
