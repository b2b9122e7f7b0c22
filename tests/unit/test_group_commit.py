"""Group commit: concurrent requests share a flush, except a conditional append's partition;
overlapping flushes commit in the order they were taken."""

from __future__ import annotations

import dataclasses
import re
import threading
import time

import pytest

from tidelog import principals
from tidelog.log.topics import Topic
from tidelog.log.write.groupcommit import GroupCommitter
from tidelog.log.write.plan import AppendResult
from tidelog.log.write.validate import ProducedBatch
from tidelog.log.write.writer import AppendRequest

TOPIC = Topic("t", "00000000-0000-0000-0000-000000000001", 4)


class RecordingWriter:
    """Uploads are recorded as they start; ``hold`` keeps an upload of a given partition
    waiting until its event is set."""

    def __init__(self, fail=False, hold=None):
        self.flushes: list[list[AppendRequest]] = []
        self.commits: list[list[AppendRequest]] = []
        self.fail = fail
        self.hold = hold or {}
        self.lock = threading.Lock()

    def upload(self, requests):
        with self.lock:
            self.flushes.append(list(requests))
        for r in requests:
            if r.partition in self.hold:
                assert self.hold[r.partition].wait(10)
        if self.fail:
            raise RuntimeError("storage is down")
        return Committed(self, list(requests))


class Committed:
    def __init__(self, writer, requests):
        self.writer, self.requests = writer, requests

    def commit(self, over=lambda: None):
        self.writer.commits.append(self.requests)
        over()
        return [AppendResult(r.partition, ((i, i),)) for i, r in enumerate(self.requests)]


def request(partition, expected=None, size=10):
    batch = ProducedBatch(b"x" * size, 1, 0, -1, -1, -1, -1)
    return AppendRequest(TOPIC, partition, [batch], expected)


def send_together(committer, requests):
    results = [None] * len(requests)
    barrier = threading.Barrier(len(requests))

    def send(i):
        barrier.wait()
        results[i] = committer.append([requests[i]])[0]

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return results


def test_concurrent_requests_share_one_flush():
    writer = RecordingWriter()
    committer = GroupCommitter(writer, flush_ms=200, flush_bytes=10**9, in_flight=1)
    results = send_together(committer, [request(p % 4) for p in range(8)])
    assert len(writer.flushes) == 1
    assert len(writer.flushes[0]) == 8
    assert all(r.error is None for r in results)


def test_an_idle_host_flushes_at_once_and_gathers_while_a_flush_is_in_flight():
    """The classic group commit (flush_ms 0): the first request is not held for a window;
    those that come during its flush go together in the next one, in the order they came."""
    release = threading.Event()
    writer = RecordingWriter(hold={0: release})
    committer = GroupCommitter(writer, flush_ms=0, flush_bytes=10**9, in_flight=1)
    first = request(0)
    threads, results = send_in_background(committer, [first])
    wait_for(lambda: len(writer.flushes) == 1)  # under way, with nothing else to wait for
    later = [request(p % 4 + 1) for p in range(6)]
    more, _ = send_in_background(committer, later)
    wait_for(lambda: len(committer._pending) == len(later))
    assert len(writer.flushes) == 1  # gathered behind the flush in flight
    release.set()
    for t in threads + more:
        t.join(10)
    assert [len(f) for f in writer.flushes] == [1, 6]
    assert {id(r) for r in writer.flushes[1]} == {id(r) for r in later}
    assert results[id(first)].error is None


def test_a_least_window_holds_an_idle_host_s_first_request():
    """flush_ms > 0 gathers after an idle host's first request: here the window is a minute,
    so only flush_bytes (reached by the third request) sends it."""
    writer = RecordingWriter()
    committer = GroupCommitter(writer, flush_ms=60_000, flush_bytes=30, in_flight=1)
    threads, _ = send_in_background(committer, [request(0)])
    wait_for(lambda: len(committer._pending) == 1)
    more, _ = send_in_background(committer, [request(1)])
    wait_for(lambda: len(committer._pending) == 2)
    assert writer.flushes == []
    last, _ = send_in_background(committer, [request(2)])
    for t in threads + more + last:
        t.join(10)
    assert [len(f) for f in writer.flushes] == [3]


