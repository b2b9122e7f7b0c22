"""BROKER config resources over Kafka's config APIs: what an agent describes, and Kafka's
dynamic broker configs, set for the whole cluster (resource name ``""``) or for one agent (its
node id) by AlterConfigs and IncrementalAlterConfigs.

Three kinds of broker config, as Kafka's ``DynamicBrokerConfig`` sorts them:

- **static**: what the deployment sets (listeners, partition counts, group bounds...). Read
  only, and "Cannot update these configs dynamically", as Kafka says of its own static ones.
- **the topic configs' defaults** (``log.retention.ms``, ``log.cleanup.policy``...): the
  cluster's value is every topic's default where the topic has none of its own
  (tidelog.log.configs), from the next produce and housekeeping on. One agent's own value is
  kept and described, and changes no topic: every agent serves every partition.
- **Kafka's other dynamic configs** (thread pools, the cleaner, connection quotas...): kept,
  checked by type and described as Kafka does, and changing nothing, since an agent has no such
  pools to size. So are names Kafka does not know (its custom configs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tidelog import runtime
from tidelog.errors import InvalidRequestError
from tidelog.kafka.codec import Answer, items
from tidelog.kafka.node import Node
from tidelog.log import configs as topic_configs
from tidelog.log.configs import CLUSTER_DEFAULT, InvalidConfigError

DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5
TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@dataclass(frozen=True)
class Dynamic:
    """One of Kafka's dynamic broker configs: its type, default and lowest value."""

    kind: str
    default: str
    doc: str
    at_least: float | None = None

    def check(self, name: str, value: str) -> str:
        """The value as kept; Kafka's ConfigException wording where it is refused."""
        topic_name = topic_configs.TOPIC_NAMES.get(name)
        if topic_name is not None:
            try:
                topic_configs.CONFIGS[topic_name].check(value.strip())
                return value.strip()  # as given, as Kafka keeps it
            except ValueError as exc:
                raise InvalidRequestError(
                    f"Invalid value {value} for configuration {name}: {exc}"
                ) from None
        if self.kind == "BOOLEAN":
            if value.strip().lower() not in ("true", "false"):
                raise InvalidRequestError(
                    f"Invalid value {value} for configuration {name}: "
                    "Expected value to be either true or false"
                )
            return value.strip().lower()
        if self.kind in ("INT", "LONG", "DOUBLE"):
            try:
                number = float(value) if self.kind == "DOUBLE" else int(value.strip())
            except ValueError:
                raise InvalidRequestError(
                    f"Invalid value {value} for configuration {name}: "
                    f"Not a number of type {self.kind}"
                ) from None
            if self.at_least is not None and number < self.at_least:
                least = int(self.at_least) if self.kind != "DOUBLE" else self.at_least
                raise InvalidRequestError(
                    f"Invalid value {value} for configuration {name}: "
                    f"Value must be at least {least}"
                )
            return value.strip()
        return value


def _topic_defaults() -> dict[str, Dynamic]:
    return {
        broker: Dynamic(
            topic_configs.CONFIGS[topic].kind,
            topic_configs.CONFIGS[topic].default,
            f"the default of the topic config {topic}: " + topic_configs.CONFIGS[topic].doc,
        )
        for topic, broker in topic_configs.BROKER_NAMES.items()
    }


_KEPT = "kept and described; an agent has no "
DYNAMIC: Mapping[str, Dynamic] = {
    **_topic_defaults(),
    "background.threads": Dynamic("INT", "10", _KEPT + "background thread pool", 1),
    "log.cleaner.backoff.ms": Dynamic("LONG", "15000", _KEPT + "log cleaner", 0),
    "log.cleaner.dedupe.buffer.size": Dynamic("LONG", "134217728", _KEPT + "log cleaner"),
    "log.cleaner.io.buffer.size": Dynamic("INT", "524288", _KEPT + "log cleaner", 0),
    "log.cleaner.io.max.bytes.per.second": Dynamic(
        "DOUBLE", "1.7976931348623157E308", _KEPT + "log cleaner"
    ),
    "log.cleaner.threads": Dynamic("INT", "1", _KEPT + "log cleaner", 0),
    "max.connection.creation.rate": Dynamic("INT", "2147483647", _KEPT + "connection quota", 0),
    "max.connections": Dynamic("INT", "2147483647", _KEPT + "connection quota", 0),
    "max.connections.per.ip": Dynamic("INT", "2147483647", _KEPT + "connection quota", 0),
    "max.connections.per.ip.overrides": Dynamic("STRING", "", _KEPT + "connection quota"),
    "metric.reporters": Dynamic("LIST", "", _KEPT + "JMX metric reporters"),
    "min.insync.replicas": Dynamic("INT", "1", _KEPT + "replicas: S3 keeps the copies", 1),
    "num.io.threads": Dynamic("INT", "8", _KEPT + "I/O thread pool", 1),
    "num.network.threads": Dynamic("INT", "3", _KEPT + "network thread pool", 1),
    "num.recovery.threads.per.data.dir": Dynamic("INT", "2", _KEPT + "log directories", 1),
    "num.replica.fetchers": Dynamic("INT", "1", _KEPT + "replica fetchers"),
    "producer.id.expiration.ms": Dynamic("INT", "86400000", _KEPT + "producer state cache", 1),
    "sasl.kerberos.min.time.before.relogin": Dynamic("LONG", "60000", _KEPT + "Kerberos login"),
    "transaction.partition.verification.enable": Dynamic(
        "BOOLEAN", "true", _KEPT + "partition verification: every append checks its producer"
    ),
    "unclean.leader.election.enable": Dynamic(
        "BOOLEAN", "false", _KEPT + "leader elections: S3 keeps the copies"
    ),
}
_CUSTOM = Dynamic("STRING", "", "a config Kafka does not define, kept and described")


