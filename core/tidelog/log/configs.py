"""Topic configs with Kafka's names, types, defaults and bounds (a subset of LogConfig), and
the broker configs that give them their defaults.

A topic's config is its own value, else the cluster's dynamic default (Kafka's
``DYNAMIC_DEFAULT_BROKER_CONFIG``, set on the broker resource ``""``), else Kafka's default.
The brokers' dynamic configs are kept as named config items (tidelog.storage.configs)::

    ("brokerconfigs", "default")    the cluster's defaults, by Kafka's broker names
    ("brokerconfigs", <node id>)    one agent's own
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tidelog.errors import InvalidRequestError

LONG_MAX = 2**63 - 1


class InvalidConfigError(InvalidRequestError):
    default_kafka_error = "INVALID_CONFIG"


@dataclass(frozen=True)
class ConfigDef:
    name: str
    default: str
    check: Callable[[str], str]  # returns the normalised value or raises ValueError
    doc: str
    kind: str  # Kafka's ConfigDef.Type: LIST, STRING, INT, LONG


def _long(low: int, high: int = LONG_MAX) -> Callable[[str], str]:
    def check(value: str) -> str:
        number = int(value)
        if not low <= number <= high:
            raise ValueError(f"must be between {low} and {high}")
        return str(number)

    return check


def _one_of(*choices: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return check


def _cleanup_policy(value: str) -> str:
    parts = [p.strip() for p in value.split(",")]
    if (
        not parts
        or any(p not in ("delete", "compact") for p in parts)
        or len(set(parts)) != len(parts)
    ):
        raise ValueError("must be delete, compact, or both separated by a comma")
    return ",".join(sorted(parts, key=["compact", "delete"].index))


CONFIGS: Mapping[str, ConfigDef] = {
    c.name: c
    for c in (
        ConfigDef(
            "cleanup.policy",
            "delete",
            _cleanup_policy,
            "delete old segments, compact to the latest value per key, or both",
            "LIST",
        ),
        ConfigDef(
            "compression.type",
            "producer",
            _one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
            "codec of batches the server builds (JSON produce); producer keeps theirs",
            "STRING",
        ),
        ConfigDef(
            "delete.retention.ms",
            "86400000",
            _long(0),
            "how long tombstones survive compaction",
            "LONG",
        ),
        ConfigDef(
            "max.message.bytes",
            "1048588",
            _long(0, 2**31 - 1),
            "largest batch accepted, in bytes",
            "INT",
        ),
        ConfigDef(
            "message.timestamp.after.max.ms",
            "3600000",
            _long(0),
            "how far into the future a CreateTime record's timestamp may be",
            "LONG",
        ),
        ConfigDef(
            "message.timestamp.before.max.ms",
            str(LONG_MAX),
            _long(0),
            "how far into the past a CreateTime record's timestamp may be",
            "LONG",
        ),
        ConfigDef(
            "message.timestamp.type",
            "CreateTime",
            _one_of("CreateTime", "LogAppendTime"),
            "whose clock the records' timestamps come from",
            "STRING",
        ),
        ConfigDef(
            "retention.bytes", "-1", _long(-1), "size retained per partition; -1: no limit", "LONG"
        ),
        ConfigDef("retention.ms", "604800000", _long(-1), "age retained; -1: forever", "LONG"),
        ConfigDef(
            "segment.bytes", "1073741824", _long(14, 2**31 - 1), "segment size to roll at", "INT"
        ),
        ConfigDef("segment.ms", "604800000", _long(1), "segment age to roll at", "LONG"),
    )
}


# The broker config whose value is each topic config's default, by Kafka's broker names.
BROKER_NAMES = {
    "cleanup.policy": "log.cleanup.policy",
    "compression.type": "compression.type",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.type": "log.message.timestamp.type",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
}
TOPIC_NAMES = {broker: topic for topic, broker in BROKER_NAMES.items()}
BROKER_CONFIGS_PK = "brokerconfigs"
CLUSTER_DEFAULT = "default"


def cluster_defaults(broker_configs: Mapping[str, str]) -> dict[str, str]:
    """The topic configs' defaults among the cluster's dynamic broker configs, by topic name."""
    return {TOPIC_NAMES[k]: v for k, v in broker_configs.items() if k in TOPIC_NAMES}


def defaults() -> dict[str, str]:
    return {name: c.default for name, c in CONFIGS.items()}


def validate_configs(configs: Mapping[str, object]) -> dict[str, str]:
    """Normalised string values, as Kafka keeps them; INVALID_CONFIG names what is wrong."""
    out = {}
    for name, raw in configs.items():
        definition = CONFIGS.get(name)
        if definition is None:
            raise InvalidConfigError(f"unknown topic config {name!r}")
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            raise InvalidConfigError(f"{name}: give a string or an integer, not {raw!r}")
        try:
            out[name] = definition.check(str(raw).strip())
        except ValueError as exc:
            raise InvalidConfigError(f"{name}={raw!r}: {exc}") from exc
    return out


def effective(configs: Mapping[str, str], cluster: Mapping[str, str]) -> dict[str, str]:
    return {**defaults(), **cluster, **configs}
