"""Kafka's config APIs: DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, over
tidelog's topic configs (tidelog.log.configs), groups' own configs
(tidelog.kafka.group_configs) and the brokers' (tidelog.kafka.broker_configs).

Described as Kafka describes them: each config's type, documentation and synonyms (the topic's
own value, then the cluster's dynamic default and Kafka's default it falls back to), read-only
and sensitive flags.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from tidelog import runtime
from tidelog.errors import InvalidRequestError, TidelogError
from tidelog.kafka import broker_configs, group_configs
from tidelog.kafka.codec import NONE, Answer, Request, code, field, items
from tidelog.kafka.node import Node
from tidelog.log import configs as topic_configs
from tidelog.log.topics import Topic

TOPIC_RESOURCE, BROKER_RESOURCE, GROUP_RESOURCE = 2, 4, 32
CLIENT_METRICS_RESOURCE, BROKER_LOGGER_RESOURCE = 16, 8
# ConfigSource
TOPIC_CONFIG, DYNAMIC_DEFAULT, DEFAULT_CONFIG = 1, 3, 5
# ConfigType (DescribeConfigs v3+)
TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "LIST": 7}
# IncrementalAlterConfigs' operations
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

# Topic configs of Kafka's LogConfig that mean nothing where S3 keeps the copies: accepted and
# dropped, so that tools written for Kafka create and alter their topics unchanged.
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

# DescribeConfigs ----------------------------------------------------------------------------


def describe_configs(request: Request, me: Node, live: Callable[[], tuple[Node, ...]]) -> Answer:
    body = request.body
    synonyms = bool(field(body, "include_synonyms", False))
    documentation = bool(field(body, "include_documentation", False))
    results = []
    for resource in items(body.resources):
        kind, name = int(resource.resource_type), str(resource.resource_name)
        keys = resource.configuration_keys
        try:
            if kind == TOPIC_RESOURCE:
                topic = runtime.topics().get(name)
                configs = [topic_config(topic, c) for c in sorted(topic_configs.CONFIGS)]
            elif kind == BROKER_RESOURCE:
                configs = broker_configs.describe(name, me, live)
            elif kind == GROUP_RESOURCE:
                configs = group_configs.describe(name)
            else:
                raise _unsupported_resource(kind, name, me)
            wanted = configs if keys is None else [c for c in configs if c["name"] in keys]
            for config in wanted:
                if not synonyms:
                    config["synonyms"] = []
                if not documentation:
                    config["documentation"] = None
            results.append(_result(kind, name, None) | {"configs": wanted})
        except TidelogError as exc:
            results.append(_result(kind, name, exc) | {"configs": []})
    return {"throttle_time": 0, "results": results}


def topic_config(topic: Topic, name: str) -> Answer:
    definition = topic_configs.CONFIGS[name]
    broker_name = topic_configs.BROKER_NAMES[name]
    synonyms = [{"name": broker_name, "value": definition.default, "source": DEFAULT_CONFIG}]
    if name in topic.cluster_defaults:
        cluster = topic.cluster_defaults[name]
        synonyms.insert(0, {"name": broker_name, "value": cluster, "source": DYNAMIC_DEFAULT})
    if name in topic.configs:
        synonyms.insert(0, {"name": name, "value": topic.configs[name], "source": TOPIC_CONFIG})
    return {
        "name": name,
        "value": topic.config(name),
        "read_only": False,
        "config_source": synonyms[0]["source"],
        "is_sensitive": False,
        "synonyms": synonyms,
        "config_type": TYPES[definition.kind],
        "documentation": definition.doc,
    }


def _unsupported_resource(kind: int, name: str, me: Node) -> TidelogError:
    return InvalidRequestError(
        f"resource type {kind} named {name!r}: tidelog has configs for topics (2), brokers "
        f"(4, this one is {me.node_id}) and groups (32)"
    )


def _result(kind: int, name: str, error: TidelogError | None) -> Answer:
    return {
        "error_code": 0 if error is None else error.kafka_error.code,
        "error_message": None if error is None else error.message,
        "resource_type": kind,
        "resource_name": name,
    }


# AlterConfigs and IncrementalAlterConfigs ---------------------------------------------------


def alter_configs(request: Request, me: Node, live: Callable[[], tuple[Node, ...]]) -> Answer:
    """The legacy AlterConfigs: a resource's configs become exactly those given."""
    body = request.body

    def apply(name: str, resource: Any, validate_only: bool) -> None:
        wanted = {
            str(c.name): c.value
            for c in items(resource.configs)
            if str(c.name) not in IGNORED_TOPIC_CONFIGS
        }
        if None in wanted.values():
            raise InvalidRequestError("AlterConfigs: a config needs a value (null given)")
        runtime.topics().replace_configs(name, wanted, validate_only=validate_only)

    return _alter(
        body,
        me,
        {
            TOPIC_RESOURCE: apply,
            GROUP_RESOURCE: group_configs.replace_all,
            BROKER_RESOURCE: lambda n, r, v: broker_configs.replace_all(n, r, v, me, live),
        },
    )


