"""Kafka's segment and index cases (LogSegmentTest, OffsetIndexTest, TimeIndexTest), on the
files the roller writes and the reader that serves them."""

from __future__ import annotations

import random
import struct

import pytest

from tidelog.log import keys
from tidelog.log.entries import LogEntry
from tidelog.log.read.fetch import LogReader
from tidelog.log.segment import (
    CorruptIndexError,
    OffsetIndex,
    TimeIndex,
    batches_from,
    build,
    recover,
)
from tidelog.records import RecordBatch, RecordBatchBuilder
from tidelog.storage import Put
from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore

TOPIC_ID = "00000000-0000-4000-8000-000000000000"
SEED = random.randrange(2**32)


def batch(offset: int, *values: str, timestamp: int | None = None) -> RecordBatch:
    """Kafka's test helper ``records(offset, ...)``: one batch, timestamps offset * 10 unless
    given."""
    builder = RecordBatchBuilder(base_offset=offset)
    for value in values:
        builder.append(None, value.encode(), (), offset * 10 if timestamp is None else timestamp)
    return RecordBatch(builder.build())


def served(batches: list[RecordBatch], base: int, interval: int, *, damage=None):
    """A segment of ``batches`` stored as the roller stores it, and a reader over it.
    ``damage`` may rewrite the files (name -> bytes) before they are stored."""
    segment = build(base, batches, interval)
    files = {"log": segment.log, "index": segment.index, "timeindex": segment.timeindex}
    if damage:
        files = damage(files)
    meta, objects = MemoryMetadataStore(), MemoryObjectStore(lambda: 0)
    for name, data in files.items():
        objects.put(f"seg.{name}", data)
    pk = keys.log_pk(TOPIC_ID, 0)
    entry = LogEntry(
        base,
        segment.last_offset,
        "seg.log",
        0,
        len(segment.log),
        segment.batches,
        segment.max_timestamp,
        index="seg.index",
        timeindex="seg.timeindex",
    )
    meta.write(Put(entry.to_item(pk)))
    head = {"next_offset": segment.last_offset + 1, "log_start_offset": base}
    meta.write(Put({"pk": pk, "sk": keys.HEAD_SK, **head}))
    return segment, LogReader(meta, objects)


def first_offsets(reader: LogReader, offset: int, max_bytes: int = 1) -> list[int]:
    data = reader.fetch(TOPIC_ID, 0, offset, max_bytes)
    return [r.offset for b in data.batches for r in b.batch.records()]


def one_record_size() -> int:
    return batch(0, "msg00").size_in_bytes


def nonsense(data: bytes, start: int) -> bytes:
    rng = random.Random(SEED)
    return data[:start] + bytes(rng.randrange(256) for _ in range(len(data) - start))


def test_offset_index_lookup_finds_the_greatest_entry_at_or_below():
    base = 45
    entries = [(3, 100), (7, 220), (20, 800)]  # relative offset, position
    index = OffsetIndex(base, b"".join(struct.pack(">ii", *e) for e in entries))
    assert index.lookup(base - 1) == (base, 0)  # below every entry: the segment's start
    assert index.lookup(base + 2) == (base, 0)
    assert index.lookup(base + 3) == (base + 3, 100)
    assert index.lookup(base + 19) == (base + 7, 220)
    assert index.lookup(base + 10_000) == (base + 20, 800)
    assert OffsetIndex(base, b"").lookup(base + 5) == (base, 0)


def test_time_index_lookup_finds_the_greatest_timestamp_at_or_below():
    index = TimeIndex(0, b"".join(struct.pack(">qi", t, o) for t, o in [(100, 1), (300, 5)]))
    assert index.lookup(99) == (-1, 0)
    assert index.lookup(100) == (100, 1)
    assert index.lookup(299) == (100, 1)
    assert index.lookup(10**12) == (300, 5)


@pytest.mark.parametrize(
    "data",
    [b"\x00" * 7, struct.pack(">iiii", 5, 100, 5, 200), struct.pack(">iiii", 5, 100, 6, 50)],
    ids=["partial entry", "offsets repeat", "positions go back"],
)
def test_a_damaged_offset_index_fails_the_sanity_check(data):
    with pytest.raises(CorruptIndexError):
        OffsetIndex(0, data)


