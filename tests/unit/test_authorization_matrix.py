"""The authorization matrix: every API the agent serves, for every need in its rule
(tidelog.kafka.needs.RULES), allowed, denied and without an ACL, through its gate
(tidelog.kafka.authorization) in front of a stand-in handler.

Each request names one resource, ``res``, of every type at once (its topic, group and
transactional id), built from Kafka's schema with one element in every array. The caller is
given every other need of the API, then:

- allowed: the handler answers, and no authorization error is in the answer;
- denied (an ALLOW and a DENY) and without an ACL for the need: Kafka's error is in the answer
  (or, for a listing, the resource is left out of it), and the handler never saw the request
  as it came.

Every answer is encoded at the request's version, so a refusal lacking a field Kafka's answer
has fails here. A second, hand-written set checks Kafka's known cases without the table.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.serial._introspect import (
    EntityField,
    classify_field,
)
from kio.static.primitive import Records
from tests.support.entities import one_of_everything

from tidelog import runtime
from tidelog.acl_store import AclStore
from tidelog.acls import CLUSTER_NAME, Acl, Operation, PatternType, Permission, ResourceType
from tidelog.kafka import authorization
from tidelog.kafka.apis import API_VERSIONS, LEGACY_PRODUCE, ApiKey
from tidelog.kafka.authorizer import Access, Authorizer, AuthorizerSettings
from tidelog.kafka.codec import NONE, Answer, Request, code, encode_response_as
from tidelog.kafka.needs import (
    ALTERNATIVES,
    CLUSTER_IDEMPOTENT_WRITE,
    GROUP_DESCRIBE,
    RULES,
    TOPIC_CREATE,
    TOPIC_DESCRIBE,
    TOPIC_DESCRIBE_CONFIGS,
    TXN_DESCRIBE,
    Need,
)
from tidelog.log.topics import UnknownTopicError, UnknownTopicIdError
from tidelog.storage.memory import MemoryMetadataStore

RES = "res"
SUBJECT = "User:subject"
AUTH_ERRORS = {code(n) for n in ("TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED")} | {
    code("TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    code("CLUSTER_AUTHORIZATION_FAILED"),
}
# Versions that name topics by name (the newest name them by id, which the handler resolves).
VERSIONS = {ApiKey.PRODUCE: 12, ApiKey.FETCH: 12}
# Listings leave out what the caller may not describe, rather than answering an error: what
# each lists.
HIDDEN: dict[tuple[ApiKey, Need], Callable[[Answer], list[str]]] = {
    (ApiKey.LIST_GROUPS, GROUP_DESCRIBE): lambda a: [g["group_id"] for g in a["groups"]],
    (ApiKey.LIST_TRANSACTIONS, TXN_DESCRIBE): lambda a: [
        s["transactional_id"] for s in a["transaction_states"]
    ],
    (ApiKey.DESCRIBE_TRANSACTIONS, TOPIC_DESCRIBE): lambda a: [
        t["topic"] for s in a["transaction_states"] for t in s["topics"]
    ],
}
# Done all the same, and only what the need guards is left out of the answer: a topic created by
# a caller who may not describe its configs is answered without them.
ANSWERED_WITHOUT = {(ApiKey.CREATE_TOPICS, TOPIC_DESCRIBE_CONFIGS)}
CONFIG_TYPES = {ResourceType.TOPIC: 2, ResourceType.CLUSTER: 4, ResourceType.GROUP: 32}
CASES = [
    pytest.param(api, need, id=f"{api.name}-{need.operation.name}-{need.resource_type.name}")
    for api, needs in RULES.items()
    for need in needs
]


def test_every_served_api_has_a_rule():
    assert set(RULES) == set(API_VERSIONS)


def test_the_matrix_covers_every_need():
    assert len(CASES) == sum(len(needs) for needs in RULES.values()) > 60


# Requests ---------------------------------------------------------------------------------


def _tweaked(api: ApiKey, need: Need, body: Any) -> Any:
    """The body the need is asked of: a coordinator key of its type, a config resource of
    its type, an idempotent producer without a transactional id, a topic to create."""
    if api == ApiKey.FIND_COORDINATOR:
        return dataclasses.replace(body, key_type=0 if need == GROUP_DESCRIBE else 1)
    if api in (ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        kind = CONFIG_TYPES[need.resource_type]
        resources = tuple(dataclasses.replace(r, resource_type=kind) for r in body.resources)
        return dataclasses.replace(body, resources=resources)
    if api == ApiKey.INIT_PRODUCER_ID and need == CLUSTER_IDEMPOTENT_WRITE:
        return dataclasses.replace(body, transactional_id=None)
    if api == ApiKey.METADATA:
        return dataclasses.replace(body, allow_auto_topic_creation=need == TOPIC_CREATE)
    return body


def request_for(api: ApiKey, need: Need) -> Request:
    version = VERSIONS.get(api, API_VERSIONS[api][1])
    body = _tweaked(api, need, one_of_everything(load_request_schema(api, version), RES))
    return Request(api, version, 1, "matrix", body, "/10.0.0.7", principal=SUBJECT)


# The stand-in handler ---------------------------------------------------------------------


def _listed(request: Request) -> Answer:
    """What a handler answers, for the APIs whose gates read the answer; the others' gates
    only add to it, and an answer of schema defaults serves."""
    body = request.body
    api = request.api_key
    if api in (ApiKey.METADATA, ApiKey.DESCRIBE_TOPIC_PARTITIONS):
        names = [str(t.name) for t in body.topics or ()] or [RES]
        topics = [
            {
                "error_code": NONE,
                "name": n,
                "topic_id": uuid.UUID(int=7),
                "is_internal": False,
                "partitions": [],
            }
            for n in names
        ]
        return {
            **_defaults(load_response_schema(api, request.api_version)),
            "topics": topics,
            "next_cursor": None,
        }
    if api == ApiKey.LIST_GROUPS:
        group = {
            "group_id": RES,
            "protocol_type": "consumer",
            "group_state": "Empty",
            "group_type": "classic",
        }
        return {"throttle_time": 0, "error_code": NONE, "groups": [group]}
    if api == ApiKey.LIST_TRANSACTIONS:
        state = {"transactional_id": RES, "producer_id": 1, "transaction_state": "Ongoing"}
        return {"throttle_time": 0, "error_code": NONE, "transaction_states": [state]}
    if api == ApiKey.DESCRIBE_TRANSACTIONS:
        return {
            "throttle_time": 0,
            "transaction_states": [
                {
                    "error_code": NONE,
                    "transactional_id": str(t),
                    "transaction_state": "Ongoing",
                    "transaction_timeout": 1,
                    "transaction_start_time": 1,
                    "producer_id": 1,
                    "producer_epoch": 1,
                    "topics": [{"topic": RES, "partitions": [0]}],
                }
                for t in body.transactional_ids or ()
            ],
        }
    if api == ApiKey.OFFSET_FETCH:
        every = [{"name": RES, "partitions": []}]  # the group's offsets, when all are asked
        groups = [
            {
                "group_id": str(g.group_id),
                "topics": every if g.topics is None else [],
                "error_code": NONE,
            }
            for g in (body.groups if hasattr(body, "groups") else [body])
        ]
        return {"throttle_time": 0, **groups[0], "groups": groups} if groups else {"groups": []}
    if api in (ApiKey.DESCRIBE_GROUPS, ApiKey.CONSUMER_GROUP_DESCRIBE):
        names = (body.groups if api == ApiKey.DESCRIBE_GROUPS else body.group_ids) or ()
        return {
            "throttle_time": 0,
            "groups": [
                {
                    "error_code": NONE,
                    "error_message": None,
                    "group_id": str(n),
                    "group_state": "Empty",
                    "protocol_type": "consumer",
                    "protocol_data": "",
                    "group_epoch": 1,
                    "assignment_epoch": 1,
                    "assignor_name": "uniform",
                    "members": [],
                }
                for n in names
            ],
        }
    if api == ApiKey.CREATE_TOPICS:
        return {
            "throttle_time": 0,
            "topics": [
                {
                    "name": str(t.name),
                    "topic_id": uuid.UUID(int=7),
                    "error_code": NONE,
                    "error_message": None,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": [],
                }
                for t in body.topics or ()
            ],
        }
    if api == ApiKey.PRODUCE and request.api_version in LEGACY_PRODUCE:
        return {"throttle_time": 0, "responses": []}
    return _defaults(load_response_schema(api, request.api_version))


def _defaults(schema: type) -> Answer:
    answer: Answer = {}
    for f in dataclasses.fields(schema):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        kind = classify_field(f)
        if kind.is_array:
            answer[f.name] = []
        elif isinstance(kind, EntityField):
            answer[f.name] = _defaults(kind.type_)
        else:
            answer[f.name] = _zero(f.metadata["kafka_type"])
    return answer


def _zero(kafka_type: str) -> Any:
    zeros = {"string": "", "bytes": b"", "records": b"", "bool": False, "uuid": uuid.UUID(int=0)}
    return zeros.get(kafka_type, 0)


class Handler:
    def __init__(self) -> None:
        self.seen: list[Request] = []

    def __call__(self, request: Request) -> Answer:
        self.seen.append(request)
        return _listed(request)


# The matrix -------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_topics(monkeypatch):
    """No topic exists: Metadata's auto-creation asks for CREATE."""

    class Nothing:
        def get(self, name, partition=None):
            raise UnknownTopicError(f"no topic {name}")

        def by_id(self, topic_id):
            raise UnknownTopicIdError(f"no topic {topic_id}")

    monkeypatch.setattr(runtime, "topic_cache", Nothing)