# What an agent describes -------------------------------------------------------------------


def describe(name: str, me: Node, live: Callable[[], tuple[Node, ...]]) -> list[Answer]:
    """The cluster's dynamic defaults (``""``), or everything one agent has: its static
    configs, then each dynamic one from its own value, the cluster's or Kafka's default, with
    those as its synonyms in that order, as Kafka lists them."""
    store = runtime.topics().broker_configs
    cluster = store.get(CLUSTER_DEFAULT)
    if name == "":
        return sorted(
            (_dynamic(k, [(k, v, DYNAMIC_DEFAULT_BROKER_CONFIG)]) for k, v in cluster.items()),
            key=lambda e: str(e["name"]),
        )
    node = _broker(name, me, live, describing=True)
    own = store.get(str(node.node_id))
    entries = static(node)
    for config in sorted(DYNAMIC.keys() | cluster.keys() | own.keys()):
        synonyms = [
            (config, values[config], source)
            for values, source in (
                (own, DYNAMIC_BROKER_CONFIG),
                (cluster, DYNAMIC_DEFAULT_BROKER_CONFIG),
            )
            if config in values
        ]
        if config in DYNAMIC:
            synonyms.append((config, DYNAMIC[config].default, DEFAULT_CONFIG))
        entries.append(_dynamic(config, synonyms))
    return sorted(entries, key=lambda e: str(e["name"]))


def _dynamic(name: str, synonyms: list[tuple[str, str, int]]) -> Answer:
    definition = DYNAMIC.get(name, _CUSTOM)
    return {
        "name": name,
        "value": synonyms[0][1],
        "read_only": False,
        "config_source": synonyms[0][2],
        "is_sensitive": False,
        "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in synonyms],
        "config_type": TYPES[definition.kind],
        "documentation": definition.doc,
    }


def static(node: Node) -> list[Answer]:
    """What this agent would say in server.properties: its deployment's settings."""
    settings = runtime.settings()
    listener = ",".join(
        f"{name}://{node.host}:{port}"
        for name, port in node.listeners or (("PLAINTEXT", node.port),)
    )
    return [
        _static("advertised.listeners", listener, "LIST", "where clients reach this agent"),
        _static(
            "auto.create.topics.enable",
            str(settings.auto_create_topics).lower(),
            "BOOLEAN",
            "Metadata and HTTP produce create unknown topics (TIDELOG_AUTO_CREATE_TOPICS)",
        ),
        _static("broker.id", str(node.node_id), "INT", "this agent's node id, from the registry"),
        _static(
            "default.replication.factor",
            "1",
            "INT",
            "one copy as Kafka counts them: S3 keeps the data's redundancy",
        ),
        _static("delete.topic.enable", "true", "BOOLEAN", "DeleteTopics deletes topics"),
        _static(
            "group.initial.rebalance.delay.ms",
            str(settings.initial_rebalance_delay_ms),
            "INT",
            "how long a new group waits for more members before its first assignment",
        ),
        _static(
            "group.max.session.timeout.ms",
            str(settings.max_session_timeout_ms),
            "INT",
            "the longest session timeout a member may ask for",
        ),
        _static(
            "group.min.session.timeout.ms",
            str(settings.min_session_timeout_ms),
            "INT",
            "the shortest session timeout a member may ask for",
        ),
        _static("listeners", listener, "LIST", "where this agent listens"),
        _static("log.dirs", log_dir(), "STRING", "the one log directory: the cluster's bucket"),
        _static(
            "num.partitions",
            str(settings.num_partitions),
            "INT",
            "partitions of a topic created without a count (TIDELOG_NUM_PARTITIONS)",
        ),
        _static(
            "offsets.topic.replication.factor",
            "1",
            "SHORT",
            "group offsets live in DynamoDB, not in a topic",
        ),
    ]


STATIC = frozenset(
    {
        "advertised.listeners",
        "auto.create.topics.enable",
        "broker.id",
        "controller.listener.names",
        "controller.quorum.voters",
        "default.replication.factor",
        "delete.topic.enable",
        "group.initial.rebalance.delay.ms",
        "group.max.session.timeout.ms",
        "group.min.session.timeout.ms",
        "listeners",
        "log.dir",
        "log.dirs",
        "node.id",
        "num.partitions",
        "offsets.topic.replication.factor",
        "process.roles",
    }
)


