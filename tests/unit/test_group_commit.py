"""Group commit: concurrent requests share a flush, except a conditional append's partition."""

from __future__ import annotations

import threading
import time

import pytest

from tidelog.log.commit import AppendResult
from tidelog.log.groupcommit import GroupCommitter
from tidelog.log.topics import Topic
from tidelog.log.validate import ProducedBatch
from tidelog.log.writer import AppendRequest

TOPIC = Topic("t", "00000000-0000-0000-0000-000000000001", 4)


class RecordingWriter:
    def __init__(self, fail=False):
        self.flushes: list[list[AppendRequest]] = []
        self.fail = fail

    def append(self, requests):
        self.flushes.append(list(requests))
        if self.fail:
            raise RuntimeError("storage is down")
        return [AppendResult(r.partition, ((i, i),)) for i, r in enumerate(requests)]


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
    committer = GroupCommitter(writer, flush_ms=200, flush_bytes=10**9)
    results = send_together(committer, [request(p % 4) for p in range(8)])
    assert len(writer.flushes) == 1
    assert len(writer.flushes[0]) == 8
    assert all(r.error is None for r in results)


def test_flush_bytes_flushes_early():
    writer = RecordingWriter()
    committer = GroupCommitter(writer, flush_ms=60_000, flush_bytes=100)
    start = time.monotonic()
    committer.append([request(0, size=150)])
    assert time.monotonic() - start < 5
    assert len(writer.flushes) == 1


def test_a_conditional_append_never_shares_its_partition():
    writer = RecordingWriter()
    committer = GroupCommitter(writer, flush_ms=200, flush_bytes=10**9)
    send_together(committer, [request(0), request(0, expected=5), request(1), request(0)])
    for flush in writer.flushes:
        conditional = [r for r in flush if r.expected_offset is not None]
        if conditional:
            assert [r for r in flush if r.partition == 0] == conditional
    assert sum(len(f) for f in writer.flushes) == 4


def test_a_failed_flush_fails_every_waiting_request():
    committer = GroupCommitter(RecordingWriter(fail=True), flush_ms=50, flush_bytes=10**9)
    with pytest.raises(RuntimeError, match="storage is down"):
        committer.append([request(0)])
