"""The metadata store contract, held by the in-memory fake, DynamoDB on moto and DynamoDB Local."""

from __future__ import annotations

import pytest

from tidelog.storage import (
    AttrAbsent,
    Check,
    Compare,
    ConditionFailedError,
    Delete,
    InvalidStorageRequestError,
    ItemAbsent,
    ItemExists,
    Put,
    all_of,
    any_of,
)

EVERY_TYPE = {
    "pk": "p",
    "sk": "s",
    "text": "héllo ✓",
    "zero": 0,
    "big": 2**63 - 1,
    "negative": -(2**63),
    "raw": bytes(range(256)),
    "yes": True,
    "no": False,
    "nothing": None,
    "many": [1, "two", b"\x03", None, [4]],
    "nested": {"a": 1, "b": {"c": b"d"}},
}


def test_put_then_get_round_trips_every_type(meta):
    meta.write(Put(EVERY_TYPE))
    assert meta.get("p", "s") == EVERY_TYPE


def test_get_missing_is_none(meta):
    assert meta.get("p", "missing") is None


def test_get_many_reads_what_exists_past_one_batch(meta):
    for i in range(0, 250, 2):
        meta.write(Put({"pk": f"p{i % 3}", "sk": f"s{i:03d}", "n": i}))
    keys = [(f"p{i % 3}", f"s{i:03d}") for i in range(250)]  # 250 keys: three batches
    found = meta.get_many(keys + keys[:5])  # a key named twice is read once
    assert set(found) == {k for i, k in enumerate(keys) if i % 2 == 0}
    assert found[("p1", "s004")]["n"] == 4
    assert meta.get_many([]) == {}


def test_put_replaces_the_whole_item(meta):
    meta.write(Put({"pk": "p", "sk": "s", "a": 1, "b": 2}))
    meta.write(Put({"pk": "p", "sk": "s", "a": 3}))
    assert meta.get("p", "s") == {"pk": "p", "sk": "s", "a": 3}


def test_create_only_put_reports_the_item_that_won(meta):
    meta.write(Put({"pk": "p", "sk": "s", "owner": "first"}, ItemAbsent()))
    with pytest.raises(ConditionFailedError) as failure:
        meta.write(Put({"pk": "p", "sk": "s", "owner": "second"}, ItemAbsent()))
    assert failure.value.failed == (0,)
    assert failure.value.current[0] == {"pk": "p", "sk": "s", "owner": "first"}
    assert meta.get("p", "s")["owner"] == "first"


STORED = {"pk": "p", "sk": "s", "n": 5, "name": "m"}


@pytest.mark.parametrize(
    ("condition", "holds"),
    [
        (ItemExists(), True),
        (ItemAbsent(), False),
        (AttrAbsent("n"), False),
        (AttrAbsent("other"), True),
        (Compare("n", "=", 5), True),
        (Compare("n", "=", 6), False),
        (Compare("n", "<>", 5), False),
        (Compare("n", "<>", 6), True),
        (Compare("n", "<", 6), True),
        (Compare("n", "<", 5), False),
        (Compare("n", "<=", 5), True),
        (Compare("n", ">", 4), True),
        (Compare("n", ">", 5), False),
        (Compare("n", ">=", 5), True),
        (Compare("name", "<", "n"), True),
        (Compare("name", ">", "n"), False),
        (Compare("missing", "=", 5), False),
        (Compare("missing", "<", 5), False),
        (Compare("missing", "<>", 5), True),
        (Compare("n", "=", "5"), False),  # another type never equals
        (all_of(Compare("n", "=", 5), Compare("name", "=", "m")), True),
        (all_of(Compare("n", "=", 5), Compare("name", "=", "x")), False),
        (any_of(Compare("n", "=", 6), Compare("name", "=", "m")), True),
        (any_of(AttrAbsent("n"), Compare("n", "<", 5)), False),
        (any_of(AttrAbsent("x"), Compare("n", "<", 5)), True),
    ],
)
def test_conditions_on_a_stored_item(meta, condition, holds):
    meta.write(Put(STORED))
    update = {**STORED, "n": 99}
    if holds:
        meta.write(Put(update, condition))
        assert meta.get("p", "s")["n"] == 99
    else:
        with pytest.raises(ConditionFailedError):
            meta.write(Put(update, condition))
        assert meta.get("p", "s") == STORED


@pytest.mark.parametrize(
    ("condition", "holds"),
    [
        (ItemAbsent(), True),
        (ItemExists(), False),
        (AttrAbsent("n"), True),
        (Compare("n", "=", 5), False),
        (Compare("n", "<>", 5), True),
    ],
)
def test_conditions_on_an_absent_item(meta, condition, holds):
    item = {"pk": "p", "sk": "new"}
    if holds:
        meta.write(Put(item, condition))
        assert meta.get("p", "new") == item
    else:
        with pytest.raises(ConditionFailedError) as failure:
            meta.write(Put(item, condition))
        assert failure.value.current[0] is None
        assert meta.get("p", "new") is None