def grant(need: Need, permission: Permission = Permission.ALLOW) -> Acl:
    name = CLUSTER_NAME if need.resource_type == ResourceType.CLUSTER else RES
    return Acl(
        need.resource_type,
        name,
        PatternType.LITERAL,
        SUBJECT,
        "*",
        need.operation,
        permission,
    )


def answer(request: Request, acls: list[Acl], **settings: Any) -> tuple[Answer, Handler]:
    store = AclStore(MemoryMetadataStore())
    if acls:
        store.add(acls)
    authorizer = Authorizer(AuthorizerSettings(**settings), store)
    handler = Handler()
    result = authorization.authorize(request, Access(authorizer, request), handler)
    encode_response_as(request.api_key, request.api_version, 1, result)  # Kafka's shape
    return result, handler


def errors(value: Any) -> set[int]:
    found: set[int] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if key.endswith("error_code") and isinstance(inner, int):
                found.add(inner)
            found |= errors(inner)
    elif isinstance(value, list):
        for inner in value:
            found |= errors(inner)
    return found


def mentions(value: Any, name: str) -> bool:
    if isinstance(value, dict):
        return any(mentions(v, name) for v in value.values())
    if isinstance(value, list):
        return any(mentions(v, name) for v in value)
    return value == name


def others(api: ApiKey, need: Need) -> list[Acl]:
    return [grant(other) for other in RULES[api] if other != need]


