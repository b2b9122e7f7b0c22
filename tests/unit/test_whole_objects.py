"""A long-running host's read cache: flush objects cached whole (one GET serves every run in
them), its own committed objects written through, and concurrent misses sharing one load."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from tests.support.log import tiny_log

from tidelog.log.read.cache import ObjectCache
from tidelog.log.read.fetch import LogReader
from tidelog.log.write.groupcommit import GroupCommitter
from tidelog.log.write.staging import StagingArea
from tidelog.log.write.validate import validate_batches
from tidelog.log.write.writer import AppendRequest, Writer
from tidelog.records import RecordBatchBuilder
from tidelog.storage.faults import FaultPlan, FaultyMetadataStore, FaultyObjectStore
from tidelog.storage.memory import MemoryObjectStore


def batch(*values: bytes) -> list:
    builder = RecordBatchBuilder()
    for value in values:
        builder.append(None, value, (), 1_700_000_000_000)
    return validate_batches(builder.build(), max_message_bytes=10**6, log_append_time=None)


class CountingGets:
    def __init__(self, objects: MemoryObjectStore) -> None:
        self.objects = objects
        self.gets: Counter[tuple[str, int, int | None]] = Counter()

    def __call__(self, key: str, start: int, end: int | None) -> bytes:
        self.gets[(key, start, end)] += 1
        return self.objects.get(key, start, end)


def writer_over(tmp_path, meta, objects, on_committed=None) -> Writer:
    return Writer(
        meta,
        objects,
        StagingArea(tmp_path / "s"),
        clock_ms=lambda: 1_700_000_000_000,
        sleep=lambda s: None,
        jitter=lambda: 0.5,
        on_committed=on_committed,
    )


def one_flush_over(log, partitions: int) -> None:
    """One flush object holding a batch for each partition."""
    requests = [
        AppendRequest(log.topic, p, batch(b"p%d-a" % p, b"p%d-b" % p)) for p in range(partitions)
    ]
    assert all(r.error is None for r in log.writer.append(requests))


def read_everything(reader: LogReader, log, partitions: int) -> dict[int, list[bytes]]:
    return {
        p: [
            r.value
            for b in reader.fetch(log.topic.topic_id, p, 0, 10**6).batches
            for r in b.batch.records()
        ]
        for p in range(partitions)
    }


def test_one_get_serves_every_run_of_a_flush_object(tmp_path):
    log = tiny_log(tmp_path, partitions=4)
    one_flush_over(log, 4)
    loader = CountingGets(log.objects)
    reader = LogReader(
        log.meta, log.objects, ObjectCache(tmp_path / "c", 10**6, loader), whole_objects=True
    )
    got = read_everything(reader, log, 4)
    assert got == read_everything(log.reader, log, 4)
    assert got[3] == [b"p3-a", b"p3-b"]
    ((key, start, end),) = loader.gets
    assert (start, end, loader.gets[(key, start, end)]) == (0, None, 1), "the object, whole, once"

    by_run = CountingGets(log.objects)
    reader = LogReader(log.meta, log.objects, ObjectCache(tmp_path / "r", 10**6, by_run))
    assert read_everything(reader, log, 4) == got
    assert len(by_run.gets) == 4, "without whole objects: a ranged GET per run"


def test_committed_objects_are_read_without_a_get(tmp_path):
    log = tiny_log(tmp_path, partitions=3)
    loader = CountingGets(log.objects)
    cache = ObjectCache(tmp_path / "c", 10**6, loader)
    log.writer = writer_over(tmp_path, log.meta, log.objects, on_committed=cache.put)
    one_flush_over(log, 3)
    one_flush_over(log, 3)
    reader = LogReader(log.meta, log.objects, cache, whole_objects=True)
    assert read_everything(reader, log, 3) == read_everything(log.reader, log, 3)
    assert not loader.gets


def test_a_failing_hook_fails_no_append(tmp_path, caplog):
    log = tiny_log(tmp_path, partitions=2)
    log.writer = writer_over(tmp_path, log.meta, log.objects, on_committed=lambda key, body: 1 / 0)
    one_flush_over(log, 2)
    assert read_everything(log.reader, log, 2)[1] == [b"p1-a", b"p1-b"]
    assert "on_committed failed" in caplog.text


def test_the_next_flush_does_not_wait_for_the_cache(tmp_path):
    """A flush is over once it has committed: the next one commits and answers while the
    cache still writes the last one's object to disk, which would otherwise lengthen the
    one-flush-at-a-time path that bounds a host's produce throughput."""
    log = tiny_log(tmp_path, partitions=1)
    told: list[str] = []
    release = threading.Event()

    def slow_first(key: str, body: bytes) -> None:
        told.append(key)
        if len(told) == 1:
            assert release.wait(10)

    writer = writer_over(tmp_path, log.meta, log.objects, on_committed=slow_first)
    committer = GroupCommitter(writer, flush_ms=0, flush_bytes=10**9, in_flight=1)
    try:
        (first,) = committer.submit([AppendRequest(log.topic, 0, batch(b"first"))])
        deadline = time.monotonic() + 5
        while not told and time.monotonic() < deadline:
            time.sleep(0.001)
        (second,) = committer.submit([AppendRequest(log.topic, 0, batch(b"second"))])
        assert second.result(5).error is None, "committed while the cache still writes"
        assert not first.done(), "a flush's requests hear of it once its cache has the object"
    finally:
        release.set()
    assert first.result(5).error is None
    assert read_everything(log.reader, log, 1) == {0: [b"first", b"second"]}
    assert len(set(told)) == 2


