"""The read path over the in-memory stores: Kafka's fetch rules, across runs, segments, a
half-done roll and compacted gaps."""

from __future__ import annotations

import pytest
from tests.support.counting import CountingStore
from tests.support.log import tiny_log

from tidelog.log import keys
from tidelog.log.entries import LogEntry, partition_entries
from tidelog.log.head import OffsetOutOfRangeError
from tidelog.log.read.cache import ObjectCache
from tidelog.log.read.fetch import LogReader
from tidelog.storage import Put


def values(records):
    return [(r.offset, r.value) for r in records]


def test_a_batch_larger_than_max_bytes_still_comes_whole(tmp_path):
    log = tiny_log(tmp_path)
    log.produce(0, [(None, b"x" * 500)] * 3)
    log.produce(0, [(None, b"y")])
    data = log.reader.fetch(log.topic.topic_id, 0, 1, max_bytes=10)
    assert len(data.batches) == 1
    assert [r.offset for r in data.batches[0].batch.records()] == [0, 1, 2]
    assert data.next_offset == 3
    # Whole batches only after the first: the next one would pass max_bytes.
    data = log.reader.fetch(log.topic.topic_id, 0, 0, max_bytes=data.batches[0].batch.size_in_bytes)
    assert data.next_offset == 3


def test_out_of_range_names_the_bounds(tmp_path):
    log = tiny_log(tmp_path)
    log.produce(0, [(None, b"a")])
    with pytest.raises(OffsetOutOfRangeError) as caught:
        log.reader.fetch(log.topic.topic_id, 0, 2, 100)
    assert (caught.value.log_start_offset, caught.value.high_watermark) == (0, 1)
    assert caught.value.http_status == 416
    assert log.reader.fetch(log.topic.topic_id, 0, 1, 100).batches == []


def test_nothing_at_or_above_the_high_watermark_read_first(tmp_path):
    log = tiny_log(tmp_path)
    log.produce(0, [(None, b"a")])
    (entry,) = partition_entries(log.meta, log.topic.topic_id, 0)
    # An index item past the head, as a commit landing after the head was read leaves it.
    ahead = LogEntry(1, 1, entry.object_key, entry.start, entry.end, 1, entry.max_timestamp)
    log.meta.write(Put(ahead.to_item(keys.log_pk(log.topic.topic_id, 0))))
    data = log.reader.fetch(log.topic.topic_id, 0, 0, 10**6)
    assert [r.offset for b in data.batches for r in b.batch.records()] == [0]
    assert data.next_offset == 1


def test_reads_span_segments_and_runs(tmp_path):
    log = tiny_log(tmp_path, configs={"segment.bytes": 400, "segment.ms": 10**9})
    for i in range(30):
        log.produce(0, [(None, b"v%d" % i)])
    report = log.housekeep("roll")
    assert report.segments_rolled >= 3
    entries = partition_entries(log.meta, log.topic.topic_id, 0)
    assert any(e.is_segment for e in entries)
    assert not entries[-1].is_segment  # the active segment: runs not yet full
    expected = [(i, b"v%d" % i) for i in range(30)]
    assert values(log.fetch_all(0)) == expected
    for start in (0, 7, 13, 29):
        assert values(log.fetch_all(0, start, max_bytes=150)) == expected[start:]


def test_a_half_done_roll_reads_the_same(tmp_path):
    log = tiny_log(tmp_path, configs={"segment.ms": 1})
    for i in range(12):
        log.produce(0, [(None, b"v%d" % i)])
    pk = keys.log_pk(log.topic.topic_id, 0)
    runs = partition_entries(log.meta, log.topic.topic_id, 0)
    log.clock.now += 10
    assert log.housekeep("roll").segments_rolled == 1
    # Put back the runs a crash between the roll's transactions would have left.
    for run in runs[5:]:
        log.meta.write(Put(run.to_item(pk)))
    expected = [(i, b"v%d" % i) for i in range(12)]
    for start in range(12):
        assert values(log.fetch_all(0, start, max_bytes=1)) == expected[start:]
    assert log.housekeep("roll").leftovers_deleted == 7
    assert len(partition_entries(log.meta, log.topic.topic_id, 0)) == 1


