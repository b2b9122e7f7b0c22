"""The agent's authorizer over stored ACLs (tidelog.kafka.authorizer, tidelog.acl_store): what
it caches and for how long, and the ACL APIs that change what it reads (tidelog.kafka.access),
each against Kafka's answers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from tests.unit.test_acls import ACLS, NAMES

from tidelog.acl_store import AclStore
from tidelog.acls import (
    Acl,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    authorize,
    authorize_by_type,
)
from tidelog.kafka import access
from tidelog.kafka.apis import ApiKey
from tidelog.kafka.authorizer import Access, Authorizer, AuthorizerSettings, parse_super_users
from tidelog.kafka.codec import Request, build, code, encode_response_as
from tidelog.storage.memory import MemoryMetadataStore

TOPIC, CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER
ALICE = "User:alice"


def read(name="clicks", pattern=PatternType.LITERAL, permission=Permission.ALLOW, host="*"):
    return Acl(TOPIC, name, pattern, ALICE, host, Operation.READ, permission)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class CountingStore(AclStore):
    def __init__(self) -> None:
        super().__init__(MemoryMetadataStore())
        self.reads = 0

    def all(self) -> list[Acl]:
        self.reads += 1
        return super().all()


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store():
    return CountingStore()


@pytest.fixture
def authorizer(store, clock):
    return Authorizer(AuthorizerSettings(cache_s=5.0), store, clock)


def test_acls_round_trip_through_the_table_and_adding_twice_keeps_one():
    store = AclStore(MemoryMetadataStore())
    odd = Acl(
        TOPIC,
        "a#b:c/" + "x" * 2000,
        PatternType.PREFIXED,
        "User:*",
        "10.0.0.7",
        Operation.ALL,
        Permission.DENY,
    )
    store.add([read(), odd, read()])
    assert store.all() == sorted([read(), odd])
    store.remove([read()])
    assert store.all() == [odd]


def test_decisions_come_from_a_snapshot_read_once_per_cache_period(authorizer, store, clock):
    assert not authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")
    store.add([read()])
    assert not authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")  # cached
    clock.now = 4.9
    assert not authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "views")
    assert store.reads == 1
    clock.now = 5.0
    assert authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")
    assert store.reads == 2


def test_a_revoked_acl_stops_working_within_the_cache_period(authorizer, store, clock):
    store.add([read()])
    assert authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")
    store.remove([read()])
    clock.now = 5.0
    assert not authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")


def test_this_agents_own_changes_apply_at_once(authorizer, store):
    assert not authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")
    store.add([read()])
    authorizer.invalidate()
    assert authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")


def test_a_snapshot_that_cannot_be_refreshed_is_not_served_stale(authorizer, store, clock):
    store.add([read()])
    assert authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")

    def unavailable():
        raise ConnectionError("table unavailable")

    store.all = unavailable
    clock.now = 5.0
    with pytest.raises(ConnectionError):
        authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")


def test_super_users_are_kafkas_semicolon_list():
    assert parse_super_users("User:admin; User:ops;") == {"User:admin", "User:ops"}
    with pytest.raises(ValueError, match="admin is not a principal"):
        parse_super_users("User:ops;admin")


def test_the_caller_is_its_principal_and_its_bare_address(authorizer, store):
    store.add([read(host="10.0.0.7")])
    request = Request(ApiKey.FETCH, 12, 1, "c", None, "/10.0.0.7", principal=ALICE)
    assert Access(authorizer, request).allows(Operation.READ, TOPIC, "clicks")
    elsewhere = Request(ApiKey.FETCH, 12, 1, "c", None, "/10.0.0.8", principal=ALICE)
    assert not Access(authorizer, elsewhere).allows(Operation.READ, TOPIC, "clicks")


def test_authorized_operations_are_kafkas_bit_field(authorizer, store):
    store.add([read()])
    request = Request(ApiKey.METADATA, 12, 1, "c", None, "/h", principal=ALICE)
    # READ (3) implies DESCRIBE (8): bits 3 and 8.
    assert Access(authorizer, request).operations(TOPIC, "clicks") == (1 << 3) | (1 << 8)


# The ACL APIs -----------------------------------------------------------------------------


def _request(api: ApiKey, body: dict, version: int = 3) -> Request:
    entity = build(load_request_schema(api, version), body)
    return Request(api, version, 1, "c", entity, "/h", principal="User:admin")


def creation(**changes):
    return {
        "resource_type": 2,
        "resource_name": "clicks",
        "resource_pattern_type": 3,
        "principal": ALICE,
        "host": "*",
        "operation": 3,
        "permission_type": 3,
        **changes,
    }


def acl_filter(**changes):
    return {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
        **changes,
    }


def test_create_acls_stores_the_valid_and_refuses_the_rest_each_with_kafkas_reason(
    authorizer, store
):
    bad_cluster = creation(resource_type=4, resource_name="other")
    answer = access.create_acls(
        _request(
            ApiKey.CREATE_ACLS, {"creations": [creation(), bad_cluster, creation(operation=0)]}
        ),
        authorizer,
    )
    encode_response_as(ApiKey.CREATE_ACLS, 3, 1, answer)
    codes = [r["error_code"] for r in answer["results"]]
    assert codes == [0, code("INVALID_REQUEST"), code("INVALID_REQUEST")]
    assert "kafka-cluster" in answer["results"][1]["error_message"]
    assert store.all() == [read()]
    assert authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")  # at once, here


def test_describe_acls_filters_and_groups_by_resource(authorizer, store):
    store.add([read(), read(permission=Permission.DENY), read("views")])
    answer = access.describe_acls(
        _request(ApiKey.DESCRIBE_ACLS, acl_filter(resource_name_filter="clicks")), authorizer
    )
    encode_response_as(ApiKey.DESCRIBE_ACLS, 3, 1, answer)
    (resource,) = answer["resources"]
    assert resource["resource_name"] == "clicks"
    assert sorted(a["permission_type"] for a in resource["acls"]) == [2, 3]
    unknown = access.describe_acls(
        _request(ApiKey.DESCRIBE_ACLS, acl_filter(operation=0)), authorizer
    )
    assert unknown["error_code"] == code("INVALID_REQUEST")


def test_delete_acls_lists_what_each_filter_matched_and_deletes_it(authorizer, store):
    store.add([read(), read("views"), read("click", PatternType.PREFIXED)])
    assert authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")
    answer = access.delete_acls(
        _request(
            ApiKey.DELETE_ACLS,
            {"filters": [acl_filter(resource_name_filter="clicks", pattern_type_filter=2)]},
        ),
        authorizer,
    )
    encode_response_as(ApiKey.DELETE_ACLS, 3, 1, answer)
    (result,) = answer["filter_results"]
    # MATCH: the literal and the prefix that apply to "clicks", not "views".
    assert sorted(m["resource_name"] for m in result["matching_acls"]) == ["click", "clicks"]
    assert store.all() == [read("views")]
    assert not authorizer.current().allows(ALICE, "h", Operation.READ, TOPIC, "clicks")


def test_without_an_authorizer_the_acl_apis_are_security_disabled():
    answer = access.create_acls(_request(ApiKey.CREATE_ACLS, {"creations": [creation()]}), None)
    assert answer["results"][0]["error_code"] == code("SECURITY_DISABLED")


@settings(max_examples=300, deadline=None)
@given(
    acls=ACLS,
    who=st.sampled_from(["User:alice", "User:bob"]),
    operation=st.sampled_from([Operation.READ, Operation.WRITE, Operation.DESCRIBE]),
    resource_type=st.sampled_from([TOPIC, ResourceType.GROUP]),
    name=NAMES.filter(lambda n: n not in ("", "*")),
    allow_if_no_acl=st.booleans(),
)
def test_the_indexed_snapshot_decides_as_a_scan_of_every_acl(
    acls, who, operation, resource_type, name, allow_if_no_acl
):
    store = AclStore(MemoryMetadataStore())
    if acls:
        store.add(acls)
    settings_ = AuthorizerSettings(allow_everyone_if_no_acl_found=allow_if_no_acl)
    indexed = Authorizer(settings_, store)
    kw = {"principal": who, "host": "10.0.0.1", "operation": operation}
    assert indexed.current().allows(who, "10.0.0.1", operation, resource_type, name) == authorize(
        acls, **kw, resource_type=resource_type, name=name, allow_if_no_acl=allow_if_no_acl
    )
    assert indexed.current().allows_any(
        who, "10.0.0.1", operation, resource_type
    ) == authorize_by_type(acls, **kw, resource_type=resource_type, allow_if_no_acl=allow_if_no_acl)