def test_conditional_delete(meta):
    meta.write(Put(STORED))
    with pytest.raises(ConditionFailedError):
        meta.write(Delete("p", "s", Compare("n", "=", 4)))
    assert meta.get("p", "s") == STORED
    meta.write(Delete("p", "s", Compare("n", "=", 5)))
    assert meta.get("p", "s") is None
    meta.write(Delete("p", "s"))  # deleting nothing is fine


def test_transaction_applies_every_write(meta):
    meta.write(Put({"pk": "p", "sk": "gone"}))
    meta.write(Put({"pk": "p", "sk": "head", "next": 10}))
    meta.write(Put({"pk": "p", "sk": "fence", "epoch": 1}))
    meta.transact(
        [
            Put({"pk": "p", "sk": "head", "next": 13}, Compare("next", "=", 10)),
            Put({"pk": "p", "sk": "idx#10", "count": 3}, ItemAbsent()),
            Delete("p", "gone"),
            Check("p", "fence", Compare("epoch", "=", 1)),
        ]
    )
    assert meta.get("p", "head")["next"] == 13
    assert meta.get("p", "idx#10") == {"pk": "p", "sk": "idx#10", "count": 3}
    assert meta.get("p", "gone") is None


def test_transaction_is_all_or_nothing_and_names_what_failed(meta):
    meta.write(Put({"pk": "p", "sk": "head", "next": 10}))
    meta.write(Put({"pk": "p", "sk": "fence", "epoch": 2}))
    with pytest.raises(ConditionFailedError) as failure:
        meta.transact(
            [
                Put({"pk": "p", "sk": "head", "next": 13}, Compare("next", "=", 10)),
                Put({"pk": "p", "sk": "idx#10", "count": 3}, ItemAbsent()),
                Check("p", "fence", Compare("epoch", "=", 1)),
            ]
        )
    assert failure.value.failed == (2,)
    assert failure.value.current[2] == {"pk": "p", "sk": "fence", "epoch": 2}
    assert meta.get("p", "head")["next"] == 10
    assert meta.get("p", "idx#10") is None


def test_transaction_limits_are_enforced_before_sending(meta):
    too_many = [Put({"pk": "p", "sk": f"{i:03d}"}) for i in range(101)]
    with pytest.raises(InvalidStorageRequestError, match="at most 100"):
        meta.transact(too_many)
    with pytest.raises(InvalidStorageRequestError, match="twice"):
        meta.transact([Put({"pk": "p", "sk": "a"}), Check("p", "a", ItemAbsent())])
    with pytest.raises(InvalidStorageRequestError):
        meta.transact([])
    assert list(meta.query("p")) == []


def test_a_full_transaction_of_a_hundred_writes(meta):
    meta.transact([Put({"pk": "p", "sk": f"{i:03d}", "i": i}, ItemAbsent()) for i in range(100)])
    assert [item["i"] for item in meta.query("p")] == list(range(100))


def test_items_over_400_kib_are_refused_and_change_nothing(meta):
    with pytest.raises(InvalidStorageRequestError, match=r"400|limit"):
        meta.write(Put({"pk": "p", "sk": "big", "blob": b"x" * (400 * 1024)}))
    assert meta.get("p", "big") is None


def test_items_need_string_keys(meta):
    with pytest.raises(InvalidStorageRequestError):
        meta.write(Put({"pk": "p"}))
    with pytest.raises(InvalidStorageRequestError):
        meta.write(Put({"pk": "p", "sk": 1}))


@pytest.fixture
def ladder(meta):
    for i in range(10):
        meta.write(Put({"pk": "q", "sk": f"idx#{i:020d}", "i": i}))
    meta.write(Put({"pk": "q", "sk": "other", "i": -1}))
    meta.write(Put({"pk": "elsewhere", "sk": "idx#0", "i": -2}))
    return meta


def key(i):
    return f"idx#{i:020d}"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"prefix": "idx#"}, list(range(10))),
        ({}, [*range(10), -1]),
        ({"lo": key(3), "hi": key(6)}, [3, 4, 5, 6]),
        ({"lo": key(8)}, [8, 9, -1]),
        ({"hi": key(1)}, [0, 1]),
        ({"prefix": "idx#", "descending": True, "limit": 3}, [9, 8, 7]),
        # Kafka's index lookup: the greatest entry at or below a target.
        ({"lo": "idx#", "hi": key(4) + "~", "descending": True, "limit": 1}, [4]),
        ({"prefix": "nothing"}, []),
    ],
)
def test_query(ladder, arguments, expected):
    assert [item["i"] for item in ladder.query("q", **arguments)] == expected


def test_query_refuses_prefix_with_bounds(meta):
    with pytest.raises(InvalidStorageRequestError):
        list(meta.query("q", prefix="a", lo="b"))


def test_query_pages_through_more_than_a_megabyte(meta):
    blob = b"x" * (100 * 1024)
    for i in range(15):  # 1.5 MB: DynamoDB answers in 1 MB pages
        meta.write(Put({"pk": "big", "sk": f"{i:02d}", "blob": blob}))
    assert [item["sk"] for item in meta.query("big")] == [f"{i:02d}" for i in range(15)]
    assert len(list(meta.query("big", limit=12))) == 12
