"""Who may call what: one gate per API in front of its handler, checking what
tidelog.kafka.needs says the API needs, as Kafka's ``KafkaApis`` does. A refused request
changes nothing: the handler is not called for what is refused, and the answer carries Kafka's
error where Kafka's does.

- A check on the whole request (a group, a transactional id, the cluster) answers the API's
  error answer, as Kafka's ``getErrorResponse``.
- A check per topic, group or resource answers the refused ones with the error beside the
  handler's answer for the others (tidelog.kafka.fanout).
- Listings (Metadata of all topics, ListGroups, ListTransactions) leave out what the caller may
  not describe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tidelog.acls import CLUSTER_NAME
from tidelog.acls import Operation as Op
from tidelog.acls import ResourceType as Rt
from tidelog.kafka import admin_gates, fanout, listings
from tidelog.kafka.apis import ApiKey
from tidelog.kafka.authorizer import Access
from tidelog.kafka.codec import NONE, Answer, Request, code, field, items
from tidelog.kafka.fanout import Fanout
from tidelog.kafka.needs import (
    CLUSTER_ALTER,
    CLUSTER_ALTER_CONFIGS,
    CLUSTER_DESCRIBE,
    CLUSTER_DESCRIBE_CONFIGS,
    CLUSTER_IDEMPOTENT_WRITE,
    GROUP_DELETE,
    GROUP_DESCRIBE,
    GROUP_READ,
    TOPIC_DELETE,
    TOPIC_DESCRIBE,
    TOPIC_READ,
    TOPIC_WRITE,
    TXN_DESCRIBE,
    TXN_WRITE,
    Need,
)
from tidelog.kafka.topicrefs import topic_ref

Call = Callable[[Request], Answer]


def authorize(request: Request, access: Access, call: Call) -> Answer:
    """The answer to ``request`` from a caller seen as ``access``: its handler ``call``ed for
    what the caller may do, Kafka's errors for the rest."""
    return GATES.get(request.api_key, _open)(request, access, call)


def _open(request: Request, access: Access, call: Call) -> Answer:
    return call(request)


# Whole-request checks ----------------------------------------------------------------------


def _whole(
    need: Need, name: Callable[[Any], str] | None, refused: Callable[[int, Request], Answer]
) -> Callable[[Request, Access, Call], Answer]:
    """A gate of one check on the resource ``name`` reads from the body (the cluster when
    None), answered ``refused(error, request)`` when denied."""

    def gate(request: Request, access: Access, call: Call) -> Answer:
        resource = CLUSTER_NAME if name is None else name(request.body)
        if need.allowed(access, resource):
            return call(request)
        return refused(code(need.error), request)

    return gate


def _error(**others: Any) -> Callable[[int, Request], Answer]:
    return lambda error, request: {"throttle_time": 0, "error_code": error, **others}


def _group_id(body: Any) -> str:
    return str(body.group_id)


def _txn_id(body: Any) -> str:
    return str(body.transactional_id)


# As the handlers answer their own errors: JoinGroup's protocol name is not nullable before v7.
_JOIN_REFUSED = _error(
    generation_id=-1, protocol_type=None, protocol_name="", leader="", member_id="", members=[]
)
_HEARTBEAT_REFUSED = _error(
    error_message=None, member_id=None, member_epoch=0, heartbeat_interval=0, assignment=None
)


def _each(
    listed: Callable[[Any], Any], answer: str, entry: Callable[[Any, int], Answer], **base: Any
) -> Callable[[int, Request], Answer]:
    """A refusal answering each item the request lists with the error."""
    return lambda error, request: {
        "throttle_time": 0,
        **base,
        answer: [entry(item, error) for item in items(listed(request.body))],
    }


def _log_dirs_refused(error: int, request: Request) -> Answer:
    topics: dict[str, list[Answer]] = {}
    for directory in items(request.body.dirs):
        for topic in items(directory.topics):
            topics.setdefault(str(topic.name), []).extend(
                {"partition_index": int(p), "error_code": error} for p in items(topic.partitions)
            )
    return {
        "throttle_time": 0,
        "results": [{"topic_name": t, "partitions": ps} for t, ps in topics.items()],
    }


