"""The compiled column reader (aiokafka's) against tidelog's own decoder: the same columns for
any batch a writer or the cleaner makes, and corrupt records refused by both."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.property.test_records_properties import BYTES, CODECS, HEADERS

from tidelog.records import (
    CorruptRecordError,
    RecordBatch,
    RecordBatchBuilder,
    with_log_append_time,
)
from tidelog.records.columns import COMPILED, Columns, columns

RECORDS = st.lists(
    st.tuples(BYTES, BYTES, HEADERS, st.integers(0, 2**41), st.integers(1, 4)),
    min_size=1,
    max_size=25,
)


def test_the_compiled_reader_is_what_reads_here():
    # The spark extra brings aiokafka, whose wheels are compiled for every supported platform:
    # a silent fall back to Python would cost reads five times their time.
    assert COMPILED is not None
    assert "_crecords" in COMPILED.__module__


@settings(max_examples=300)
@given(
    RECORDS,
    CODECS,
    st.sampled_from(["create", "log_append"]),
    st.integers(0, 2**40),
    st.data(),
)
def test_compiled_and_python_columns_agree(records, codec, timestamp_type, base, data):
    builder = RecordBatchBuilder(codec, base_offset=base)
    delta = -1
    for key, value, headers, stamp, step in records:
        delta += step  # gaps, as the cleaner leaves them
        builder.append(key, value, headers, stamp, offset_delta=delta)
    raw = builder.build()
    if timestamp_type == "log_append":  # the broker's rewrite: every record reads maxTimestamp
        raw = with_log_append_time(raw, data.draw(st.integers(0, 2**41)))
    batch = RecordBatch(raw)
    start = data.draw(st.integers(base - 1, batch.last_offset + 1))
    end = data.draw(st.integers(start, batch.last_offset + 2))
    headers = data.draw(st.booleans())
    compiled = columns(batch, start, end, headers=headers)
    python = columns(batch, start, end, headers=headers, compiled=False)
    assert compiled == python
    expected = [r for r in batch.records() if start <= r.offset < end]
    assert compiled.offsets == [r.offset for r in expected]
    assert compiled.timestamps == [r.timestamp for r in expected]
    assert compiled.values == [r.value for r in expected]
    assert compiled.headers == ([list(r.headers) for r in expected] if headers else [])


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_a_record_running_past_its_batch_is_refused(compiled):
    builder = RecordBatchBuilder()
    builder.append(b"k", b"value", (), 1)
    raw = bytearray(builder.build())
    raw[61] = 0x7E  # the record's length varint: 63, past the batch's end
    with pytest.raises(CorruptRecordError):
        columns(RecordBatch(bytes(raw)), 0, 10, compiled=compiled)


def test_an_empty_range_is_no_columns():
    builder = RecordBatchBuilder(base_offset=10)
    builder.append(b"k", b"v", (), 1)
    assert columns(RecordBatch(builder.build()), 11, 20) == Columns()