def test_flush_bytes_flushes_early():
    writer = RecordingWriter()
    committer = GroupCommitter(writer, flush_ms=60_000, flush_bytes=100, in_flight=1)
    start = time.monotonic()
    committer.append([request(0, size=150)])
    assert time.monotonic() - start < 5
    assert len(writer.flushes) == 1


def test_a_conditional_append_never_shares_its_partition():
    writer = RecordingWriter()
    committer = GroupCommitter(writer, flush_ms=200, flush_bytes=10**9, in_flight=1)
    send_together(committer, [request(0), request(0, expected=5), request(1), request(0)])
    for flush in writer.flushes:
        conditional = [r for r in flush if r.expected_offset is not None]
        if conditional:
            assert [r for r in flush if r.partition == 0] == conditional
    assert sum(len(f) for f in writer.flushes) == 4


def test_a_failed_flush_fails_every_waiting_request():
    committer = GroupCommitter(
        RecordingWriter(fail=True), flush_ms=50, flush_bytes=10**9, in_flight=1
    )
    with pytest.raises(RuntimeError, match="storage is down"):
        committer.append([request(0)])


def send_in_background(committer, requests):
    results = {}

    def send(r):
        results[id(r)] = committer.append([r])[0]

    threads = [threading.Thread(target=send, args=(r,)) for r in requests]
    for t in threads:
        t.start()
    return threads, results


def wait_for(condition):
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_overlapping_flushes_commit_in_the_order_they_were_taken():
    release = threading.Event()
    writer = RecordingWriter(hold={0: release})
    committer = GroupCommitter(writer, flush_ms=1, flush_bytes=100, in_flight=3)
    first = request(0, size=150)
    threads, results = send_in_background(committer, [first])
    wait_for(lambda: len(writer.flushes) == 1)
    second = request(1, size=150)
    more, _ = send_in_background(committer, [second])
    wait_for(lambda: len(writer.flushes) == 2)  # full: it starts beside the held one
    time.sleep(0.05)
    assert writer.commits == [], "the second upload is done, yet waits for the first's commit"
    release.set()
    for t in threads + more:
        t.join(10)
    assert writer.commits == [[first], [second]]
    assert results[id(first)].error is None


def test_a_flush_waits_while_one_is_in_flight_until_it_is_full_or_the_first_ends():
    release = threading.Event()
    writer = RecordingWriter(hold={0: release})
    committer = GroupCommitter(writer, flush_ms=1, flush_bytes=100, in_flight=3)
    threads, _ = send_in_background(committer, [request(0, size=150)])
    wait_for(lambda: len(writer.flushes) == 1)
    small = [request(p, size=10) for p in (1, 2, 3)]
    more, _ = send_in_background(committer, small)
    time.sleep(0.1)
    assert len(writer.flushes) == 1, "small requests gather while a flush is in flight"
    release.set()
    for t in threads + more:
        t.join(10)
    assert [len(f) for f in writer.flushes] == [1, 3]


def test_no_more_than_in_flight_flushes_at_once():
    release = threading.Event()
    writer = RecordingWriter(hold={0: release})
    committer = GroupCommitter(writer, flush_ms=1, flush_bytes=100, in_flight=2)
    threads, answers = [], []
    for flushes in (1, 2, 3):
        sent, answered = send_in_background(committer, [request(0, size=150)])
        threads += sent
        answers.append(answered)
        if flushes < 3:
            wait_for(lambda n=flushes: len(writer.flushes) == n)
    time.sleep(0.1)
    assert len(writer.flushes) == 2, "a full request waits for a free slot"
    release.set()
    for t in threads:
        t.join(10)
    assert len(writer.commits) == 3
    results = [r for answered in answers for r in answered.values()]
    assert len(results) == 3
    assert all(r.error is None for r in results)


