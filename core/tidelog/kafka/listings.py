"""The gates of APIs that name many resources of their own shape (tidelog.kafka.authorization
has the simple ones): topics in Metadata and the admin APIs, groups, transactional ids, config
resources. Each refuses what the caller may not do with Kafka's error beside the handler's
answer for the rest, and a listing of everything leaves out what the caller may not describe.
Authorized-operation bit fields are computed where a request asks for them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tidelog import runtime
from tidelog.acls import ResourceType as Rt
from tidelog.errors import TidelogError
from tidelog.kafka import fanout
from tidelog.kafka.apis import ApiKey
from tidelog.kafka.authorizer import Access
from tidelog.kafka.codec import NONE, Answer, Request, code, field, items
from tidelog.kafka.consumer_groups import described_error as consumer_error
from tidelog.kafka.fanout import with_body
from tidelog.kafka.groups import described_error as classic_error
from tidelog.kafka.metadata import no_topic
from tidelog.kafka.needs import (
    CLUSTER_CREATE,
    CLUSTER_DESCRIBE,
    GROUP_DELETE,
    GROUP_DESCRIBE,
    TOPIC_CREATE,
    TOPIC_DESCRIBE,
    TXN_DESCRIBE,
    Need,
)
from tidelog.kafka.topicrefs import topic_ref
from tidelog.kafka.transactions import described

Call = Callable[[Request], Answer]
Gate = Callable[[Request, Access, Call], Answer]
GATES: dict[ApiKey, Gate] = {}


def _exists(name: str) -> bool:
    try:
        runtime.topic_cache().get(name)
    except TidelogError:
        return False
    return True


def _with_topic_operations(answer: Answer, request: Request, access: Access) -> Answer:
    if field(request.body, "include_topic_authorized_operations", False):
        answer["topics"] = [
            {**t, "topic_authorized_operations": access.operations(Rt.TOPIC, t["name"])}
            if t["error_code"] == NONE
            else t
            for t in answer["topics"]
        ]
    return answer


def _metadata(request: Request, access: Access, call: Call) -> Answer:
    """Every topic: those the caller may describe. Named ones: the others refused whether they
    exist or not, and one the request would create refused unless the caller may create it."""
    wanted = field(request.body, "topics")
    if wanted is None or (request.api_version == 0 and not wanted):
        answer = dict(call(request))
        answer["topics"] = [
            t for t in answer["topics"] if TOPIC_DESCRIBE.allowed(access, t["name"])
        ]
    else:
        creating = bool(field(request.body, "allow_auto_topic_creation", True))
        may_create_all = creating and CLUSTER_CREATE.allowed(access)
        kept, refused = [], []
        for entry in wanted:
            ref = topic_ref(entry, "name")
            if ref.error is not None:
                kept.append(entry)
            elif not TOPIC_DESCRIBE.allowed(access, ref.name) or (
                creating
                and not may_create_all
                and ref.found is None
                and not TOPIC_CREATE.allowed(access, ref.name)
                and not _exists(ref.name)
            ):
                refused.append(no_topic(field(entry, "name"), code(TOPIC_DESCRIBE.error)))
            else:
                kept.append(entry)
        answer = dict(call(with_body(request, topics=tuple(kept))))
        answer["topics"] = [*(answer["topics"] if kept else []), *refused]
    asked = field(request.body, "include_cluster_authorized_operations", False)
    if asked and CLUSTER_DESCRIBE.allowed(access):
        answer["cluster_authorized_operations"] = access.operations(Rt.CLUSTER, "kafka-cluster")
    return _with_topic_operations(answer, request, access)


GATES[ApiKey.METADATA] = _metadata


def _describe_topic_partitions(request: Request, access: Access, call: Call) -> Answer:
    named = [str(t.name) for t in items(request.body.topics)]
    if not named:
        answer = dict(call(request))
        answer["topics"] = [
            t for t in answer["topics"] if TOPIC_DESCRIBE.allowed(access, t["name"])
        ]
        return _with_topic_operations(answer, request, access)
    refused = [n for n in named if not TOPIC_DESCRIBE.allowed(access, n)]
    if not refused:
        return _with_topic_operations(dict(call(request)), request, access)
    kept = tuple(t for t in items(request.body.topics) if str(t.name) not in refused)
    answer = (
        dict(call(with_body(request, topics=kept)))
        if kept
        else {"throttle_time": 0, "next_cursor": None}
    )
    error = code(TOPIC_DESCRIBE.error)
    topics = [*answer.get("topics", []), *(no_topic(n, error) for n in refused)]
    answer["topics"] = sorted(topics, key=lambda t: str(t["name"]))
    return _with_topic_operations(answer, request, access)


GATES[ApiKey.DESCRIBE_TOPIC_PARTITIONS] = _describe_topic_partitions


OFFSET_FETCH = fanout.by_topic(
    {},
    {"committed_offset": -1, "committed_leader_epoch": -1, "metadata": ""},
    partitions="partition_indexes",
    index=None,
)


def _offset_fetch(request: Request, access: Access, call: Call) -> Answer:
    """Each group (one before v8): refused whole without DESCRIBE on it; of its topics, those
    named without DESCRIBE are refused, and when all are asked for they are left out."""
    body = request.body
    batched = field(body, "groups") is not None
    groups = list(items(body.groups)) if batched else [body]
    topic_error = code(TOPIC_DESCRIBE.error)
    refused_topics: dict[str, list[Answer]] = {}
    kept: list[Any] = []
    for group in groups:
        name = str(group.group_id)
        if not GROUP_DESCRIBE.allowed(access, name):
            continue
        if group.topics is None:
            kept.append(group)
            continue
        allowed, refused = fanout.split(
            group, OFFSET_FETCH, lambda t: TOPIC_DESCRIBE.allowed(access, t)
        )
        refused_topics[name] = fanout.refusals(OFFSET_FETCH, refused, topic_error)
        kept.append(dataclasses.replace(group, topics=tuple(allowed)))
    answered: dict[str, Answer] = {}
    if kept:
        call_with = (
            with_body(request, groups=tuple(kept))
            if batched
            else dataclasses.replace(request, body=kept[0])
        )
        answered = {str(a["group_id"]): a for a in call(call_with)["groups"]}
    answers = []
    for group in groups:
        name = str(group.group_id)
        if name not in answered:
            answers.append(
                {"group_id": name, "topics": [], "error_code": code(GROUP_DESCRIBE.error)}
            )
            continue
        answer = dict(answered[name])
        if group.topics is None:
            answer["topics"] = [
                t for t in answer["topics"] if TOPIC_DESCRIBE.allowed(access, t["name"])
            ]
        answer["topics"] = [*answer["topics"], *refused_topics.get(name, [])]
        answers.append(answer)
    return (
        {"throttle_time": 0, **answers[0], "groups": answers}
        if answers
        else {"throttle_time": 0, "topics": [], "error_code": NONE, "groups": []}
    )


GATES[ApiKey.OFFSET_FETCH] = _offset_fetch


def _each_named(
    listed: str,
    answer_key: str,
    need: Need,
    refused: Callable[[str, int], Answer],
    operations: Rt | None = None,
) -> Gate:
    """A request listing names (``listed``), answered one entry each (``answer_key``)."""

    def gate(request: Request, access: Access, call: Call) -> Answer:
        names = [str(n) for n in items(getattr(request.body, listed))]
        denied = {n for n in names if not need.allowed(access, n)}
        kept = tuple(n for n in names if n not in denied)
        answer: Answer = (
            dict(call(with_body(request, **{listed: kept})))
            if kept or not denied
            else {"throttle_time": 0}
        )
        entries = [*answer.get(answer_key, []), *(refused(n, code(need.error)) for n in denied)]
        if operations is not None and field(request.body, "include_authorized_operations", False):
            entries = [  # the groups' (the only listing that is asked for them)
                {**e, "authorized_operations": access.operations(operations, str(e["group_id"]))}
                if e["error_code"] == NONE
                else e
                for e in entries
            ]
        answer[answer_key] = entries
        return answer

    return gate


GATES[ApiKey.DESCRIBE_GROUPS] = _each_named(
    "groups", "groups", GROUP_DESCRIBE, lambda n, e: classic_error(n, e, None), Rt.GROUP
)
GATES[ApiKey.CONSUMER_GROUP_DESCRIBE] = _each_named(
    "group_ids", "groups", GROUP_DESCRIBE, lambda n, e: consumer_error(n, e, None), Rt.GROUP
)
GATES[ApiKey.DELETE_GROUPS] = _each_named(
    "groups_names", "results", GROUP_DELETE, lambda n, e: {"group_id": n, "error_code": e}
)


def _list_groups(request: Request, access: Access, call: Call) -> Answer:
    answer = dict(call(request))
    if not CLUSTER_DESCRIBE.allowed(access):
        answer["groups"] = [
            g for g in answer["groups"] if GROUP_DESCRIBE.allowed(access, g["group_id"])
        ]
    return answer


GATES[ApiKey.LIST_GROUPS] = _list_groups


def _describe_transactions(request: Request, access: Access, call: Call) -> Answer:
    refused: Callable[[str, int], Answer] = lambda n, e: described(n, None, e)  # noqa: E731
    answer = _each_named("transactional_ids", "transaction_states", TXN_DESCRIBE, refused)(
        request, access, call
    )
    answer["transaction_states"] = [
        {**s, "topics": [t for t in s["topics"] if TOPIC_DESCRIBE.allowed(access, t["topic"])]}
        for s in answer["transaction_states"]
    ]
    return answer


GATES[ApiKey.DESCRIBE_TRANSACTIONS] = _describe_transactions


def _list_transactions(request: Request, access: Access, call: Call) -> Answer:
    answer = dict(call(request))
    answer["transaction_states"] = [
        s
        for s in answer["transaction_states"]
        if TXN_DESCRIBE.allowed(access, s["transactional_id"])
    ]
    return answer


GATES[ApiKey.LIST_TRANSACTIONS] = _list_transactions


def _describe_cluster(request: Request, access: Access, call: Call) -> Answer:
    answer = dict(call(request))
    if field(
        request.body, "include_cluster_authorized_operations", False
    ) and CLUSTER_DESCRIBE.allowed(access):
        answer["cluster_authorized_operations"] = access.operations(Rt.CLUSTER, "kafka-cluster")
    return answer


GATES[ApiKey.DESCRIBE_CLUSTER] = _describe_cluster
