"""The Spark format's options and planning, without Spark: Kafka source semantics."""

from __future__ import annotations

import json

import pytest

from tidelog.spark.options import (
    Connection,
    OptionError,
    Subscription,
    ending,
    flag,
    option,
    positive,
    starting,
    subscription,
)
from tidelog.spark.planning import OffsetRange, rate_limit, split


def test_options_are_case_insensitive():
    assert option({"startingoffsets": "latest"}, "startingOffsets") == "latest"
    assert option({}, "x", "d") == "d"


def test_exactly_one_subscription():
    assert subscription({"subscribe": "a, b"}) == Subscription(topics=("a", "b"))
    assert subscription({"subscribePattern": "clicks-.*"}).matches("clicks-eu")
    assert not subscription({"subscribePattern": "clicks-.*"}).matches("views")
    assigned = subscription({"assign": json.dumps({"a": [1, 0], "b": [2]})})
    assert assigned.partitions({"a": 2, "b": 3}) == [("a", 0), ("a", 1), ("b", 2)]
    for bad in (
        {},
        {"subscribe": "a", "assign": "{}"},
        {"subscribe": " , "},
        {"subscribePattern": "("},
        {"assign": "[1]"},
        {"assign": '{"a": [-1]}'},
    ):
        with pytest.raises(OptionError):
            subscription(bad)
    with pytest.raises(OptionError, match="do not exist"):
        assigned.partitions({"a": 1, "b": 3})


def test_starting_and_ending_offsets_follow_kafkas_source():
    assert starting({}, streaming=False).kind == "earliest"
    assert starting({}, streaming=True).kind == "latest"
    spec = starting(
        {"startingOffsets": json.dumps({"t": {"0": 5, "1": -2, "2": -1}})}, streaming=False
    )
    assert spec.for_partition(("t", 0)) == ("offset", 5)
    assert spec.for_partition(("t", 1)) == ("earliest", None)
    assert spec.for_partition(("t", 2)) == ("latest", None)
    with pytest.raises(OptionError, match="no offset for t-3"):
        spec.for_partition(("t", 3))
    by_time = starting(
        {"startingTimestamp": "100", "startingOffsetsByTimestamp": json.dumps({"t": {"0": 7}})},
        streaming=False,
    )
    assert by_time.for_partition(("t", 0)) == ("timestamp", 7)  # the per-partition one wins
    assert starting({"startingTimestamp": "100"}, streaming=True).for_partition(("x", 9)) == (
        "timestamp",
        100,
    )
    with pytest.raises(OptionError, match="cannot be earliest"):
        ending({"endingOffsets": "earliest"})
    with pytest.raises(OptionError):
        ending({"endingOffsets": json.dumps({"t": {"0": -2}})})
    with pytest.raises(OptionError):
        starting({"startingOffsets": json.dumps({"t": {"0": -3}})}, streaming=False)
    with pytest.raises(OptionError):
        starting({"startingTimestamp": "-1"}, streaming=False)


def test_numbers_flags_and_the_connection():
    assert positive({"minPartitions": "4"}, "minPartitions") == 4
    with pytest.raises(OptionError):
        positive({"minPartitions": "0"}, "minPartitions")
    assert flag({"failOnDataLoss": "False"}, "failOnDataLoss", True) is False
    with pytest.raises(OptionError):
        flag({"failOnDataLoss": "no"}, "failOnDataLoss", True)
    env = Connection.from_options(
        {}, {"TIDELOG_BUCKET": "b", "TIDELOG_TABLE": "t", "AWS_REGION": "eu-west-1"}
    )
    assert (env.bucket, env.table, env.region, env.endpoint) == ("b", "t", "eu-west-1", None)


def test_min_partitions_splits_in_proportion():
    ranges = [
        OffsetRange("t", 0, "id", 0, 100),
        OffsetRange("t", 1, "id", 0, 300),
        OffsetRange("t", 2, "id", 5, 5),
    ]
    assert split(ranges, None) == ranges[:2]
    parts = split(ranges, 4)
    assert [(r.partition, r.start, r.end) for r in parts] == [
        (0, 0, 100),
        (1, 0, 100),
        (1, 100, 200),
        (1, 200, 300),
    ]


def test_max_offsets_per_trigger_spreads_over_the_partitions():
    start = {("t", 0): 0, ("t", 1): 0}
    end = {("t", 0): 30, ("t", 1): 10}
    assert rate_limit(start, end, 100) == end
    assert rate_limit(start, end, 20) == {("t", 0): 15, ("t", 1): 5}
    assert rate_limit(start, {("t", 0): 1000, ("t", 1): 1}, 10) == {("t", 0): 9, ("t", 1): 1}
