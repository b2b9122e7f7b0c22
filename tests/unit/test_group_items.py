"""A classic group's assignment item: what it stores, and that it reads back what was written,
and what items written before it read."""

from __future__ import annotations

import json

from boto3.dynamodb.types import TypeSerializer
from hypothesis import given
from hypothesis import strategies as st

from tidelog.assignors import TopicPartition
from tidelog.groups import items
from tidelog.groups.model import Assignment

topics = st.sampled_from(["orders", "payments", "a.b-c_d", "t" * 249])
partitions = st.lists(
    st.builds(TopicPartition, topics, st.integers(min_value=0, max_value=99_999)), unique=True
).map(lambda tps: tuple(sorted(tps)))  # as every assignor hands them out (sorted_assignment)
assignments = st.builds(
    Assignment,
    generation=st.integers(min_value=1, max_value=2**31 - 1),
    protocol=st.sampled_from([None, "range", "roundrobin", "cooperative-sticky"]),
    members=st.dictionaries(st.text(min_size=1, max_size=40), partitions, max_size=8),
    partitions=st.dictionaries(topics, st.integers(min_value=1, max_value=100_000), max_size=4),
)


@given(assignments)
def test_an_assignment_reads_back_as_written(assignment):
    assert items.assignment_from_item(items.assignment_item("g", assignment)) == assignment


def test_each_member_keeps_a_string_of_partitions_a_topic():
    assignment = Assignment(
        generation=3,
        protocol="range",
        members={
            "m1": (TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 7)),
            "m2": (),
        },
        partitions={"a": 2, "b": 8},
    )
    item = items.assignment_item("g", assignment)
    assert item["members"] == {"m1": {"a": "0,1", "b": "7"}, "m2": {}}


def test_an_item_written_before_reads_as_it_did():
    """Items written as ``[[topic, partition], ...]`` lists, before the strings."""
    earlier = {
        "pk": "group#g",
        "sk": "assignment",
        "generation": 4,
        "protocol": "roundrobin",
        "members": {"m1": [["a", 0], ["b", 2]], "m2": []},
        "partitions": {"a": 1, "b": 3},
    }
    assert items.assignment_from_item(earlier) == Assignment(
        generation=4,
        protocol="roundrobin",
        members={"m1": (TopicPartition("a", 0), TopicPartition("b", 2)), "m2": ()},
        partitions={"a": 1, "b": 3},
    )


def test_a_big_groups_item_is_under_half_what_pairs_took():
    """On the wire, where botocore parses every value of it (DynamoDB counts its read units by
    size too)."""
    members = {
        f"member-{m:032x}": tuple(TopicPartition("big-topic", p) for p in range(m * 6, m * 6 + 6))
        for m in range(100)
    }
    item = items.assignment_item("g", Assignment(1, "range", members, {"big-topic": 600}))
    pairs = {m: [[t, p] for t, p in tps] for m, tps in members.items()}
    assert _wire(item) * 2 < _wire({**item, "members": pairs})


def _wire(item):
    return len(json.dumps({k: TypeSerializer().serialize(v) for k, v in item.items()}))


def test_a_members_topics_read_sorted_in_whatever_order_the_table_gives_them():
    item = {"generation": 1, "members": {"m": {"b": "7", "a": "3,0"}}, "partitions": {}}
    assigned = items.assignment_from_item(item).of("m")
    assert assigned == (TopicPartition("a", 0), TopicPartition("a", 3), TopicPartition("b", 7))