def assert_allowed(api: ApiKey, need: Need, result: Answer, handler: Handler) -> None:
    assert handler.seen, "the handler was not called"
    assert not errors(result) & AUTH_ERRORS
    if (api, need) in HIDDEN:
        assert HIDDEN[api, need](result) == [RES]


def assert_refused(api: ApiKey, need: Need, request: Request, result: Answer, handler: Handler):
    if (api, need) in HIDDEN:
        assert HIDDEN[api, need](result) == []
        return
    assert code(need.error) in errors(result)
    if (api, need) in ANSWERED_WITHOUT:
        assert handler.seen == [request]
    else:
        assert request not in handler.seen, "the handler saw the refused request whole"


@pytest.mark.parametrize(("api", "need"), CASES)
def test_allowed(api, need):
    request = request_for(api, need)
    result, handler = answer(request, [*others(api, need), grant(need)])
    assert_allowed(api, need, result, handler)


@pytest.mark.parametrize(("api", "need"), CASES)
def test_denied_even_where_also_allowed(api, need):
    request = request_for(api, need)
    acls = [*others(api, need), grant(need), grant(need, Permission.DENY)]
    result, handler = answer(request, acls)
    assert_refused(api, need, request, result, handler)


@pytest.mark.parametrize(("api", "need"), CASES)
def test_refused_without_an_acl_for_it(api, need):
    request = request_for(api, need)
    result, handler = answer(request, others(api, need))
    assert_refused(api, need, request, result, handler)