def test_compacted_gaps_are_passed_over(tmp_path):
    log = tiny_log(tmp_path, configs={"cleanup.policy": "compact", "segment.ms": 1})
    for i in range(10):
        log.produce(0, [(b"same", b"v%d" % i)])
    log.produce(0, [(b"other", b"last")])
    log.clock.now += 10
    log.housekeep("roll", "compaction")
    data = log.reader.fetch(log.topic.topic_id, 0, 0, 1)
    # The segment holds only offsets 9 and 10 now; a fetch from 0 starts there.
    assert [r.offset for b in data.batches for r in b.batch.records()] == [9]
    assert values(log.fetch_all(0)) == [(9, b"v9"), (10, b"last")]


def test_a_fetch_in_a_gap_at_a_segments_end_brings_the_next_segments_batch(tmp_path):
    """Found by tests/property/test_log_model.py: offset 3 was compacted away at the end of the
    first segment, and a small fetch there planned that segment alone. As Kafka's log read moves
    on to the next segment, so does this, for every caller."""
    configs = {"cleanup.policy": "compact", "segment.bytes": 154, "segment.ms": 1}
    log = tiny_log(tmp_path, configs=configs)
    for records in ([(b"a", None), (b"a", None), (b"b", None)], [(b"a", None)], [(b"a", None)]):
        log.produce(0, records)
        log.clock.now += 1
    log.housekeep("roll")
    log.housekeep("compaction")
    first, second = partition_entries(log.meta, log.topic.topic_id, 0)
    assert (first.last_offset, second.base_offset) == (3, 4)
    for max_bytes in (1, 10**6):
        data = log.reader.fetch(log.topic.topic_id, 0, 3, max_bytes)
        assert [r.offset for b in data.batches for r in b.batch.records()] == [4]
        assert data.next_offset == 5


def test_the_cache_serves_repeated_reads(tmp_path):
    log = tiny_log(tmp_path, configs={"segment.ms": 1})
    for i in range(20):
        log.produce(0, [(None, b"v%d" % i)])
    log.clock.now += 10
    log.housekeep("roll")
    cache = ObjectCache(tmp_path / "cache", 10**6, log.objects.get)
    reader = LogReader(log.meta, log.objects, cache)
    first = reader.fetch(log.topic.topic_id, 0, 5, 10**6)
    misses = cache.misses
    again = reader.fetch(log.topic.topic_id, 0, 5, 10**6)
    assert [b.data for b in again.batches] == [b.data for b in first.batches]
    assert cache.misses == misses
    assert cache.hits > 0


def test_the_cache_stays_within_its_bound(tmp_path):
    stored = {f"k{i}": bytes([i]) * 100 for i in range(10)}
    cache = ObjectCache(tmp_path / "cache", 250, lambda key, start, end: stored[key][start:end])
    for key, value in stored.items():
        assert cache.read(key, 0, 100) == value
    files = list((tmp_path / "cache").iterdir())
    assert sum(f.stat().st_size for f in files) <= 250
    assert cache.read("k9", 10, 20) == stored["k9"][10:20]
    assert cache.read_blocks("k3", 5, 60, 100) == stored["k3"][5:60]


def test_a_fetch_reads_the_index_only_as_far_as_its_budget(tmp_path):
    """A consumer reading a few runs must not pay for the whole index after them: a DynamoDB
    Query page is up to 1 MB, 256 read units strongly consistent."""
    log = tiny_log(tmp_path)
    for i in range(300):
        log.produce(0, [(None, b"v%03d" % i)])
    counting = CountingStore(log.meta)
    reader = LogReader(counting, log.objects)
    one_run = log.reader.fetch(log.topic.topic_id, 0, 0, 1).batches[0].batch.size_in_bytes

    data = reader.fetch(log.topic.topic_id, 0, 40, max_bytes=3 * one_run)
    assert data.next_offset == 43
    assert counting.items_read == 16, "one first page of the index"

    counting.items_read = counting.reads = 0
    data = reader.fetch(log.topic.topic_id, 0, 0, max_bytes=10**6)
    assert data.next_offset == 300
    assert counting.items_read == 300, "every run once"
    assert counting.reads == 1 + 3, "the head, and pages of 16, 64 and 256 (the last short)"