def test_a_request_whose_client_is_gone_is_withdrawn_before_it_is_sent():
    writer = RecordingWriter()
    committer = GroupCommitter(writer, flush_ms=200, flush_bytes=10**9, in_flight=1)
    gone = threading.Event()
    kept, withdrawn = request(0), dataclasses.replace(request(0), withdrawn=gone)
    gone.set()  # the connection closed while the request waited for its flush
    futures = committer.submit([withdrawn, kept])
    results = [f.result(10) for f in futures]
    assert results[0].error is not None
    assert results[0].error.kafka_error.name == "REQUEST_TIMED_OUT"
    assert results[1].error is None
    assert writer.flushes == [[kept]]


def test_a_conditional_append_keeps_the_partitions_order_behind_it():
    # What comes after a request kept back for its partition waits with it.
    writer = RecordingWriter()
    committer = GroupCommitter(writer, flush_ms=200, flush_bytes=10**9, in_flight=1)
    first, conditional, after = request(0), request(0, expected=1), request(0)
    futures = committer.submit([first, conditional, after])
    for future in futures:
        future.result(10)
    order = [r for flush in writer.commits for r in flush]
    assert order == [first, conditional, after]


def test_a_slow_flush_is_logged_with_where_its_time_went(monkeypatch, caplog):
    monkeypatch.setattr("tidelog.log.write.groupcommit.SLOW_FLUSH_S", 0.05)
    release = threading.Event()
    writer = RecordingWriter(hold={1: release})
    committer = GroupCommitter(writer, flush_ms=1, flush_bytes=1 << 20, in_flight=1)
    threading.Timer(0.1, release.set).start()
    with caplog.at_level("WARNING", logger="tidelog.log.write.groupcommit"):
        assert committer.append([request(1)])[0].error is None
        assert committer.append([request(2)])[0].error is None  # fast: not logged
    (slow,) = [r.getMessage() for r in caplog.records]
    assert slow.startswith("slow flush of 1 requests:")
    upload = re.search(r"upload (\d+\.\d) s", slow)
    assert upload is not None
    assert float(upload[1]) >= 0.1


def test_an_urgent_request_flushes_without_waiting_for_the_window():
    writer = RecordingWriter()
    committer = GroupCommitter(writer, flush_ms=60_000, flush_bytes=10**9, in_flight=1)
    (urgent,) = committer.submit([request(0)], urgent=True)
    assert urgent.result(timeout=10).error is None  # a minute's window, not waited for
    (patient,) = committer.submit([request(1)])
    time.sleep(0.2)
    assert not patient.done()  # the window holds a request that is not urgent
    assert len(writer.flushes) == 1


def test_a_flush_is_made_for_the_roles_of_every_request_in_it():
    """In ``tidelog dev`` functions share one committer: a flush's calls name every role whose
    requests it carries, so each role must allow them (tidelog.local.iam)."""
    seen: list[frozenset[str]] = []

    class RoleRecordingWriter(RecordingWriter):
        def upload(self, requests):
            seen.append(principals.acting_for.get())
            return super().upload(requests)

    committer = GroupCommitter(RoleRecordingWriter(), flush_ms=200, flush_bytes=10**9, in_flight=1)
    barrier = threading.Barrier(3)

    def send(roles, partition):
        with principals.acting_as(roles):
            barrier.wait()
            committer.append([request(partition)])

    threads = [
        threading.Thread(target=send, args=(roles, p))
        for p, roles in enumerate([frozenset({"produce"}), frozenset({"agent"}), frozenset()])
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == [frozenset({"produce", "agent"})]
    committer.append([request(0)])  # made for no role: the flush names none
    assert seen[-1] == frozenset()
