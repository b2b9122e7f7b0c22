"""Interleavings of transactions, aborts and plain writes on one partition (Hypothesis):
read_committed never shows an aborted record or a marker, always shows every committed and
plain one below the last stable offset, and the LSO stops at the earliest open transaction."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tidelog.txn.stable import (
    Appended,
    advance,
    last_stable_offset,
    overlapping,
    visible,
)

PRODUCERS = st.integers(1, 4)
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["write", "txn-write", "commit", "abort"]), PRODUCERS, st.integers(1, 3)
    ),
    max_size=40,
)


def play(steps):
    """The log the steps make, batch by batch, with what each record really became."""
    offset, batches, fate, pending = 0, [], {}, {}
    for kind, producer, count in steps:
        if kind in ("commit", "abort"):
            batches.append(Appended(offset, offset, producer, True, kind.upper()))
            for o in pending.pop(producer, []):
                fate[o] = kind == "commit"
            offset += 1
            continue
        transactional = kind == "txn-write"
        batches.append(Appended(offset, offset + count - 1, producer, transactional))
        for o in range(offset, offset + count):
            if transactional:
                pending.setdefault(producer, []).append(o)
            else:
                fate[o] = True
        offset += count
    return batches, fate, pending, offset


@given(STEPS, st.integers(0, 5))
def test_read_committed_sees_exactly_what_committed_below_the_lso(steps, split):
    batches, fate, pending, end = play(steps)
    # the index is kept as appends arrive, in any grouping of batches per commit
    open_txns, aborted = {}, []
    for start in range(0, len(batches), split + 1):
        open_txns, more = advance(open_txns, batches[start : start + split + 1])
        aborted += more
    lso = last_stable_offset(open_txns, end)
    still_open = [o for offsets in pending.values() for o in offsets]
    assert lso == min(still_open, default=end)
    named = overlapping(aborted, 0, lso)
    seen = {
        o
        for b in batches
        if b.last_offset < lso and visible(b, named)
        for o in range(b.base_offset, b.last_offset + 1)
    }
    committed = {o for o, kept in fate.items() if kept and o < lso}
    assert seen == committed


@given(STEPS, st.integers(0, 60), st.integers(0, 60))
def test_a_fetch_is_told_every_abort_that_touches_its_range_and_no_other(steps, a, b):
    batches, _, _, _ = play(steps)
    _, aborted = advance({}, batches)
    start, end = min(a, b), max(a, b)
    named = overlapping(aborted, start, end)
    for txn in aborted:
        touches = txn.last_offset >= start and txn.first_offset < end
        assert (txn in named) == touches
