"""A long-running host's memory of index entries: a backlog read without re-querying pages it
already has, never past its time to live, and the same records whatever the index did since."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.counting import CountingStore
from tests.support.log import tiny_log

from tidelog.log.entries import LogEntry
from tidelog.log.read.fetch import LogReader
from tidelog.log.read.indexcache import IndexCache


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def entry(base: int, last: int, key: str = "obj") -> LogEntry:
    return LogEntry(base, last, key, 0, 10, 1, 0)


def test_a_run_is_contiguous_fresh_entries_from_the_one_holding_the_offset():
    clock = Clock()
    cache = IndexCache(clock, ttl_ms=100)
    cache.remember("p", [entry(0, 4), entry(5, 9), entry(12, 20)])
    assert [e.base_offset for e in cache.run_from("p", 7)] == [5]
    assert [e.base_offset for e in cache.run_from("p", 0)] == [0, 5]
    assert cache.run_from("p", 10) == [], "no entry holds offset 10"
    assert cache.run_from("p", 21) == []
    assert cache.run_from("other", 0) == []
    clock.now = 50
    cache.remember("p", [entry(10, 11)])
    assert [e.base_offset for e in cache.run_from("p", 0)] == [0, 5, 10, 12]
    clock.now = 100
    assert cache.run_from("p", 0) == [], "stale at its time to live"
    assert [e.base_offset for e in cache.run_from("p", 10)] == [10], "younger ones stay"
    cache.forget("p")
    assert cache.run_from("p", 10) == []


def test_a_newer_read_replaces_an_entry_and_leftovers_are_passed_over():
    cache = IndexCache(Clock())
    cache.remember("p", [entry(0, 4, "run"), entry(5, 9, "run")])
    cache.remember("p", [entry(0, 9, "segment")])  # a roll: one entry where two were
    assert [(e.object_key, e.last_offset) for e in cache.run_from("p", 0)] == [("segment", 9)]
    assert [e.object_key for e in cache.run_from("p", 6)] == ["run"], "same bytes, same offsets"


def test_partitions_beyond_the_bound_are_forgotten_oldest_first():
    cache = IndexCache(Clock(), partitions=2)
    for pk in ("a", "b", "c"):
        cache.remember(pk, [entry(0, 1)])
    assert cache.run_from("a", 0) == []
    assert cache.run_from("b", 0)
    assert cache.run_from("c", 0)


def backlog(tmp_path, runs: int):
    log = tiny_log(tmp_path)
    for i in range(runs):
        log.produce(0, [(None, b"v%03d" % i)])
    return log


def test_a_backlog_is_read_with_the_pages_it_brought(tmp_path):
    log = backlog(tmp_path, 64)
    one_run = log.reader.fetch(log.topic.topic_id, 0, 0, 1).batches[0].batch.size_in_bytes

    def read_all(reader: LogReader) -> list[bytes]:
        values, offset = [], 0
        while offset < 64:
            data = reader.fetch(log.topic.topic_id, 0, offset, max_bytes=2 * one_run)
            values += [r.value for b in data.batches for r in b.batch.records()]
            offset = data.next_offset
        return values

    plain, remembering = CountingStore(log.meta), CountingStore(log.meta)
    expected = read_all(LogReader(plain, log.objects))
    clock = Clock()
    got = read_all(LogReader(remembering, log.objects, index_cache=IndexCache(clock)))
    assert got == expected == [b"v%03d" % i for i in range(64)]
    assert plain.calls["query"] == 32, "a query a fetch"
    assert remembering.calls["query"] == 4, "one a page of 16"


def test_a_roll_under_a_remembered_index_reads_the_same_records(tmp_path):
    log = tiny_log(tmp_path, configs={"segment.ms": 1})
    for i in range(20):
        log.produce(0, [(None, b"v%d" % i)])
    reader = LogReader(log.meta, log.objects, index_cache=IndexCache(Clock(), ttl_ms=10**9))
    before = reader.fetch(log.topic.topic_id, 0, 0, 10**6)
    log.clock.now += 10
    log.housekeep("roll")
    log.clock.now += 10**6  # past the grace period: the runs' objects are collected
    log.housekeep("gc")
    after = reader.fetch(log.topic.topic_id, 0, 3, 10**6)
    assert [r.value for b in after.batches for r in b.batch.records() if r.offset >= 3] == [
        r.value for b in before.batches for r in b.batch.records() if r.offset >= 3
    ]
    assert all(e.is_segment for e in reader.entries(log.topic.topic_id, 0, 0)), (
        "the vanished objects made the reader forget and read the index again"
    )


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 5), min_size=1, max_size=30),
    reads=st.lists(st.tuples(st.integers(0, 200), st.integers(1, 400)), max_size=20),
)
def test_remembered_entries_plan_what_the_index_plans(tmp_path_factory, sizes, reads):
    """Whatever was remembered before, a fetch returns what a reader without memory returns."""
    log = tiny_log(tmp_path_factory.mktemp("log"))
    for i, size in enumerate(sizes):
        log.produce(0, [(None, b"%d-%d" % (i, j)) for j in range(size)])
    end = sum(sizes)
    remembering = LogReader(log.meta, log.objects, index_cache=IndexCache(Clock()))
    for wanted, max_bytes in reads:
        offset = min(wanted, end)
        want = log.reader.fetch(log.topic.topic_id, 0, offset, max_bytes)
        got = remembering.fetch(log.topic.topic_id, 0, offset, max_bytes)
        assert [b.data for b in got.batches] == [b.data for b in want.batches]
        assert got.next_offset == want.next_offset