def incremental_alter_configs(
    request: Request, me: Node, live: Callable[[], tuple[Node, ...]]
) -> Answer:
    """KIP-339: set, delete (back to the default), append to or subtract from a list."""
    body = request.body

    def apply(name: str, resource: Any, validate_only: bool) -> None:
        ops = [(str(c.name), int(c.config_operation), c.value) for c in items(resource.configs)]
        repeated = [k for k, n in Counter(k for k, _, _ in ops).items() if n > 1]
        if repeated:
            raise InvalidRequestError(f"Error due to duplicate config keys: {sorted(repeated)}")
        topic = runtime.topics().get(name)
        changes = {
            key: _operated(topic, key, op, value)
            for key, op, value in ops
            if key not in IGNORED_TOPIC_CONFIGS
        }
        runtime.topics().alter_configs(topic, changes, validate_only=validate_only)
        runtime.topic_cache().forget(name)

    return _alter(
        body,
        me,
        {
            TOPIC_RESOURCE: apply,
            GROUP_RESOURCE: group_configs.alter_incrementally,
            BROKER_RESOURCE: lambda n, r, v: broker_configs.alter_incrementally(n, r, v, me, live),
        },
    )


def _operated(topic: Topic, key: str, op: int, value: str | None) -> str | None:
    """The value ``key`` takes after ``op`` (None: back to its default)."""
    definition = topic_configs.CONFIGS.get(key)
    if definition is None:
        raise topic_configs.InvalidConfigError(f"unknown topic config {key!r}")
    if op == DELETE:
        return None
    if value is None:
        raise InvalidRequestError(f"{key}: operation {op} needs a value (null given)")
    if op == SET:
        return value
    if op not in (APPEND, SUBTRACT):
        raise InvalidRequestError(f"{key}: unknown config operation {op}")
    if definition.kind != "LIST":
        raise topic_configs.InvalidConfigError(
            f"Config value append/subtract is not allowed for config key {key}: it is not a list"
        )
    return broker_configs.listed(topic.config(key), value, append=op == APPEND)


def _alter(
    body: Any,
    me: Node,
    appliers: Mapping[int, Callable[[str, Any, bool], None]],
) -> Answer:
    validate_only = bool(body.validate_only)
    resources = list(items(body.resources))
    repeated = Counter((int(r.resource_type), str(r.resource_name)) for r in resources)
    responses = []
    for resource in resources:
        kind, name = int(resource.resource_type), str(resource.resource_name)
        try:
            if repeated[(kind, name)] > 1:
                raise InvalidRequestError(f"resource {name!r} of type {kind} is named twice")
            apply = appliers.get(kind)
            if apply is None:
                raise _unsupported_resource(kind, name, me)
            apply(name, resource, validate_only)
            responses.append(_result(kind, name, None))
        except TidelogError as exc:
            responses.append(_result(kind, name, exc))
    return {"throttle_time": 0, "responses": responses}


LISTED_TYPES = (
    TOPIC_RESOURCE,
    BROKER_RESOURCE,
    BROKER_LOGGER_RESOURCE,
    CLIENT_METRICS_RESOURCE,
    GROUP_RESOURCE,
)


def list_config_resources(request: Request, live: Callable[[], tuple[Node, ...]]) -> Answer:
    """Kafka 4.1's ListConfigResources (KIP-1142): the resources that have configs, of the
    types asked for (none: every type). Every topic and every live agent has configs, and
    every group that has configs of its own; client metrics and loggers have none set here.
    v0 (KIP-714's ListClientMetricsResources) asks for client metrics only."""
    asked = [
        int(t) for t in items(field(request.body, "resource_types", [CLIENT_METRICS_RESOURCE]))
    ]
    unknown = [t for t in asked if t not in LISTED_TYPES]
    if unknown:
        return {
            "throttle_time": 0,
            "error_code": code("UNSUPPORTED_VERSION"),
            "config_resources": [],
        }
    wanted = set(asked) or set(LISTED_TYPES)
    listed: list[Answer] = []
    if TOPIC_RESOURCE in wanted:
        listed += [
            {"resource_name": t.name, "resource_type": TOPIC_RESOURCE}
            for t in runtime.topics().list()
        ]
    if BROKER_RESOURCE in wanted:
        listed += [
            {"resource_name": str(n.node_id), "resource_type": BROKER_RESOURCE} for n in live()
        ]
    if GROUP_RESOURCE in wanted:
        listed += group_configs.listed()
    return {"throttle_time": 0, "error_code": NONE, "config_resources": listed}
