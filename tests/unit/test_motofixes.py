"""The emulator's transactions and queries cost what they touch, not the whole table, and still
answer as moto does (tidelog.local.motofixes).

moto's own rollback deep-copies the whole table once per operation (DESIGN.md §2: 14 ms on a
small table, 945 ms with 5,000 more items), and its key queries sort every item of the table.
These run moto's DynamoDB backend in-process, without a server: nothing here touches moto's
global state.
"""

from __future__ import annotations

import copy
import gc
import json
import os
import weakref
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moto import backends
from moto.core.responses import ActionContext
from moto.core.serialize import get_serializer_class
from moto.core.utils import get_service_model
from moto.dynamodb.exceptions import MultipleTransactionsException, TransactionCanceledException
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Item, Table
from moto.dynamodb.responses import DynamoResult
from moto.s3.models import S3Backend

from tidelog.local import motofixes


def _table(backend, name: str, sort_type: str) -> Table:
    backend.create_table(
        name,
        schema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        throughput=None,
        attr=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": sort_type},
        ],
        global_indexes=None,
        indexes=None,
        streams=None,
        billing_mode="PAY_PER_REQUEST",
        sse_specification=None,
        tags=[],
        deletion_protection_enabled=False,
        warm_throughput=None,
    )
    return backend.tables[name]


@pytest.fixture
def backend() -> DynamoDBBackend:
    motofixes.install()
    backend = DynamoDBBackend("us-east-1", "123456789012")
    _table(backend, "t", "S")
    for sk, n in (("b", "1"), ("c", "2")):
        backend.put_item("t", {"pk": {"S": "p"}, "sk": {"S": sk}, "n": {"N": n}})
    return backend


