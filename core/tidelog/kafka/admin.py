"""Kafka's admin APIs over tidelog's topics: CreateTopics, DeleteTopics, CreatePartitions,
DescribeConfigs, DescribeCluster. Answers are version-free (see tidelog.kafka.codec).

Kafka's tools send what a replicated broker needs: a replication factor, replica assignments,
configs such as ``min.insync.replicas``. tidelog's copies are S3's, so it accepts them and ignores
them rather than refusing the tools; a config name Kafka does not know is still INVALID_CONFIG.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tidelog import runtime
from tidelog.errors import InvalidRequestError, TidelogError
from tidelog.kafka.codec import Answer, field, items
from tidelog.kafka.node import Node
from tidelog.log import configs as topic_configs
from tidelog.log.topics import Topic, TopicExistsError, validate_name, validate_partitions

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
TOPIC_CONFIG_SOURCE, STATIC_BROKER_CONFIG_SOURCE, DEFAULT_CONFIG_SOURCE = 1, 4, 5
DEFAULT_PARTITIONS = 1  # Kafka's num.partitions, for a CreateTopics that asks for the default

# Topic configs of Kafka's LogConfig that mean nothing where S3 keeps the copies: accepted and
# dropped, so that tools written for Kafka create their topics unchanged.
IGNORED_TOPIC_CONFIGS = frozenset(
    {
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "follower.replication.throttled.replicas",
        "index.interval.bytes",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "message.downconversion.enable",
        "message.format.version",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.difference.max.ms",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "remote.storage.enable",
        "segment.index.bytes",
        "segment.jitter.ms",
        "unclean.leader.election.enable",
    }
)

# The broker configs whose defaults the topic configs take, by Kafka's broker names.
BROKER_NAMES = {
    "cleanup.policy": "log.cleanup.policy",
    "compression.type": "compression.type",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
}


def create_topics(body: Any) -> Answer:
    names = Counter(str(t.name) for t in items(body.topics))
    validate_only = bool(field(body, "validate_only", False))
    answers = []
    for request in items(body.topics):
        name = str(request.name)
        if names[name] > 1:
            error: TidelogError | None = InvalidRequestError(
                f"Create topics request from client contains multiple entries for topic {name}"
            )
            answers.append(_created(name, None, error, request))
            continue
        try:
            topic = _create(request, validate_only)
            answers.append(_created(name, topic, None, request))
        except TidelogError as exc:
            answers.append(_created(name, None, exc, request))
    return {"throttle_time": 0, "topics": answers}


def _create(request: Any, validate_only: bool) -> Topic:
    assignments = items(request.assignments)
    count = len(assignments) if assignments else int(request.num_partitions)
    count = DEFAULT_PARTITIONS if count == -1 else count
    wanted = {
        str(c.name): c.value
        for c in items(request.configs)
        if str(c.name) not in IGNORED_TOPIC_CONFIGS and c.value is not None
    }
    if not validate_only:
        return runtime.topics().create(str(request.name), count, wanted)
    topic = Topic(
        name=validate_name(str(request.name)),
        topic_id=str(uuid.UUID(int=0)),
        partitions=validate_partitions(count),
        configs=topic_configs.validate_configs(wanted),
    )
    try:
        runtime.topics().get(topic.name)
    except TidelogError:
        return topic
    raise TopicExistsError(f"Topic '{topic.name}' already exists.")


def _created(name: str, topic: Topic | None, error: TidelogError | None, request: Any) -> Answer:
    if topic is None:
        assert error is not None
        return {
            "name": name,
            "topic_id": uuid.UUID(int=0),
            "error_code": error.kafka_error.code,
            "error_message": error.message,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],  # Kafka's controller leaves them empty, never null
        }
    factor = int(request.replication_factor)
    return {
        "name": name,
        "topic_id": uuid.UUID(topic.topic_id),
        "error_code": 0,
        "error_message": None,
        "num_partitions": topic.partitions,
        "replication_factor": 1 if factor == -1 else factor,
        "configs": [_config(topic, config_name) for config_name in sorted(topic_configs.CONFIGS)],
    }


def delete_topics(body: Any) -> Answer:
    answers = []
    for request in _deletions(body):
        name, topic_id = request
        try:
            if name is None:
                name = _name_of(topic_id)
            deleted = runtime.topics().delete(name)
            answers.append(_deleted(name, uuid.UUID(deleted.topic_id), None))
        except TidelogError as exc:
            answers.append(_deleted(name, topic_id, exc))
    return {"throttle_time": 0, "responses": answers}


def _deletions(body: Any) -> list[tuple[str | None, uuid.UUID]]:
    names = field(body, "topic_names")
    if names is not None:  # v0-5 name topics; v6 names or ids each
        return [(str(n), uuid.UUID(int=0)) for n in names]
    return [
        (None if t.name is None else str(t.name), t.topic_id or uuid.UUID(int=0))
        for t in items(body.topics)
    ]


def _name_of(topic_id: uuid.UUID) -> str:
    for topic in runtime.topics().list():
        if topic.topic_id == str(topic_id):
            return topic.name
    raise TidelogError(f"no topic has the id {topic_id}", kafka_error="UNKNOWN_TOPIC_ID")


def _deleted(name: str | None, topic_id: uuid.UUID, error: TidelogError | None) -> Answer:
    return {
        "name": name,
        "topic_id": topic_id,
        "error_code": 0 if error is None else error.kafka_error.code,
        "error_message": None if error is None else error.message,
    }


def create_partitions(body: Any) -> Answer:
    validate_only = bool(body.validate_only)
    results = []
    for request in items(body.topics):
        name = str(request.name)
        error: TidelogError | None = None
        try:
            if validate_only:
                topic = runtime.topics().get(name)
                validate_partitions(int(request.count))
                if int(request.count) <= topic.partitions:
                    raise InvalidRequestError(
                        f"Topic currently has {topic.partitions} partitions, which is higher "
                        f"than or equal to the requested {request.count}.",
                        kafka_error="INVALID_PARTITIONS",
                    )
            else:
                runtime.topics().add_partitions(name, int(request.count))
        except TidelogError as exc:
            error = exc
        results.append(
            {
                "name": name,
                "error_code": 0 if error is None else error.kafka_error.code,
                "error_message": None if error is None else error.message,
            }
        )
    return {"throttle_time": 0, "results": results}


def describe_configs(body: Any, node_id: int) -> Answer:
    results = []
    for resource in items(body.resources):
        kind, name = int(resource.resource_type), str(resource.resource_name)
        keys = resource.configuration_keys
        try:
            if kind == TOPIC_RESOURCE:
                topic = runtime.topics().get(name)
                configs = [_config(topic, c) for c in sorted(topic_configs.CONFIGS)]
            elif kind == BROKER_RESOURCE and name in ("", str(node_id)):
                configs = _broker_configs()
            else:
                raise InvalidRequestError(
                    f"resource type {kind} named {name!r}: describe a topic (2) or this "
                    f"broker (4, {node_id})"
                )
            wanted = configs if keys is None else [c for c in configs if c["name"] in keys]
            results.append(_described(kind, name, None, wanted))
        except TidelogError as exc:
            results.append(_described(kind, name, exc, []))
    return {"throttle_time": 0, "results": results}


def _described(kind: int, name: str, error: TidelogError | None, configs: list[Answer]) -> Answer:
    return {
        "error_code": 0 if error is None else error.kafka_error.code,
        "error_message": None if error is None else error.message,
        "resource_type": kind,
        "resource_name": name,
        "configs": configs,
    }


def _config(topic: Topic, name: str) -> Answer:
    set_here = name in topic.configs
    return _entry(
        name,
        topic.config(name),
        TOPIC_CONFIG_SOURCE if set_here else DEFAULT_CONFIG_SOURCE,
        topic_configs.CONFIGS[name].doc,
    )


def _broker_configs() -> list[Answer]:
    entries = [
        _entry(BROKER_NAMES[c.name], c.default, STATIC_BROKER_CONFIG_SOURCE, c.doc)
        for c in topic_configs.CONFIGS.values()
    ]
    entries += [
        _entry("auto.create.topics.enable", "false", STATIC_BROKER_CONFIG_SOURCE, "never"),
        _entry(
            "num.partitions",
            str(DEFAULT_PARTITIONS),
            STATIC_BROKER_CONFIG_SOURCE,
            "partitions of a topic created without a count",
        ),
    ]
    return sorted(entries, key=lambda e: str(e["name"]))


def _entry(name: str, value: str, source: int, doc: str) -> Answer:
    return {
        "name": name,
        "value": value,
        "read_only": source == STATIC_BROKER_CONFIG_SOURCE,
        "config_source": source,
        "is_sensitive": False,
        "synonyms": [],
        "config_type": 0,
        "documentation": doc,
    }


def describe_cluster(nodes: Sequence[Node], cluster_id: str) -> Answer:
    return {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "cluster_id": cluster_id,
        "controller_id": controller(nodes),
        "brokers": [
            {"broker_id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack}
            for node in nodes
        ],
        "cluster_authorized_operations": -(2**31),
    }


def controller(nodes: Sequence[Node]) -> int:
    """There is no controller; admin tools want one, and the lowest id is as good as any and
    the same from every agent."""
    return min(node.node_id for node in nodes)