@pytest.mark.parametrize(("api", "need"), CASES)
def test_open_to_all_with_no_acls_when_allow_everyone_if_no_acl_found(api, need):
    result, handler = answer(request_for(api, need), [], allow_everyone_if_no_acl_found=True)
    assert_allowed(api, need, result, handler)


@pytest.mark.parametrize(("api", "need"), CASES)
def test_super_users_are_never_refused(api, need):
    acls = [grant(need, Permission.DENY)]
    result, handler = answer(request_for(api, need), acls, super_users=frozenset({SUBJECT}))
    assert_allowed(api, need, result, handler)


@pytest.mark.parametrize(
    ("api", "need"),
    [pytest.param(a, n, id=f"{a.name}-{n.resource_type.name}") for a, n in ALTERNATIVES],
)
def test_an_alternative_kafka_accepts_stands_for_the_need(api, need):
    request = request_for(api, need)
    result, handler = answer(request, [*others(api, need), grant(ALTERNATIVES[api, need])])
    assert_allowed(api, need, result, handler)


# Kafka's known cases, without the table ---------------------------------------------------

Rt, Op = ResourceType, Operation


def acl(
    rt: ResourceType,
    name: str,
    op: Operation,
    permission=Permission.ALLOW,
    pattern=PatternType.LITERAL,
) -> Acl:
    return Acl(rt, name, pattern, SUBJECT, "*", op, permission)


def ask(api: ApiKey, acls: list[Acl], tweak: Callable[[Any], Any] = lambda b: b) -> Answer:
    version = VERSIONS.get(api, API_VERSIONS[api][1])
    body = tweak(one_of_everything(load_request_schema(api, version), RES))
    request = Request(api, version, 1, "kafka", body, "/10.0.0.7", principal=SUBJECT)
    return answer(request, acls)[0]


def partition_errors(result: Answer, topics: str, partitions: str) -> list[int]:
    return [p["error_code"] for t in result[topics] for p in t[partitions]]


def test_producing_needs_write_on_the_topic_and_read_is_not_enough():
    txn = acl(Rt.TRANSACTIONAL_ID, RES, Op.WRITE)
    ok = ask(ApiKey.PRODUCE, [txn, acl(Rt.TOPIC, RES, Op.WRITE)])
    refused = ask(ApiKey.PRODUCE, [txn, acl(Rt.TOPIC, RES, Op.READ)])
    assert partition_errors(ok, "responses", "partition_responses") == []  # the handler's
    assert partition_errors(refused, "responses", "partition_responses") == [29]


def test_an_idempotent_producer_needs_write_on_some_topic_or_idempotent_write():
    no_txn = lambda b: dataclasses.replace(b, transactional_id=None)  # noqa: E731
    assert ask(ApiKey.INIT_PRODUCER_ID, [], no_txn)["error_code"] == 31
    assert (
        ask(ApiKey.INIT_PRODUCER_ID, [acl(Rt.TOPIC, "other", Op.WRITE)], no_txn)["error_code"] == 0
    )
    idempotent = acl(Rt.CLUSTER, CLUSTER_NAME, Op.IDEMPOTENT_WRITE)
    assert ask(ApiKey.INIT_PRODUCER_ID, [idempotent], no_txn)["error_code"] == 0


def test_consuming_needs_read_on_the_topic_and_the_group():
    group, topic = acl(Rt.GROUP, RES, Op.READ), acl(Rt.TOPIC, RES, Op.READ)
    assert partition_errors(ask(ApiKey.OFFSET_COMMIT, [group]), "topics", "partitions") == [29]
    assert partition_errors(ask(ApiKey.OFFSET_COMMIT, [topic]), "topics", "partitions") == [30]
    assert ask(ApiKey.JOIN_GROUP, [topic])["error_code"] == 30
    assert ask(ApiKey.JOIN_GROUP, [group])["error_code"] == 0
    assert partition_errors(ask(ApiKey.FETCH, [topic]), "responses", "partitions") == []


def test_read_implies_describe_and_a_prefix_covers_the_names_under_it():
    prefixed = acl(Rt.TOPIC, "re", Op.READ, pattern=PatternType.PREFIXED)
    result = ask(ApiKey.LIST_OFFSETS, [prefixed])
    assert partition_errors(result, "topics", "partitions") == []