def key(sk: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": "p"}, "sk": {"S": sk}}


def state(backend: DynamoDBBackend) -> dict[str, object]:
    items = backend.tables["t"].items[DynamoType({"S": "p"})]
    return {str(sk.value): item.to_json()["Attributes"] for sk, item in items.items()}


def mixed_transaction(last_condition: str) -> list[dict[str, object]]:
    """A put of a new item, an in-place update, a delete, then a check on an absent item."""
    return [
        {"Put": {"TableName": "t", "Item": {**key("a"), "n": {"N": "0"}}}},
        {
            "Update": {
                "TableName": "t",
                "Key": key("b"),
                "UpdateExpression": "SET n = :n",
                "ExpressionAttributeValues": {":n": {"N": "10"}},
            }
        },
        {"Delete": {"TableName": "t", "Key": key("c")}},
        {
            "ConditionCheck": {
                "TableName": "t",
                "Key": key("d"),
                "ConditionExpression": last_condition,
            }
        },
    ]


def test_a_cancelled_transaction_leaves_every_item_as_it_was(backend):
    before = state(backend)
    with pytest.raises(TransactionCanceledException):
        backend.transact_write_items(mixed_transaction("attribute_exists(pk)"))
    assert state(backend) == before


def test_a_successful_transaction_applies_every_write(backend):
    backend.transact_write_items(mixed_transaction("attribute_not_exists(pk)"))
    assert state(backend) == {
        "a": {**key("a"), "n": {"N": "0"}},
        "b": {**key("b"), "n": {"N": "10"}},
    }


def test_naming_one_item_twice_is_refused_and_changes_nothing(backend):
    before = state(backend)
    twice = [
        {"Put": {"TableName": "t", "Item": {**key("b"), "n": {"N": "5"}}}},
        {"Delete": {"TableName": "t", "Key": key("b")}},
    ]
    with pytest.raises(MultipleTransactionsException):
        backend.transact_write_items(twice)
    assert state(backend) == before


class Uncopyable:
    def __deepcopy__(self, memo):
        raise AssertionError("the transaction copied an item it does not touch")


def test_items_the_transaction_does_not_name_are_never_copied(backend):
    table = backend.tables["t"]
    poisoned = Item(DynamoType({"S": "p"}), DynamoType({"S": "z"}), {**key("z")})
    poisoned.attrs["poison"] = Uncopyable()
    table.items[DynamoType({"S": "p"})][DynamoType({"S": "z"})] = poisoned
    with pytest.raises(AssertionError):
        copy.deepcopy(poisoned)  # the poison works: a whole-table copy would hit it

    backend.transact_write_items(mixed_transaction("attribute_not_exists(pk)"))
    with pytest.raises(TransactionCanceledException):
        backend.transact_write_items(mixed_transaction("attribute_exists(pk)"))
    assert table.items[DynamoType({"S": "p"})][DynamoType({"S": "z"})] is poisoned


def query(backend, sk_condition=None, values=(), *, forward=True, limit=None, original=False):
    table = backend.tables["t"]
    run = Table.query.__wrapped__ if original else Table.query
    items, _, _ = run(
        table,
        DynamoType({"S": "p"}),
        sk_condition,
        [DynamoType(v) for v in values],
        limit,
        None,
        forward,
        None,
    )
    return [item.to_json()["Attributes"] for item in items]


def test_key_queries_answer_what_moto_answers(backend):
    for i in range(30):
        backend.put_item("t", {"pk": {"S": "p"}, "sk": {"S": f"k{i:02d}"}, "n": {"N": str(i)}})
        backend.put_item("t", {"pk": {"S": f"other{i}"}, "sk": {"S": "x"}})
    shapes = [
        {},
        {"forward": False},
        {"limit": 5},
        {"sk_condition": "BEGINS_WITH", "values": [{"S": "k1"}]},
        {"sk_condition": "BETWEEN", "values": [{"S": "k05"}, {"S": "k12"}]},
        {"sk_condition": "LE", "values": [{"S": "k07"}], "forward": False, "limit": 3},
    ]
    for shape in shapes:
        assert query(backend, **shape) == query(backend, **shape, original=True), shape
    assert len(query(backend)) == 32  # b, c and k00-k29


_keys = st.one_of(
    st.tuples(st.just("S"), st.lists(st.text("ab#0", min_size=1, max_size=4), max_size=12)),
    st.tuples(
        st.just("N"),
        st.lists(st.integers(-50, 50).map(str), max_size=12),
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    _keys,
    st.sampled_from(["EQ", "LT", "LE", "GT", "GE", "BETWEEN", "BEGINS_WITH", None]),
    st.data(),
    st.booleans(),
    st.one_of(st.none(), st.integers(1, 4)),
)
def test_range_queries_answer_what_moto_answers(keys, comparison, data, forward, limit):
    """The bisected run of the partition changes no answer: every key condition, direction,
    limit and page start, on string and number sort keys, against moto's own path."""
    sort_type, values = keys
    backend = DynamoDBBackend("us-east-1", "123456789012")
    motofixes.install()
    table = _table(backend, "r", sort_type)
    for value in values:
        backend.put_item("r", {"pk": {"S": "p"}, "sk": {sort_type: value}})
        backend.put_item("r", {"pk": {"S": "q"}, "sk": {sort_type: value}})
    if sort_type == "N" and comparison == "BEGINS_WITH":
        comparison = "GE"  # DynamoDB takes begins_with on strings and binary only
    draw = st.text("ab#0", max_size=3) if sort_type == "S" else st.integers(-60, 60).map(str)
    bounds = sorted(
        data.draw(st.lists(draw, min_size=2, max_size=2)), key=lambda v: DynamoType({sort_type: v})
    )
    objs = [DynamoType({sort_type: v}) for v in (bounds if comparison == "BETWEEN" else bounds[:1])]
    start = None
    if values and data.draw(st.booleans()):
        start = {"pk": {"S": "p"}, "sk": {sort_type: data.draw(st.sampled_from(values))}}

    def run(query):
        items, _, last = query(
            table,
            DynamoType({"S": "p"}),
            comparison if objs else None,
            objs,
            limit,
            start,
            forward,
            None,
        )
        return [item.to_json()["Attributes"] for item in items], last

    assert run(Table.query) == run(Table.query.__wrapped__)


class Unsizable(Item):
    def size(self):
        raise AssertionError("the query sized an item its key condition excludes")


def test_a_range_query_sizes_only_the_run_its_condition_can_match(backend):
    table = backend.tables["t"]
    partition = table.items[DynamoType({"S": "p"})]
    for i in range(100):
        sk = DynamoType({"S": f"k{i:03d}"})
        cls = Item if i >= 96 else Unsizable
        partition[sk] = cls(DynamoType({"S": "p"}), sk, {**key(f"k{i:03d}")})
    with pytest.raises(AssertionError):
        query(backend, "GE", [{"S": "k097"}], original=True)  # moto's own path sizes them all
    assert [i["sk"]["S"] for i in query(backend, "GE", [{"S": "k097"}])] == ["k097", "k098", "k099"]


class Incomparable(DynamoType):
    def __eq__(self, other):
        raise AssertionError("the query compared a key of another partition")

    __lt__ = __gt__ = __eq__
    __hash__ = DynamoType.__hash__


def test_key_queries_never_read_other_partitions(backend):
    table = backend.tables["t"]
    stranger = Incomparable({"S": "q"})
    table.items[stranger] = {DynamoType({"S": "x"}): Item(stranger, DynamoType({"S": "x"}), {})}
    with pytest.raises(AssertionError):
        query(backend, original=True)  # the poison works: moto's own path meets it
    assert [item["sk"] for item in query(backend)] == [{"S": "b"}, {"S": "c"}]


def test_moto_keeps_no_item_it_has_overwritten_or_deleted(backend):
    table = backend.get_table("t")
    key = (DynamoType({"S": "p"}), DynamoType({"S": "b"}))
    first = weakref.ref(table.get_item(*key))
    backend.put_item("t", {"pk": {"S": "p"}, "sk": {"S": "b"}, "n": {"N": "9"}})
    second = weakref.ref(table.get_item(*key))
    backend.delete_item("t", {"pk": {"S": "p"}, "sk": {"S": "b"}})
    gc.collect()
    assert first() is None
    assert second() is None


def test_moto_keeps_no_s3_key_it_has_deleted():
    motofixes.install()
    s3 = S3Backend("us-east-1", "123456789012")
    s3.create_bucket("tidelog-test", "us-east-1")
    key = weakref.ref(s3.put_object("tidelog-test", "k", b"body"))
    s3.delete_object("tidelog-test", "k")
    gc.collect()
    assert key() is None


ITEM = {
    "pk": {"S": "log#t#0"},
    "sk": {"S": "idx#00000000000000000007"},
    "n": {"N": "42"},
    "blob": {"B": b"\x00\x01\xff"},
    "flag": {"BOOL": True},
    "none": {"NULL": True},
    "list": {"L": [{"S": "a"}, {"N": "1.5"}]},
    "map": {"M": {"k": {"S": "v"}, "b": {"B": b"xyz"}}},
    "strings": {"SS": ["a", "b"]},
}


@pytest.mark.parametrize(
    ("operation", "result"),
    [
        ("Query", {"Items": [ITEM, ITEM], "Count": 2, "ScannedCount": 2}),
        ("Query", {"Items": [ITEM], "Count": 1, "ScannedCount": 1, "LastEvaluatedKey": None}),
        ("GetItem", {"Item": ITEM}),
        ("GetItem", {}),
        ("BatchGetItem", {"Responses": {"t": [ITEM]}, "UnprocessedKeys": {}}),
        ("TransactWriteItems", {}),
        ("PutItem", {"ConsumedCapacity": {"TableName": "t", "CapacityUnits": Decimal("1.0")}}),
    ],
)
def test_data_plane_answers_are_written_as_moto_writes_them(operation, result):
    """The JSON fast path against moto's own serializer: the same answer, whatever the types."""
    motofixes.install()
    service = get_service_model("dynamodb")
    context = ActionContext(
        service, service.operation_model(operation), get_serializer_class("dynamodb", "json"), None
    )
    assert DynamoResult.execute_result is not motofixes.MOTO_EXECUTE_RESULT
    fast = DynamoResult(copy.deepcopy(result)).execute_result(context)
    slow = motofixes.MOTO_EXECUTE_RESULT(DynamoResult(copy.deepcopy(result)), context)
    assert fast[0] == slow[0] == 200
    assert json.loads(fast[2]) == json.loads(slow[2])


def test_the_services_are_listed_once_not_on_every_request(monkeypatch):
    """moto's dispatcher asks for its services on every request; after install the answer
    is the listing moto made, without touching the disk again."""
    motofixes.install()
    listed = set(backends.list_of_moto_modules())
    assert {"s3", "dynamodb", "stepfunctions", "awslambda"} <= listed

    def no_disk(path):
        raise AssertionError(f"listed {path} again")

    monkeypatch.setattr(os, "listdir", no_disk)
    assert set(backends.list_of_moto_modules()) == listed
