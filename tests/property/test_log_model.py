"""Produce, fetch, roll, retain, delete records, compact and collect, interleaved by Hypothesis
and checked against a plain list of records after every step, and the head's size against the
bytes stored."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from tests.support.log import tiny_log

from tidelog.log.entries import partition_entries, without_leftovers
from tidelog.log.head import read_head
from tidelog.log.lifecycle import retention

KEYS = st.sampled_from([b"a", b"b", b"c", b"d"])
VALUES = st.one_of(st.none(), st.binary(min_size=1, max_size=40))


class LogModel(RuleBasedStateMachine):
    """The model: every record ever acknowledged, at its offset. The log may lose only what its
    policy allows: retention a prefix, compaction records superseded by a later one for the same
    key (and tombstones, once their horizon has passed)."""

    @initialize(
        policy=st.sampled_from(["delete", "compact"]),
        segment_bytes=st.integers(min_value=100, max_value=2000),
    )
    def start(self, policy, segment_bytes):
        self.directory = tempfile.TemporaryDirectory()
        configs = {
            "cleanup.policy": policy,
            "segment.bytes": segment_bytes,
            "segment.ms": 1,
            "delete.retention.ms": 100,
        }
        self.log = tiny_log(Path(self.directory.name), configs=configs, grace_ms=30)
        self.compacting = policy == "compact"
        self.model: list[tuple[bytes, bytes | None]] = []
        self.log_start = 0

    def teardown(self):
        self.directory.cleanup()

    @rule(records=st.lists(st.tuples(KEYS, VALUES), min_size=1, max_size=5))
    def produce(self, records):
        if not self.compacting:
            records = [(k, v or b"v") for k, v in records]
        offsets = self.log.produce(0, records)
        assert offsets == list(range(len(self.model), len(self.model) + len(records)))
        self.model += records
        self.log.clock.now += 1

    @rule(ms=st.integers(min_value=1, max_value=120))
    def time_passes(self, ms):
        self.log.clock.now += ms

    @rule()
    def roll(self):
        self.log.housekeep("roll")

    @rule(retention_bytes=st.integers(min_value=0, max_value=3000))
    def retain(self, retention_bytes):
        if self.compacting:
            return
        self.log.topics.alter_configs("tiny", {"retention.bytes": retention_bytes})
        before = self.log.reader.head(self.log.topic.topic_id, 0)[0]
        self.log.housekeep("retention")
        if self.log.reader.head(self.log.topic.topic_id, 0)[0] != before:
            # Kafka deletes a segment only while the log stays at least retention.bytes.
            entries = without_leftovers(
                partition_entries(self.log.meta, self.log.topic.topic_id, 0)
            )
            assert sum(e.size for e in entries) >= retention_bytes

    @rule(data=st.data())
    def delete_records(self, data):
        if self.compacting:
            return
        start, end = self.log.reader.head(self.log.topic.topic_id, 0)
        offset = data.draw(st.integers(min_value=start, max_value=end))
        now = self.log.clock.now
        assert retention.delete_records(self.log.meta, self.log.topic, 0, offset, now_ms=now) == (
            offset
        )

    @rule()
    def compact(self):
        self.log.housekeep("compaction")

    @rule()
    def collect(self):
        self.log.housekeep("gc")

    @rule(data=st.data())
    def fetch_from_anywhere(self, data):
        start, end = self.log.reader.head(self.log.topic.topic_id, 0)
        if start == end:
            return
        offset = data.draw(st.integers(min_value=start, max_value=end - 1))
        max_bytes = data.draw(st.integers(min_value=1, max_value=5000))
        fetched = self.log.reader.fetch(self.log.topic.topic_id, 0, offset, max_bytes)
        assert fetched.next_offset > offset
        offsets = [r.offset for b in fetched.batches for r in b.batch.records()]
        # At least one batch, unless compaction emptied everything up to the end.
        assert offsets or (self.compacting and fetched.next_offset == end)
        assert all(o < end for o in offsets)
        self._check_records(
            [r for b in fetched.batches for r in b.batch.records() if r.offset >= offset]
        )

    @invariant()
    def the_log_is_what_the_policy_allows(self):
        if not hasattr(self, "log"):
            return
        start, end = self.log.reader.head(self.log.topic.topic_id, 0)
        assert end == len(self.model)
        assert self.log_start <= start <= end
        self.log_start = start
        records = self.log.fetch_all(0)
        self._check_records(records)
        present = {r.offset for r in records}
        latest = {key: offset for offset, (key, _) in enumerate(self.model)}
        for offset in range(start, end):
            key, value = self.model[offset]
            removable = self.compacting and (latest[key] != offset or value is None)
            assert offset in present or removable, f"offset {offset} is lost"

    @invariant()
    def the_head_keeps_the_size_of_the_stored_batches(self):
        if not hasattr(self, "log"):
            return
        stored = 0
        for entry in without_leftovers(
            partition_entries(self.log.meta, self.log.topic.topic_id, 0)
        ):
            stored += len(self.log.objects.get(entry.object_key)[entry.start : entry.end])
        assert read_head(self.log.meta, self.log.topic.topic_id, 0).size == stored

    def _check_records(self, records):
        offsets = [r.offset for r in records]
        assert offsets == sorted(set(offsets)), "records out of order or duplicated"
        for record in records:
            assert (record.key, record.value) == self.model[record.offset]


TestLogModel = LogModel.TestCase
TestLogModel.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
