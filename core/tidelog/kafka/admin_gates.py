"""The gates of the admin APIs over topics and configs (tidelog.kafka.authorization): CREATE,
DELETE and ALTER on each topic, DESCRIBE_CONFIGS and ALTER_CONFIGS on each config resource, each
refused with Kafka's error beside the handler's answer for the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tidelog.acls import CLUSTER_NAME
from tidelog.acls import ResourceType as Rt
from tidelog.kafka.apis import ApiKey
from tidelog.kafka.authorizer import Access
from tidelog.kafka.codec import NONE, Answer, Request, code, items
from tidelog.kafka.fanout import with_body
from tidelog.kafka.needs import (
    CLUSTER_ALTER_CONFIGS,
    CLUSTER_CREATE,
    CLUSTER_DESCRIBE_CONFIGS,
    GROUP_ALTER_CONFIGS,
    GROUP_DESCRIBE_CONFIGS,
    TOPIC_ALTER,
    TOPIC_ALTER_CONFIGS,
    TOPIC_CREATE,
    TOPIC_DELETE,
    TOPIC_DESCRIBE,
    TOPIC_DESCRIBE_CONFIGS,
    Need,
)
from tidelog.kafka.topicrefs import NO_ID, topic_ref

Call = Callable[[Request], Answer]
Gate = Callable[[Request, Access, Call], Answer]
GATES: dict[ApiKey, Gate] = {}


def _create_topics(request: Request, access: Access, call: Call) -> Answer:
    """CREATE on the cluster or on each topic; a created topic's configs are shown only to a
    caller who may describe them (else TOPIC_AUTHORIZATION_FAILED as its config error)."""
    everything = CLUSTER_CREATE.allowed(access)
    error = code(TOPIC_CREATE.error)
    kept: list[Any] = []
    refused: list[Any] = []
    for topic in items(request.body.topics):
        name = str(topic.name)
        (kept if everything or TOPIC_CREATE.allowed(access, name) else refused).append(topic)
    answer: Answer = (
        dict(call(with_body(request, topics=tuple(kept))))
        if kept
        else {"throttle_time": 0, "topics": []}
    )
    shown = []
    for created in answer["topics"]:
        topic = created
        if topic["error_code"] == NONE and not TOPIC_DESCRIBE_CONFIGS.allowed(
            access, topic["name"]
        ):
            topic = {
                **topic,
                "configs": None,
                "num_partitions": -1,
                "replication_factor": -1,
                "topic_config_error_code": error,
            }
        shown.append(topic)
    for topic in refused:
        shown.append(
            {
                "name": str(topic.name),
                "topic_id": NO_ID,
                "error_code": error,
                "error_message": "Authorization failed.",
                "topic_config_error_code": error,
                "num_partitions": -1,
                "replication_factor": -1,
                "configs": None,
            }
        )
    answer["topics"] = shown
    return answer


GATES[ApiKey.CREATE_TOPICS] = _create_topics


def _delete_topics(request: Request, access: Access, call: Call) -> Answer:
    """DELETE on each topic; one named by id also needs DESCRIBE, or its name stays hidden."""
    error = code(TOPIC_DELETE.error)
    if hasattr(request.body, "topic_names"):  # v0-5
        names = [str(n) for n in items(request.body.topic_names)]
        denied = [n for n in names if not TOPIC_DELETE.allowed(access, n)]
        kept = tuple(n for n in names if n not in denied)
        answer: Answer = (
            dict(call(with_body(request, topic_names=kept)))
            if kept
            else {"throttle_time": 0, "responses": []}
        )
        answer["responses"] = [
            *answer["responses"],
            *({"name": n, "error_code": error, "error_message": None} for n in denied),
        ]
        return answer
    kept_topics: list[Any] = []
    refused: list[Answer] = []
    for topic in items(request.body.topics):
        ref = topic_ref(topic, "name")
        if ref.error is not None:
            kept_topics.append(topic)
        elif topic.name is None and not TOPIC_DESCRIBE.allowed(access, ref.name):
            refused.append(
                {"name": None, "topic_id": ref.topic_id, "error_code": error, "error_message": None}
            )
        elif not TOPIC_DELETE.allowed(access, ref.name):
            refused.append(
                {
                    "name": ref.name,
                    "topic_id": ref.topic_id,
                    "error_code": error,
                    "error_message": None,
                }
            )
        else:
            kept_topics.append(topic)
    answer = (
        dict(call(with_body(request, topics=tuple(kept_topics))))
        if kept_topics
        else {"throttle_time": 0, "responses": []}
    )
    answer["responses"] = [*answer["responses"], *refused]
    return answer


GATES[ApiKey.DELETE_TOPICS] = _delete_topics


GATES[ApiKey.CREATE_PARTITIONS] = lambda request, access, call: _by_name(
    request, access, call, listed="topics", answer_key="results", need=TOPIC_ALTER
)


def _by_name(
    request: Request, access: Access, call: Call, *, listed: str, answer_key: str, need: Need
) -> Answer:
    entries = list(items(getattr(request.body, listed)))
    denied = [e for e in entries if not need.allowed(access, str(e.name))]
    kept = tuple(e for e in entries if e not in denied)
    answer: Answer = (
        dict(call(with_body(request, **{listed: kept})))
        if kept
        else {"throttle_time": 0, answer_key: []}
    )
    answer[answer_key] = [
        *answer[answer_key],
        *(
            {"name": str(e.name), "error_code": code(need.error), "error_message": None}
            for e in denied
        ),
    ]
    return answer


# Config resources: topics (2), brokers (4) and their loggers (8) by the cluster, groups (32).
_TOPIC, _BROKER, _BROKER_LOGGER, _GROUP = 2, 4, 8, 32


def _configs(needs: dict[int, Need], answer_key: str, refused: dict[str, Any]) -> Gate:
    def gate(request: Request, access: Access, call: Call) -> Answer:
        kept: list[tuple[Any, Need | None]] = []
        denied: list[tuple[Any, Need | None]] = []
        for resource in items(request.body.resources):
            kind, name = int(resource.resource_type), str(resource.resource_name)
            need = needs.get(kind)
            allowed = need is None or need.allowed(
                access, name if need.resource_type != Rt.CLUSTER else CLUSTER_NAME
            )
            (kept if allowed else denied).append((resource, need))
        if not denied:
            return call(request)
        answer: Answer = (
            dict(call(with_body(request, resources=tuple(r for r, _ in kept))))
            if kept
            else {"throttle_time": 0, answer_key: []}
        )
        answer[answer_key] = [
            *answer[answer_key],
            *(
                {
                    "error_code": code(need.error),
                    "error_message": None,
                    "resource_type": int(r.resource_type),
                    "resource_name": str(r.resource_name),
                    **refused,
                }
                for r, need in denied
                if need is not None
            ),
        ]
        return answer

    return gate


GATES[ApiKey.DESCRIBE_CONFIGS] = _configs(
    {
        _TOPIC: TOPIC_DESCRIBE_CONFIGS,
        _BROKER: CLUSTER_DESCRIBE_CONFIGS,
        _BROKER_LOGGER: CLUSTER_DESCRIBE_CONFIGS,
        _GROUP: GROUP_DESCRIBE_CONFIGS,
    },
    "results",
    {"configs": []},
)
_ALTER_CONFIGS = {
    _TOPIC: TOPIC_ALTER_CONFIGS,
    _BROKER: CLUSTER_ALTER_CONFIGS,
    _BROKER_LOGGER: CLUSTER_ALTER_CONFIGS,
    _GROUP: GROUP_ALTER_CONFIGS,
}
GATES[ApiKey.ALTER_CONFIGS] = _configs(_ALTER_CONFIGS, "responses", {})
GATES[ApiKey.INCREMENTAL_ALTER_CONFIGS] = _configs(_ALTER_CONFIGS, "responses", {})