def test_an_uncommitted_object_is_not_cached(tmp_path):
    log = tiny_log(tmp_path)
    told: list[str] = []
    failing = FaultyMetadataStore(log.meta, FaultPlan(seed=1, before=1.0))
    writer = writer_over(
        tmp_path, failing, log.objects, on_committed=lambda key, body: told.append(key)
    )
    (result,) = writer.append([AppendRequest(log.topic, 0, batch(b"x"))])
    assert result.error is not None
    assert told == []


def test_concurrent_misses_share_one_load(tmp_path):
    readers = 8
    started = threading.Barrier(readers + 1)
    release = threading.Event()
    loads: list[str] = []

    def slow(key: str, start: int, end: int | None) -> bytes:
        loads.append(key)
        release.wait(5)
        return b"0123456789"[start:end]

    cache = ObjectCache(tmp_path / "c", 10**6, slow)
    results: list[bytes] = []

    def read(i: int) -> None:
        started.wait()
        results.append(cache.read_within("obj", i, i + 2))

    threads = [threading.Thread(target=read, args=(i,)) for i in range(readers)]
    for thread in threads:
        thread.start()
    started.wait()
    time.sleep(0.05)  # every reader has missed and is waiting on the one load
    release.set()
    for thread in threads:
        thread.join()
    assert loads == ["obj"]
    assert sorted(results) == sorted(b"0123456789"[i : i + 2] for i in range(readers))


def test_a_failed_load_reaches_its_waiters_and_the_next_read_loads_again(tmp_path):
    attempts = []

    def flaky(key: str, start: int, end: int | None) -> bytes:
        attempts.append(key)
        if len(attempts) == 1:
            raise OSError("gone")
        return b"abcdef"

    cache = ObjectCache(tmp_path / "c", 10**6, flaky)
    with pytest.raises(OSError, match="gone"):
        cache.read_within("obj", 1, 3)
    assert cache.read_within("obj", 1, 3) == b"bc"
    assert cache.read_within("obj", 3, 6) == b"def"
    assert len(attempts) == 2


def test_an_object_above_the_bound_is_served_and_not_kept(tmp_path):
    cache = ObjectCache(tmp_path / "c", 4, lambda key, start, end: b"abcdefgh"[start:end])
    assert cache.read_within("big", 2, 5) == b"cde"
    assert not list((tmp_path / "c").iterdir())


def test_a_failed_upload_keeps_each_requests_own_error(tmp_path):
    """A conditional append that was stale before the upload is told so, not of the PUT."""
    log = tiny_log(tmp_path, partitions=2)
    one_flush_over(log, 2)
    down = FaultyObjectStore(log.objects, FaultPlan(seed=7, before=1.0))
    writer = writer_over(tmp_path, log.meta, down)
    stale, live = writer.append(
        [
            AppendRequest(log.topic, 0, batch(b"x"), expected_offset=0),
            AppendRequest(log.topic, 1, batch(b"y")),
        ]
    )
    assert type(stale.error).__name__ == "OffsetMismatchError"
    assert "could not store the batches" in str(live.error)
