"""A long-running host's memory of index entries: a backlog read without re-querying pages it
already has, never past its time to live, within its bounds of memory, and the same records
whatever the index did since."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.counting import CountingStore
from tests.support.log import tiny_log

from tidelog.log.entries import LogEntry
from tidelog.log.read.fetch import LogReader
from tidelog.log.read.indexcache import DEFAULT_TTL_MS, IndexCache


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


def test_past_the_entries_bound_the_partitions_used_least_lately_are_forgotten():
    cache = IndexCache(Clock(), entries=6)
    for pk in ("a", "b", "c"):
        cache.remember(pk, [entry(0, 1), entry(2, 3)])
    assert len(cache) == 6
    assert cache.run_from("a", 0), "a read is a use: b is now the least lately used"
    cache.remember("d", [entry(0, 1)])
    assert cache.run_from("b", 0) == []
    assert [bool(cache.run_from(pk, 0)) for pk in "acd"] == [True, True, True]
    assert len(cache) == 5
    cache.forget("a")
    assert len(cache) == 3


def test_a_partition_past_the_entries_bound_on_its_own_keeps_its_newest():
    cache = IndexCache(Clock(), entries=4)
    cache.remember("other", [entry(0, 0)])
    cache.remember("p", [entry(i, i) for i in range(6)])
    assert cache.run_from("other", 0) == []
    assert cache.run_from("p", 1) == []
    assert [e.base_offset for e in cache.run_from("p", 2)] == [2, 3, 4, 5]
    assert len(cache) == 4


def test_stale_entries_leave_memory_when_their_partition_is_next_remembered():
    clock = Clock()
    cache = IndexCache(clock, ttl_ms=800)
    cache.remember("p", [entry(i, i) for i in range(10)])
    clock.now = 99  # within an eighth of the time to live of the last sweep: no sweep yet
    cache.remember("p", [entry(10, 10)])
    clock.now = 850
    assert cache.run_from("p", 0) == [], "a run never uses a stale entry"
    assert len(cache) == 11
    cache.remember("p", [entry(11, 11)])
    assert len(cache) == 2
    assert [e.base_offset for e in cache.run_from("p", 10)] == [10, 11]


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["remember", "read", "forget", "wait"]),
            st.sampled_from("abcd"),
            st.integers(0, 12),
            st.integers(1, 5),
        ),
        max_size=60,
    )
)
def test_a_run_holds_only_fresh_latest_contiguous_entries_within_both_bounds(steps):
    clock = Clock()
    cache = IndexCache(clock, ttl_ms=40, partitions=3, entries=10)
    latest: dict[tuple[str, int], tuple[LogEntry, int]] = {}
    for op, pk, base, size in steps:
        if op == "remember":
            remembered = [entry(b, b + size - 1, f"{clock.now}") for b in range(base, 20, size)]
            cache.remember(pk, remembered[:4])
            latest.update({(pk, e.base_offset): (e, clock.now) for e in remembered[:4]})
        elif op == "read":
            run = cache.run_from(pk, base)
            for before, after in itertools.pairwise(run):
                assert after.base_offset == before.last_offset + 1
            for e in run:
                assert latest[pk, e.base_offset][0] is e, "the latest remembered at its base"
                assert clock.now - latest[pk, e.base_offset][1] < 40, "fresh"
            assert not run or run[0].base_offset <= base <= run[0].last_offset
        elif op == "forget":
            cache.forget(pk)
            assert cache.run_from(pk, base) == []
        else:
            clock.now += size * 5
        held = sum(len(p.entries) for p in cache._partitions.values())
        assert len(cache) == held <= 10
        assert all(p.bases == sorted(p.entries) for p in cache._partitions.values())
        assert len(cache._partitions) <= 3


def test_a_host_remembers_entries_no_longer_than_the_collectors_grace(monkeypatch):
    from tidelog import runtime

    monkeypatch.setenv("TIDELOG_TABLE", "t")
    monkeypatch.setenv("TIDELOG_BUCKET", "b")
    monkeypatch.setenv("TIDELOG_CACHE_BYTES", "0")
    for grace, ttl in ((10**9, DEFAULT_TTL_MS), (30_000, 30_000)):
        monkeypatch.setenv("TIDELOG_GC_GRACE_MS", str(grace))
        runtime.reset()
        try:
            index_cache = runtime.log_reader().index_cache
            assert index_cache is not None
            assert index_cache.ttl_ms == ttl
        finally:
            runtime.reset()


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
