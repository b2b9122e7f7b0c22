"""A housekeeping pass's reads of the runs it rolls (tidelog.log.lifecycle.reads): the bytes
are always the runs' own, a small flush object is read once for every partition that rolls it
in the pass, and a roll's GETs overlap, never more than ``at_once`` of them."""

from __future__ import annotations

import contextvars
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.counting import CountingObjects
from tests.support.log import tiny_log

from tidelog.log.entries import LogEntry, partition_entries
from tidelog.log.lifecycle.housekeeping import MAINTENANCE_JOBS
from tidelog.log.lifecycle.reads import RunReads
from tidelog.log.write.validate import validate_batches
from tidelog.log.write.writer import AppendRequest
from tidelog.records import RecordBatchBuilder
from tidelog.storage import ObjectNotFoundError
from tidelog.storage.memory import MemoryObjectStore

ROLE: contextvars.ContextVar[str] = contextvars.ContextVar("role", default="none")


def one_record(value: bytes):
    builder = RecordBatchBuilder()
    builder.append(b"k", value, (), 1_700_000_000_000)
    return validate_batches(builder.build(), max_message_bytes=1000, log_append_time=None)


def a_run(key: str, start: int, end: int) -> LogEntry:
    return LogEntry(0, 0, key, start, end, 1, 0)


def stored(sizes: list[int]) -> MemoryObjectStore:
    objects = MemoryObjectStore(lambda: 0)
    for i, size in enumerate(sizes):
        objects.put(f"o{i}", bytes((i + j) % 251 for j in range(size)))
    return objects


@st.composite
def reads_of(draw: st.DrawFn) -> tuple[list[int], list[tuple[int, int, int]]]:
    sizes = draw(st.lists(st.integers(0, 400), min_size=1, max_size=6))
    runs = []
    for _ in range(draw(st.integers(0, 30))):
        which = draw(st.integers(0, len(sizes) - 1))
        start = draw(st.integers(0, sizes[which]))
        runs.append((which, start, draw(st.integers(start, sizes[which]))))
    return sizes, runs


@settings(max_examples=300, deadline=None)
@given(
    reads_of(),
    st.integers(0, 500),  # read_ahead: within, at and beyond the objects' sizes
    st.integers(0, 1200),  # budget: from keeping nothing to keeping everything
    st.integers(1, 5),
)
def test_every_run_reads_its_own_bytes_whatever_is_kept(case, read_ahead, budget, at_once):
    sizes, wanted = case
    objects = stored(sizes)
    reads = RunReads(objects, read_ahead=read_ahead, budget=budget, at_once=at_once)
    runs = [a_run(f"o{i}", start, end) for i, start, end in wanted]
    assert list(reads.read(runs)) == [objects.get(r.object_key, r.start, r.end) for r in runs]
    assert list(reads.read(runs)) == [objects.get(r.object_key, r.start, r.end) for r in runs]


def test_a_run_near_its_objects_start_brings_the_prefix_and_one_further_in_reads_alone():
    objects = CountingObjects(stored([300, 300]))
    reads = RunReads(objects, read_ahead=100, at_once=1)
    assert list(reads.read([a_run("o0", 0, 40), a_run("o0", 40, 100), a_run("o0", 10, 20)]))
    assert list(reads.read([a_run("o0", 150, 250), a_run("o0", 150, 250)]))
    assert objects.gets == {("o0", 0, 100): 1, ("o0", 150, 250): 2}


def test_what_is_kept_stays_within_the_budget_least_recently_used_out_first():
    objects = CountingObjects(stored([100, 100, 100]))
    reads = RunReads(objects, read_ahead=100, budget=200, at_once=1)
    o0, o1, o2 = (a_run(f"o{i}", 0, 10) for i in range(3))
    list(reads.read([o0, o1, o0, o2]))  # o0 used again after o1: o1 goes out for o2
    list(reads.read([o0, o2]))
    assert objects.gets_of("o0") == objects.gets_of("o2") == 1
    list(reads.read([o1]))
    assert objects.gets_of("o1") == 2
    nothing_kept = CountingObjects(stored([100]))
    list(RunReads(nothing_kept, read_ahead=100, budget=99, at_once=1).read([o0, o0]))
    assert nothing_kept.gets_of("o0") == 2  # a prefix over the budget is never kept


def test_reads_overlap_at_most_at_once():
    objects = CountingObjects(stored([50] * 20))
    objects.meet(4)
    runs = [a_run(f"o{i}", 0, 50) for i in range(20)]
    expected = [objects.inner.get(r.object_key) for r in runs]
    assert list(RunReads(objects, at_once=4).read(runs)) == expected
    assert objects.most_in_flight == 4


def test_reads_run_no_further_ahead_of_the_roll_than_at_once():
    objects = CountingObjects(stored([50] * 40))
    runs = [a_run(f"o{i}", 0, 50) for i in range(40)]
    taken = RunReads(objects, at_once=4).read(runs)
    assert next(taken) == objects.inner.get("o0")
    time.sleep(0.2)  # time enough to read all forty, were they asked for
    assert sum(objects.gets.values()) == 1 + 4  # the one taken, and at_once ahead of it
    assert len(list(taken)) == 39


def test_reads_are_made_in_the_callers_context():
    """In `tidelog dev` the context names the role every AWS call is held to."""
    seen: set[str] = set()
    objects = CountingObjects(stored([10] * 8))
    inner_get = objects.inner.get

    def get_noting_the_role(key: str, start: int = 0, end: int | None = None) -> bytes:
        seen.add(ROLE.get())
        return inner_get(key, start, end)

    objects.inner.get = get_noting_the_role  # type: ignore[method-assign]
    token = ROLE.set("maintenance")
    try:
        list(RunReads(objects, at_once=4).read([a_run(f"o{i}", 0, 10) for i in range(8)]))
    finally:
        ROLE.reset(token)
    assert seen == {"maintenance"}


def test_a_failed_read_reaches_the_roll():
    reads = RunReads(stored([10] * 5), at_once=3)
    runs = [a_run(f"o{i}", 0, 10) for i in range(5)] + [a_run("gone", 0, 10)]
    with pytest.raises(ObjectNotFoundError):
        list(reads.read(runs))


def test_a_pass_reads_each_small_flush_object_once_for_all_its_partitions(tmp_path):
    counting = CountingObjects(MemoryObjectStore(lambda: 0))
    log = tiny_log(tmp_path, partitions=6, objects=counting, configs={"segment.ms": 1})
    for i in range(20):  # twenty flush objects, each with a run of every partition
        requests = []
        for p in range(6):
            builder = RecordBatchBuilder()
            builder.append(b"k", b"%d-%d" % (p, i), (), log.clock.now)
            batches = validate_batches(
                builder.build(), max_message_bytes=1000, log_append_time=None
            )
            requests.append(AppendRequest(log.topic, p, batches))
        assert all(r.error is None for r in log.writer.append(requests))
    log.clock.now += 10
    report = log.housekeep(*MAINTENANCE_JOBS)
    assert report.segments_rolled == 6
    assert counting.gets_of("data/") == 20
    for p in range(6):
        assert all(e.is_segment for e in partition_entries(log.meta, log.topic.topic_id, p))
        assert [r.value for r in log.fetch_all(p)] == [b"%d-%d" % (p, i) for i in range(20)]
