"""Transaction markers: the bytes Kafka's own readers take as COMMIT and ABORT control
batches (kafka-python as the oracle), and batches read back as the LSO rules see them."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatch

from tidelog.records import RecordBatch, RecordBatchBuilder
from tidelog.records.edits import with_base_offset
from tidelog.txn.markers import appended, marker_batch
from tidelog.txn.stable import Appended


@pytest.mark.parametrize(("commit", "kind"), [(True, 1), (False, 0)])
def test_a_marker_is_a_control_batch_kafkas_readers_take_as_such(commit, kind):
    data = marker_batch(42, 7, commit=commit, timestamp_ms=1_700_000_000_000)
    theirs = DefaultRecordBatch(data)
    assert theirs.is_control_batch
    assert theirs.is_transactional
    assert (theirs.producer_id, theirs.producer_epoch) == (42, 7)
    (record,) = list(theirs)
    assert record.key[2:4] == kind.to_bytes(2, "big")  # version 0, then the type
    ours = RecordBatch(data)
    assert ours.control_record().type == ("COMMIT" if commit else "ABORT")


def test_committed_batches_read_as_the_lso_rules_see_them():
    builder = RecordBatchBuilder(
        producer_id=5, producer_epoch=1, base_sequence=0, is_transactional=True
    )
    for i in range(3):
        builder.append(None, b"v%d" % i, (), 1)
    data = with_base_offset(builder.build(), 10)
    assert appended(RecordBatch(data)) == Appended(10, 12, 5, True)
    marker = with_base_offset(marker_batch(5, 1, commit=False, timestamp_ms=2), 13)
    assert appended(RecordBatch(marker)) == Appended(13, 13, 5, True, "ABORT")
