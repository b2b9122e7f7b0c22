"""The JSON path's pure core: records in (checked, turned into bytes, placed, built once and not
decoded again), records out (rendered once, cut at the response's budget), and the pieces the
answers are put together from."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.api import json_object
from tidelog.errors import InvalidRequestError, TidelogError
from tidelog.local.gateway import json_string_size
from tidelog.log.read.fetch import FetchedBatch
from tidelog.log.read.serve import render
from tidelog.log.topics import Topic
from tidelog.log.write.produce import JsonRecord, json_records, plan_json_produce
from tidelog.log.write.validate import InvalidTimestampError, built_batch, validate_batches
from tidelog.partitioner import DefaultPartitioner, partition_for_key
from tidelog.records import RecordBatch, RecordBatchBuilder, RecordTooLargeError

NOW = 1_700_000_000_000


def model(key=None, value=None, headers=(), partition=None, timestamp=None):
    """A record as the request model holds it (attributes, types already checked)."""
    return SimpleNamespace(
        key=key,
        value=value,
        headers=[SimpleNamespace(key=k, value=v) for k, v in headers],
        partition=partition,
        timestamp=timestamp,
    )


def topic(partitions=3, **configs):
    return Topic("t", "id", partitions, {k.replace("_", "."): v for k, v in configs.items()})


# -- records in ---------------------------------------------------------------------------------


def test_json_records_turn_text_into_bytes():
    (utf8,) = json_records([model("k", "välue", [("h", "x"), ("n", None)], 2, 5)], "utf8")
    assert utf8 == JsonRecord(b"k", "välue".encode(), (("h", b"x"), ("n", None)), 2, 5)
    (b64,) = json_records([model("AAE=", None, [("h", "/w==")])], "base64")
    assert b64 == JsonRecord(b"\x00\x01", None, (("h", b"\xff"),), None, None)
    # JSON may carry a lone surrogate; it is kept as the bytes it stands for.
    (lone,) = json_records([model(value="\ud800")], "utf8")
    assert lone.value == b"\xed\xa0\x80"


@pytest.mark.parametrize(
    ("record", "where"),
    [
        (model(key="!!"), "records[1].key"),
        (model(value="a"), "records[1].value"),
        (model(headers=[("h", "AAE="), ("g", "?")]), "records[1].headers[1].value"),
    ],
)
def test_bad_base64_is_named_where_it_is(record, where):
    with pytest.raises(InvalidRequestError, match=f"^{re.escape(where)} is not valid"):
        json_records([model(value="AAE="), record], "base64")


def test_a_header_key_must_be_writable_as_utf8():
    with pytest.raises(
        InvalidRequestError, match=r"records\[0\]\.headers\[1\]\.key is not Unicode"
    ):
        json_records([model(value="v", headers=[("ok", None), ("\ud800", "x")])], "utf8")


@pytest.mark.parametrize("timestamp", [-1, 2**53])
def test_timestamps_out_of_range_are_kafkas_invalid_timestamp(timestamp):
    with pytest.raises(InvalidTimestampError, match=r"records\[0\]\.timestamp"):
        json_records([model(value="v", timestamp=timestamp)], "utf8")


def test_an_unknown_encoding_is_refused():
    with pytest.raises(InvalidRequestError, match="encoding"):
        json_records([model(value="v")], "latin1")


def test_the_plan_places_every_record_and_keeps_request_order():
    records = json_records(
        [
            model(key="a", value="1"),
            model(value="2", partition=7),  # no such partition: its own error
            model(key="b", value="3"),
            model(key="a", value="4", timestamp=99),
            model(value="5", partition=0),
        ],
        "utf8",
    )
    plan = plan_json_produce(topic(3), records, DefaultPartitioner(), NOW)
    assert [r.partition for r in plan.requests] == sorted({r.partition for r in plan.requests})
    for placed, record in zip(plan.placement, records, strict=True):
        if record.partition == 7:
            assert isinstance(placed, TidelogError)
            assert placed.kafka_error.name == "UNKNOWN_TOPIC_OR_PARTITION"
            continue
        assert isinstance(placed, tuple)
        request_index, position = placed
        request = plan.requests[request_index]
        expected = record.partition
        if expected is None:
            expected = partition_for_key(record.key, 3)
        assert request.partition == expected
        (batch,) = request.batches
        stored = RecordBatch(batch.data).records()[position]
        assert (stored.key, stored.value) == (record.key, record.value)
        assert stored.timestamp == (NOW if record.timestamp is None else record.timestamp)


def test_keyless_records_on_a_compacted_topic_fail_alone():
    records = json_records([model(value="x"), model(key="k", value="y")], "utf8")
    plan = plan_json_produce(topic(1, cleanup_policy="compact"), records, DefaultPartitioner(), NOW)
    assert isinstance(plan.placement[0], TidelogError)
    assert plan.placement[1] == (0, 0)
    assert plan.requests[0].batches[0].record_count == 1


def test_a_built_batch_over_max_message_bytes_fails_the_request():
    records = json_records([model(value="x" * 2000)], "utf8")
    with pytest.raises(RecordTooLargeError):
        plan_json_produce(topic(1, max_message_bytes="1000"), records, DefaultPartitioner(), NOW)


records_strategy = st.lists(
    st.tuples(
        st.none() | st.binary(max_size=40),
        st.none() | st.binary(max_size=300),
        st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3),
        st.integers(0, 2**53 - 1),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(
    records=records_strategy,
    codec=st.sampled_from(["none", "gzip", "lz4", "zstd", "snappy"]),
    stamp=st.none() | st.integers(0, 2**53),
)
def test_a_built_batch_is_what_full_validation_makes_of_it(records, codec, stamp):
    """Skipping the decode of what tidelog built itself changes nothing: the differential."""
    builder = RecordBatchBuilder(codec)
    for key, value, headers, timestamp in records:
        builder.append(key, value, headers, timestamp)
    data = builder.build()
    limits = {"max_message_bytes": 1 << 20, "log_append_time": stamp}
    assert built_batch(data, **limits) == validate_batches(data, **limits)[0]


@settings(max_examples=100, deadline=None)
@given(first=records_strategy, then=records_strategy, codec=st.sampled_from(["none", "lz4"]))
def test_a_builder_keeps_building_after_build(first, then, codec):
    """build() fills its header in place: what it returned before stays as it was, and the
    builder goes on to build the longer batch."""
    builder = RecordBatchBuilder(codec)
    for key, value, headers, timestamp in first:
        builder.append(key, value, headers, timestamp)
    early = builder.build()
    snapshot = bytes(early)
    for key, value, headers, timestamp in then:
        builder.append(key, value, headers, timestamp)
    later = builder.build()
    assert early == snapshot
    assert [r.value for r in RecordBatch(early).validate()] == [v for _, v, _, _ in first]
    assert [r.value for r in RecordBatch(later).validate()] == [v for _, v, _, _ in first + then]


# -- records out --------------------------------------------------------------------------------


def fetched(*records, base_offset=0, codec="none", control=False):
    builder = RecordBatchBuilder(codec, base_offset=base_offset, is_control_batch=control)
    for key, value, headers in records:
        builder.append(key, value, headers, NOW)
    data = builder.build()
    return FetchedBatch(data, RecordBatch(data))


def test_rendered_records_are_the_json_the_api_documents():
    batches = [
        fetched((b"k", b"v", [("h", b"x"), ("n", None)]), (None, None, [])),
        fetched((b"c", b"c", []), base_offset=2, control=True),
        fetched((b"k2", "é".encode(), []), base_offset=3, codec="lz4"),
    ]
    rendered = render(batches, 1, "utf8", 1 << 20)
    assert rendered.cut_at is None
    assert rendered.count == 2
    assert json.loads(rendered.json) == [
        {
            "offset": 1,
            "timestamp": NOW,
            "timestamp_type": "CreateTime",
            "key": None,
            "value": None,
            "headers": [],
        },
        {
            "offset": 3,
            "timestamp": NOW,
            "timestamp_type": "CreateTime",
            "key": "k2",
            "value": "é",
            "headers": [],
        },
    ]
    as_base64 = json.loads(render(batches, 0, "base64", 1 << 20).json)
    assert as_base64[0]["key"] == "aw=="
    assert as_base64[0]["headers"] == [{"key": "h", "value": "eA=="}, {"key": "n", "value": None}]


def test_the_budget_cuts_between_records_exactly():
    batches = [fetched(*[(b"k", bytes([65 + i]) * 50, []) for i in range(10)])]
    whole = render(batches, 0, "utf8", 1 << 20).json
    items = json.loads(whole)
    sizes = [len(json.dumps(item, separators=(",", ":"))) for item in items]
    for kept in range(1, 10):
        budget = 1 + sum(size + 1 for size in sizes[:kept])  # "[" and each record's "," or "]"
        for limit in (budget, budget + sizes[kept]):  # fits exactly; one byte short of more
            rendered = render(batches, 0, "utf8", limit)
            assert (rendered.count, rendered.cut_at) == (kept, kept)
            assert json.loads(rendered.json) == items[:kept]
            assert len(rendered.json) <= limit


def test_a_first_record_over_the_budget_is_an_error_or_an_empty_answer():
    batches = [fetched((None, b"x" * 100, []), base_offset=5)]
    with pytest.raises(RecordTooLargeError, match="offset 5"):
        render(batches, 0, "utf8", 50)
    rendered = render(batches, 0, "utf8", 50, at_least_one=False)
    assert (rendered.json, rendered.count, rendered.cut_at) == (b"[]", 0, 5)


def test_records_that_are_not_utf8_name_base64():
    with pytest.raises(InvalidRequestError, match="offset 0 is not UTF-8"):
        render([fetched((None, b"\xff", []))], 0, "utf8", 1 << 20)


def test_json_objects_hold_what_was_rendered_once():
    assert json.loads(json_object({"a": 1, "b": None}, records=b"[1,2]")) == {
        "a": 1,
        "b": None,
        "records": [1, 2],
    }
    assert json.loads(json_object({}, responses=b"[]")) == {"responses": []}
    assert json.loads(json_object({"only": "x"})) == {"only": "x"}


@given(st.text() | st.text(alphabet=st.characters(max_codepoint=127)))
def test_the_gateway_measures_a_json_string_as_the_standard_library_writes_it(text):
    assert json_string_size(text) == len(json.dumps(text))
