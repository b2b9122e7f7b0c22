"""Interleavings of transactions, aborts, timeouts and plain writes on one partition, through
the real commit path, coordinator and fetch (Hypothesis): a read_committed reader that filters
as Kafka's consumers do (and the HTTP API, filtering on the server) sees exactly the plain
records and the committed ones, in log order;
never a record at or past the last stable offset; and every partition ends with nothing open."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.txnlog import txn_log

from tidelog.log.head import read_head
from tidelog.txn.state import State

IDS = ["a", "b", "c"]
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["plain", "write", "commit", "abort", "fence", "timeout"]),
        st.sampled_from(IDS),
        st.integers(1, 3),
    ),
    max_size=30,
)


# Read straight from the aborted index, through the cache, and through a cache too small to keep
# the partition (its fetches fall back to searching).
@pytest.mark.parametrize("cached", [None, 4096, 2])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_read_committed_sees_exactly_what_committed(cached, steps):
    with tempfile.TemporaryDirectory() as tmp:
        t = txn_log(Path(tmp), partitions=1, cached=cached)
        producers = {i: t.producer(i, timeout_ms=1000) for i in IDS}
        pending: dict[str, list[bytes]] = {i: [] for i in IDS}
        expected: list[bytes] = []
        n = 0
        for kind, who, count in steps:
            p = producers[who]
            if kind == "plain":
                values = [f"plain-{n + k}".encode() for k in range(count)]
                t.log.produce(0, [(None, v) for v in values])
                expected += values
            elif kind == "write":
                t.begin(p, [0])
                values = [f"{who}-{n + k}".encode() for k in range(count)]
                assert t.send(p, 0, values).error is None
                pending[who] += values
            elif kind in ("commit", "abort") and pending[who]:
                t.end(p, commit=kind == "commit")
                if kind == "commit":
                    expected += pending[who]
                pending[who] = []
            elif kind == "fence":
                producers[who] = t.producer(who, timeout_ms=1000)  # aborts what was open
                pending[who] = []
            elif kind == "timeout" and pending[who]:
                t.log.clock.now += 1001
                t.coordinator.expire()
                for other in IDS:  # every open transaction timed out
                    pending[other] = []
                producers = {i: t.producer(i, timeout_ms=1000) for i in IDS}
            n += count
            stable = read_head(t.log.meta, t.topic.topic_id, 0).last_stable_offset
            assert all(r.offset < stable for r in t.read_committed(0))
        for who in IDS:
            if pending[who]:
                t.end(producers[who], commit=True)
                expected += pending[who]
        seen = [r.value for r in t.read_committed(0)]
        assert [r.value for r in t.read_served(0)] == seen  # the HTTP API's filter agrees
        # Committed transactions land in log order, interleaved with plain writes: compare as
        # a set and check the order of each producer's own records.
        assert sorted(seen) == sorted(expected)
        for who in [*IDS, "plain"]:
            mine = [v for v in seen if v.startswith(who.encode())]
            assert mine == sorted(mine, key=lambda v: int(v.split(b"-")[1]))
        assert read_head(t.log.meta, t.topic.topic_id, 0).open_txns == {}
        assert all(
            t.coordinator.describe(i).state
            in (State.COMPLETE_COMMIT, State.COMPLETE_ABORT, State.EMPTY)
            for i in IDS
        )