def test_metadata_of_every_topic_shows_only_those_the_caller_may_describe():
    every = lambda b: dataclasses.replace(b, topics=None)  # noqa: E731
    assert ask(ApiKey.METADATA, [], every)["topics"] == []
    shown = ask(ApiKey.METADATA, [acl(Rt.TOPIC, RES, Op.DESCRIBE)], every)["topics"]
    assert [t["name"] for t in shown] == [RES]


def test_a_named_topic_the_caller_may_not_describe_has_no_id():
    result = ask(
        ApiKey.METADATA, [], lambda b: dataclasses.replace(b, allow_auto_topic_creation=False)
    )
    (topic,) = result["topics"]
    assert (topic["error_code"], topic["topic_id"]) == (29, uuid.UUID(int=0))


def test_the_acl_apis_need_the_cluster():
    assert ask(ApiKey.DESCRIBE_ACLS, [])["error_code"] == 31
    assert (
        ask(ApiKey.DESCRIBE_ACLS, [acl(Rt.CLUSTER, CLUSTER_NAME, Op.DESCRIBE)])["error_code"] == 0
    )
    created = ask(ApiKey.CREATE_ACLS, [acl(Rt.CLUSTER, CLUSTER_NAME, Op.DESCRIBE)])
    assert [r["error_code"] for r in created["results"]] == [31]


def test_a_deny_for_all_operations_wins_over_any_allow():
    acls = [
        acl(Rt.TOPIC, RES, Op.WRITE),
        acl(Rt.TOPIC, "*", Op.ALL, Permission.DENY),
        acl(Rt.TRANSACTIONAL_ID, RES, Op.WRITE),
    ]
    result = ask(ApiKey.PRODUCE, acls)
    assert partition_errors(result, "responses", "partition_responses") == [29]


def test_describing_a_group_computes_its_authorized_operations_when_asked():
    result = ask(ApiKey.DESCRIBE_GROUPS, [acl(Rt.GROUP, RES, Op.READ)])
    (group,) = result["groups"]
    assert group["authorized_operations"] == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_describing_every_topic_partition_shows_only_those_the_caller_may_describe():
    every = lambda b: dataclasses.replace(b, topics=(), cursor=None)  # noqa: E731
    assert ask(ApiKey.DESCRIBE_TOPIC_PARTITIONS, [], every)["topics"] == []
    shown = ask(ApiKey.DESCRIBE_TOPIC_PARTITIONS, [acl(Rt.TOPIC, RES, Op.DESCRIBE)], every)
    assert [t["name"] for t in shown["topics"]] == [RES]


def test_a_groups_offsets_for_every_topic_show_only_topics_the_caller_may_describe():
    def every(body):
        return dataclasses.replace(
            body, groups=tuple(dataclasses.replace(g, topics=None) for g in body.groups)
        )

    group = acl(Rt.GROUP, RES, Op.DESCRIBE)
    (hidden,) = ask(ApiKey.OFFSET_FETCH, [group], every)["groups"]
    assert hidden["topics"] == []
    (shown,) = ask(ApiKey.OFFSET_FETCH, [group, acl(Rt.TOPIC, RES, Op.DESCRIBE)], every)["groups"]
    assert [t["name"] for t in shown["topics"]] == [RES]


# Any request at all --------------------------------------------------------------------------

st.register_type_strategy(Records, st.binary(max_size=16))
EVERY_VERSION = [
    pytest.param(api, version, id=f"{api.name}-v{version}")
    for api, (low, high) in API_VERSIONS.items()
    for version in range(low, high + 1)
]


@pytest.mark.parametrize(("api", "version"), EVERY_VERSION)
def test_any_request_passes_its_gate_to_an_answer_of_its_version(api, version):
    """Whatever a client sends that parses, refused or allowed, the gate answers it in the
    shape of its version: a gate never fails a request on its own."""
    legacy = api == ApiKey.PRODUCE and version in LEGACY_PRODUCE
    schema = load_request_schema(api, 3 if legacy else version)
    acls = [grant(need) for need in RULES[api][:1]]  # some allowed, some not

    @settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_type(schema))
    def gated(body):
        answer(Request(api, version, 1, "fuzz", body, "/10.0.0.7", principal=SUBJECT), acls)

    gated()