def test_index_entries_are_made_where_kafkas_log_segment_makes_them():
    # LogSegmentTest.testReloadLargestTimestampAndNextOffsetAfterTruncation: 30 one-record
    # batches, interval 2 x batch size - 1: an entry every second batch after the first two.
    batches = [batch(40 + i, "hello", timestamp=40 + i) for i in range(30)]
    segment = build(40, batches, 2 * batches[0].size_in_bytes - 1)
    offsets = OffsetIndex(40, segment.index)
    times = TimeIndex(40, segment.timeindex)
    assert len(offsets) == 30 // 2 - 1
    assert len(times) == 30 // 2 - 1 + 1  # and the closing entry a roll adds
    size = batches[0].size_in_bytes
    assert [offsets.entry(s) for s in range(3)] == [(42, 2 * size), (44, 4 * size), (46, 6 * size)]
    assert times.entry(len(times) - 1) == (69, 69)
    assert segment.max_timestamp == 69
    assert (segment.base_offset, segment.last_offset, segment.batches) == (40, 69, 30)


def test_find_offset_by_timestamp():
    # LogSegmentTest.testFindOffsetByTimestamp, on a stored segment through the reader.
    batches = [batch(i, f"msg{i}") for i in range(40, 50)]
    _, reader = served(batches, 40, 2 * one_record_size() - 1)
    expected = {420: 42, 421: 43, 430: 43, 431: 44, 401: 41, 399: 40}
    for timestamp, offset in expected.items():
        assert reader.offset_for_timestamp(TOPIC_ID, 0, timestamp) == (offset, offset * 10)
    assert reader.offset_for_timestamp(TOPIC_ID, 0, 491) is None


def test_reading_before_the_first_offset_starts_at_the_first_batch():
    # testReadBeforeFirstOffset
    _, reader = served([batch(50, "hello", "there", "little", "bee")], 40, 10)
    assert first_offsets(reader, 41, 300) == [50, 51, 52, 53]


def test_reading_from_a_gap_returns_the_first_batch_after_it():
    # testReadFromGap
    _, reader = served([batch(50, "hello", "there"), batch(60, "alpha", "beta")], 40, 10)
    assert first_offsets(reader, 55, 200) == [60, 61]


def test_every_offset_reads_through_a_damaged_index():
    # testRecoveryFixesCorruptIndex: the reader scans instead; recovery rebuilds the index.
    batches = [batch(i, str(i)) for i in range(100)]

    def damage(files):
        return {**files, "index": nonsense(files["index"], 5)}

    segment, reader = served(batches, 0, 10, damage=damage)
    for offset in range(100):
        assert first_offsets(reader, offset)[0] == offset, f"seed {SEED}"
    rebuilt, truncated = recover(0, segment.log, 10)
    assert rebuilt == segment
    assert truncated == 0


def test_timestamps_resolve_through_a_damaged_time_index():
    # testRecoveryFixesCorruptTimeIndex
    batches = [batch(i, str(i)) for i in range(100)]

    def damage(files):
        return {**files, "timeindex": nonsense(files["timeindex"], 5)}

    _, reader = served(batches, 0, 10, damage=damage)
    for i in range(100):
        assert reader.offset_for_timestamp(TOPIC_ID, 0, i * 10) == (i, i * 10), f"seed {SEED}"
        if i < 99:
            assert reader.offset_for_timestamp(TOPIC_ID, 0, i * 10 + 1)[0] == i + 1


def test_recovery_truncates_at_the_first_corrupt_byte():
    # testRecoveryWithCorruptMessage, ten random corruptions.
    rng = random.Random(SEED)
    batches = [batch(i, str(i)) for i in range(20)]
    segment = build(0, batches, 10)
    positions = [0]
    for b in batches:
        positions.append(positions[-1] + b.size_in_bytes)
    for _ in range(10):
        first_bad = rng.randrange(20)
        start = positions[first_bad] + rng.randrange(15)
        damaged = segment.log[:start] + bytes(
            (x + 1 + rng.randrange(255)) % 256 for x in segment.log[start:]
        )
        recovered, truncated = recover(0, damaged, 10)
        kept = [] if recovered is None else [b.last_offset for b in batches_from(recovered.log)]
        assert kept == list(range(first_bad)), f"seed {SEED}"
        assert truncated == len(damaged) - positions[first_bad]
        if recovered is not None:
            assert recovered == build(0, batches[:first_bad], 10)


def test_appends_must_follow_and_stay_in_range():
    with pytest.raises(ValueError, match="2\\^31"):
        build(0, [batch(2**31, "x")])
    with pytest.raises(Exception, match="does not follow"):
        build(0, [batch(5, "a"), batch(5, "b")])
    with pytest.raises(Exception, match="does not follow"):
        build(10, [batch(5, "a")])