def log_dir() -> str:
    """The one log directory of every agent: where the cluster's objects are."""
    return f"s3://{runtime.settings().bucket}"


def _static(name: str, value: str, kind: str, doc: str) -> Answer:
    return {
        "name": name,
        "value": value,
        "read_only": True,
        "config_source": STATIC_BROKER_CONFIG,
        "is_sensitive": False,
        "synonyms": [{"name": name, "value": value, "source": STATIC_BROKER_CONFIG}],
        "config_type": TYPES[kind],
        "documentation": doc,
    }


def _broker(name: str, me: Node, live: Callable[[], tuple[Node, ...]], *, describing: bool) -> Node:
    """The agent a broker resource names: this one or another live one, which describes the
    same configs but its own listeners."""
    if not name.lstrip("-").isdigit():
        noun = "Broker" if describing else "Node"
        raise InvalidRequestError(f"{noun} id must be an integer, but it is: {name}")
    nodes = {str(n.node_id): n for n in (me, *live())}
    if name not in nodes:
        ids = ", ".join(sorted(nodes, key=int))
        raise InvalidRequestError(
            f"Unexpected broker id, expected one of the live agents ({ids}) or empty string, "
            f"but received {name}"
        )
    return nodes[name]


# AlterConfigs and IncrementalAlterConfigs ---------------------------------------------------


def replace_all(
    name: str, resource: Any, validate_only: bool, me: Node, live: Callable[[], tuple[Node, ...]]
) -> None:
    """AlterConfigs: the resource's dynamic configs become exactly those given."""
    wanted = {str(c.name): c.value for c in items(resource.configs)}
    for config, value in wanted.items():
        if value is None:
            raise InvalidRequestError(f"Null value not supported for : {config}")
    _alter(name, [(k, SET, v) for k, v in wanted.items()], validate_only, me, live, whole=True)


def alter_incrementally(
    name: str, resource: Any, validate_only: bool, me: Node, live: Callable[[], tuple[Node, ...]]
) -> None:
    """IncrementalAlterConfigs: set, delete (back to the next level down), append to or
    subtract from a list."""
    ops = [(str(c.name), int(c.config_operation), c.value) for c in items(resource.configs)]
    if any(n > 1 for n in Counter(k for k, _, _ in ops).values()):
        raise InvalidRequestError("Error due to duplicate config keys")
    _alter(name, ops, validate_only, me, live, whole=False)


def _alter(
    name: str,
    ops: list[tuple[str, int, str | None]],
    validate_only: bool,
    me: Node,
    live: Callable[[], tuple[Node, ...]],
    *,
    whole: bool,
) -> None:
    key = CLUSTER_DEFAULT if name == "" else str(_broker(name, me, live, describing=False).node_id)
    fixed = sorted(k for k, _, _ in ops if k in STATIC)
    if fixed:
        raise InvalidRequestError(
            f"Cannot update these configs dynamically: [{', '.join(fixed)}] "
            "(an agent's static configs come from its deployment)"
        )
    for config, op, value in ops:
        if op not in (SET, DELETE, APPEND, SUBTRACT):
            raise InvalidRequestError(f"{config}: unknown config operation {op}")
        if op in (SET, APPEND, SUBTRACT) and value is None:
            raise InvalidRequestError(f"Null value not supported for : {config}")
        if op in (APPEND, SUBTRACT) and DYNAMIC.get(config, _CUSTOM).kind != "LIST":
            verb = "append" if op == APPEND else "subtract"
            raise InvalidConfigError(f"Config value {verb} is not allowed for config key: {config}")
    store = runtime.topics().broker_configs
    cluster = store.get(CLUSTER_DEFAULT)

    def change(current: dict[str, str]) -> dict[str, str]:
        new = {} if whole else dict(current)
        for config, op, value in ops:
            if op == DELETE:
                new.pop(config, None)
                continue
            assert value is not None
            given = value
            if op in (APPEND, SUBTRACT):
                below = cluster if key != CLUSTER_DEFAULT else {}
                was = new.get(config) or below.get(config) or DYNAMIC[config].default
                given = listed(was, value, append=op == APPEND)
            new[config] = DYNAMIC.get(config, _CUSTOM).check(config, given)
        return new

    if validate_only:
        change(store.get(key))
        return
    after = store.alter(key, change)
    before = topic_configs.cluster_defaults(cluster)
    if key == CLUSTER_DEFAULT and topic_configs.cluster_defaults(after) != before:
        runtime.topics().cluster_defaults_changed(before)  # reads every topic: only when due


def listed(current: str, value: str, *, append: bool) -> str:
    """A list config's value after Kafka's APPEND (the values not in it yet, at its end) or
    SUBTRACT (the values given taken out) of ``value``."""
    have = [v.strip() for v in current.split(",") if v.strip()]
    given = [v.strip() for v in value.split(",") if v.strip()]
    if append:
        return ",".join(have + [v for v in given if v not in have])
    return ",".join(v for v in have if v not in given)