def _elect_refused(error: int, request: Request) -> Answer:
    return {
        "throttle_time": 0,
        "error_code": error,
        "replica_election_results": [
            {
                "topic": str(t.topic),
                "partition_result": [
                    {"partition_id": int(p), "error_code": error, "error_message": None}
                    for p in items(t.partitions)
                ],
            }
            for t in items(request.body.topic_partitions)
        ],
    }


def _scram_users(body: Any) -> list[str]:
    names = [str(e.name) for e in (*items(body.deletions), *items(body.upsertions))]
    return list(dict.fromkeys(names))


# Gates -------------------------------------------------------------------------------------

GATES: dict[ApiKey, Callable[[Request, Access, Call], Answer]] = {
    ApiKey.JOIN_GROUP: _whole(GROUP_READ, _group_id, _JOIN_REFUSED),
    ApiKey.SYNC_GROUP: _whole(
        GROUP_READ, _group_id, _error(protocol_type=None, protocol_name=None, assignment=b"")
    ),
    ApiKey.HEARTBEAT: _whole(GROUP_READ, _group_id, _error()),
    ApiKey.LEAVE_GROUP: _whole(GROUP_READ, _group_id, _error(members=[])),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _whole(GROUP_READ, _group_id, _HEARTBEAT_REFUSED),
    ApiKey.END_TXN: _whole(TXN_WRITE, _txn_id, _error()),
    ApiKey.DESCRIBE_LOG_DIRS: _whole(CLUSTER_DESCRIBE, None, _error(results=[])),
    ApiKey.ALTER_REPLICA_LOG_DIRS: _whole(CLUSTER_ALTER, None, _log_dirs_refused),
    ApiKey.ELECT_LEADERS: _whole(CLUSTER_ALTER, None, _elect_refused),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _whole(
        CLUSTER_ALTER, None, _error(error_message=None, responses=[])
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _whole(
        CLUSTER_DESCRIBE, None, _error(error_message=None, topics=[])
    ),
    ApiKey.DESCRIBE_ACLS: _whole(CLUSTER_DESCRIBE, None, _error(error_message=None, resources=[])),
    ApiKey.CREATE_ACLS: _whole(
        CLUSTER_ALTER,
        None,
        _each(
            lambda b: b.creations,
            "results",
            lambda _, e: {"error_code": e, "error_message": None},
        ),
    ),
    ApiKey.DELETE_ACLS: _whole(
        CLUSTER_ALTER,
        None,
        _each(
            lambda b: b.filters,
            "filter_results",
            lambda _, e: {"error_code": e, "error_message": None, "matching_acls": []},
        ),
    ),
    ApiKey.LIST_CONFIG_RESOURCES: _whole(
        CLUSTER_DESCRIBE_CONFIGS, None, _error(config_resources=[])
    ),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _whole(
        CLUSTER_DESCRIBE_CONFIGS, None, _error(error_message=None, entries=None)
    ),
    ApiKey.ALTER_CLIENT_QUOTAS: _whole(
        CLUSTER_ALTER_CONFIGS,
        None,
        _each(
            lambda b: b.entries,
            "entries",
            lambda entry, e: {
                "error_code": e,
                "error_message": None,
                "entity": [
                    {"entity_type": str(x.entity_type), "entity_name": x.entity_name}
                    for x in items(entry.entity)
                ],
            },
        ),
    ),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _whole(
        CLUSTER_DESCRIBE, None, _error(error_message=None, results=[])
    ),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _whole(
        CLUSTER_ALTER,
        None,
        _each(
            _scram_users,
            "results",
            lambda user, e: {"user": user, "error_code": e, "error_message": None},
        ),
    ),
}


PRODUCE = Fanout(
    "topic_data",
    "name",
    "partition_data",
    "index",
    "responses",
    "name",
    "partition_responses",
    "index",
    base={"throttle_time": 0, "responses": []},
    refused={"base_offset": -1, "log_append_time": -1, "log_start_offset": -1, "record_errors": []},
)
FETCH = Fanout(
    "topics",
    "topic",
    "partitions",
    "partition",
    "responses",
    "topic",
    "partitions",
    "partition_index",
    base={"throttle_time": 0, "error_code": NONE, "session_id": 0, "responses": []},
    refused={
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": [],
        "preferred_read_replica": -1,
        "records": b"",  # empty, never null: librdkafka 2.0 refuses a null
    },
)
LIST_OFFSETS = fanout.by_topic(
    {"throttle_time": 0, "topics": []}, {"timestamp": -1, "offset": -1, "leader_epoch": -1}
)
OFFSET_FOR_LEADER_EPOCH = Fanout(
    "topics",
    "topic",
    "partitions",
    "partition",
    "topics",
    "topic",
    "partitions",
    "partition",
    base={"throttle_time": 0, "topics": []},
    refused={"leader_epoch": -1, "end_offset": -1},
)
COMMIT = fanout.by_topic({"throttle_time": 0, "topics": []})
OFFSET_DELETE = fanout.by_topic({"throttle_time": 0, "error_code": NONE, "topics": []})
DELETE_RECORDS = fanout.by_topic({"throttle_time": 0, "topics": []}, {"low_watermark": -1})
DESCRIBE_PRODUCERS = fanout.by_topic(
    {"throttle_time": 0, "topics": []},
    {"error_message": None, "active_producers": []},
    partitions="partition_indexes",
    index=None,
)
ADD_PARTITIONS = Fanout(
    "v3_and_below_topics",
    "name",
    "partitions",
    None,
    "results_by_topic_v3_and_below",
    "name",
    "results_by_partition",
    "partition_index",
    base={"throttle_time": 0, "results_by_topic_v3_and_below": []},
    error_field="partition_error_code",
)


def _topics(spec: Fanout, need: Need) -> Callable[[Request, Access, Call], Answer]:
    def gate(request: Request, access: Access, call: Call) -> Answer:
        return fanout.gate(request, call, spec, lambda t: need.allowed(access, t), code(need.error))

    return gate


GATES[ApiKey.FETCH] = _topics(FETCH, TOPIC_READ)
GATES[ApiKey.LIST_OFFSETS] = _topics(LIST_OFFSETS, TOPIC_DESCRIBE)
GATES[ApiKey.OFFSET_FOR_LEADER_EPOCH] = _topics(OFFSET_FOR_LEADER_EPOCH, TOPIC_DESCRIBE)
GATES[ApiKey.DELETE_RECORDS] = _topics(DELETE_RECORDS, TOPIC_DELETE)
GATES[ApiKey.DESCRIBE_PRODUCERS] = _topics(DESCRIBE_PRODUCERS, TOPIC_READ)


def _produce(request: Request, access: Access, call: Call) -> Answer:
    txn = field(request.body, "transactional_id")
    if txn is not None and not TXN_WRITE.allowed(access, str(txn)):
        return fanout.refuse_all(request, PRODUCE, code(TXN_WRITE.error))
    return _topics(PRODUCE, TOPIC_WRITE)(request, access, call)


GATES[ApiKey.PRODUCE] = _produce


def _offset_commit(request: Request, access: Access, call: Call) -> Answer:
    if not GROUP_READ.allowed(access, str(request.body.group_id)):
        return fanout.refuse_all(request, COMMIT, code(GROUP_READ.error))
    return _topics(COMMIT, TOPIC_READ)(request, access, call)


GATES[ApiKey.OFFSET_COMMIT] = _offset_commit


def _txn_offset_commit(request: Request, access: Access, call: Call) -> Answer:
    body = request.body
    for need, name in ((TXN_WRITE, body.transactional_id), (GROUP_READ, body.group_id)):
        if not need.allowed(access, str(name)):
            return fanout.refuse_all(request, COMMIT, code(need.error))
    return _topics(COMMIT, TOPIC_READ)(request, access, call)


GATES[ApiKey.TXN_OFFSET_COMMIT] = _txn_offset_commit


def _offset_delete(request: Request, access: Access, call: Call) -> Answer:
    if not GROUP_DELETE.allowed(access, str(request.body.group_id)):
        return {**OFFSET_DELETE.base, "error_code": code(GROUP_DELETE.error)}
    return _topics(OFFSET_DELETE, TOPIC_READ)(request, access, call)


GATES[ApiKey.OFFSET_DELETE] = _offset_delete


def _add_offsets_to_txn(request: Request, access: Access, call: Call) -> Answer:
    body = request.body
    for need, name in ((TXN_WRITE, body.transactional_id), (GROUP_READ, body.group_id)):
        if not need.allowed(access, str(name)):
            return {"throttle_time": 0, "error_code": code(need.error)}
    return call(request)


GATES[ApiKey.ADD_OFFSETS_TO_TXN] = _add_offsets_to_txn


def _add_partitions_to_txn(request: Request, access: Access, call: Call) -> Answer:
    """All or nothing, as Kafka: with any topic refused, the others are OPERATION_NOT_ATTEMPTED
    and nothing is added."""
    if not TXN_WRITE.allowed(access, str(request.body.v3_and_below_transactional_id)):
        return fanout.refuse_all(request, ADD_PARTITIONS, code(TXN_WRITE.error))
    kept, refused = fanout.split(
        request.body, ADD_PARTITIONS, lambda t: TOPIC_WRITE.allowed(access, t)
    )
    if not refused:
        return call(request)
    untried = [(topic_ref(t, "name"), t) for t in kept]
    return {
        **ADD_PARTITIONS.base,
        ADD_PARTITIONS.answer: [
            *fanout.refusals(ADD_PARTITIONS, refused, code(TOPIC_WRITE.error)),
            *fanout.refusals(ADD_PARTITIONS, untried, code("OPERATION_NOT_ATTEMPTED")),
        ],
    }


GATES[ApiKey.ADD_PARTITIONS_TO_TXN] = _add_partitions_to_txn


def _init_producer_id(request: Request, access: Access, call: Call) -> Answer:
    txn = field(request.body, "transactional_id")
    if txn is not None:
        allowed, error = TXN_WRITE.allowed(access, str(txn)), TXN_WRITE.error
    else:
        allowed = CLUSTER_IDEMPOTENT_WRITE.allowed(access) or access.allows_any(Op.WRITE, Rt.TOPIC)
        error = CLUSTER_IDEMPOTENT_WRITE.error
    if allowed:
        return call(request)
    return {"throttle_time": 0, "error_code": code(error), "producer_id": -1, "producer_epoch": -1}


GATES[ApiKey.INIT_PRODUCER_ID] = _init_producer_id


def _find_coordinator(request: Request, access: Access, call: Call) -> Answer:
    key_type = int(field(request.body, "key_type", 0))
    need = {0: GROUP_DESCRIBE, 1: TXN_DESCRIBE}.get(key_type)
    listed = field(request.body, "coordinator_keys")  # None before v4: one key
    keys = [str(k) for k in listed] if listed is not None else [str(field(request.body, "key"))]
    if need is None:
        return call(request)
    refused = {k for k in keys if not need.allowed(access, k)}
    if not refused:
        return call(request)
    kept = [k for k in keys if k not in refused]
    found: list[Answer] = []
    if kept:
        found = list(call(fanout.with_body(request, coordinator_keys=tuple(kept)))["coordinators"])
    for key in refused:
        found.append(
            {
                "key": key,
                "node_id": -1,
                "host": "",
                "port": -1,
                "error_code": code(need.error),
                "error_message": None,
            }
        )
    found.sort(key=lambda c: keys.index(c["key"]))
    return {"throttle_time": 0, **found[0], "coordinators": found}


GATES[ApiKey.FIND_COORDINATOR] = _find_coordinator


GATES.update(listings.GATES)
GATES.update(admin_gates.GATES)
