"""Kafka's broker settings for `tidelog dev`, under Kafka's names, set the ways test suites set
a broker's: ``--override name=value`` (as ``kafka-server-start.sh`` takes them), or the
environment as Apache Kafka's container image reads it (``KAFKA_`` and the name in capitals,
dots as underscores: ``KAFKA_NUM_PARTITIONS=3``), or tidelog's own variable for the setting
(``TIDELOG_NUM_PARTITIONS``). A flag wins over the environment, and ``KAFKA_`` over
``TIDELOG_``; any of them over the template's default.

Only the settings below are taken: a name tidelog does not serve, or a bad value, is an error
at start, never ignored. Settings of the cluster become its functions' and agent's settings
(their ``TIDELOG_`` variables); settings of the Kafka port (listeners, SASL, the authorizer)
are the in-process agent's, as `tidelog agent` takes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from tidelog.errors import TidelogError
from tidelog.kafka.agent import check_sasl
from tidelog.kafka.authorizer import AuthorizerSettings, parse_super_users
from tidelog.kafka.listeners import Listener, parse


class BrokerSettingError(ValueError):
    """A broker setting tidelog dev does not take, or a value it cannot."""


def _count(value: str) -> str:
    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError("a whole number, 1 or more")
    return str(int(value))


def _replication(value: str) -> str:
    if value.strip() != "-1":
        _count(value)
    return value.strip()


def _ms(value: str) -> str:
    if not value.strip().isdigit():
        raise ValueError("milliseconds, 0 or more")
    return str(int(value))


def _flag(value: str) -> str:
    if value.strip().lower() not in ("true", "false"):
        raise ValueError("true or false")
    return value.strip().lower()


def _text(value: str) -> str:
    return value.strip()


@dataclass(frozen=True)
class Setting:
    check: Callable[[str], str]  # the value as tidelog takes it; ValueError saying what it wants
    env: str | None = None  # the TIDELOG_ variable it becomes; None: the Kafka port's own
    note: str = ""


SETTINGS: Mapping[str, Setting] = {
    "num.partitions": Setting(_count, "TIDELOG_NUM_PARTITIONS"),
    "auto.create.topics.enable": Setting(_flag, "TIDELOG_AUTO_CREATE_TOPICS"),
    "default.replication.factor": Setting(
        _replication, note="accepted: S3 keeps every partition's copies"
    ),
    "offsets.topic.replication.factor": Setting(
        _replication, note="accepted: offsets are kept in DynamoDB"
    ),
    "transaction.state.log.replication.factor": Setting(
        _replication, note="accepted: transactions are kept in DynamoDB"
    ),
    "group.min.session.timeout.ms": Setting(_ms, "TIDELOG_GROUP_MIN_SESSION_TIMEOUT_MS"),
    "group.max.session.timeout.ms": Setting(_ms, "TIDELOG_GROUP_MAX_SESSION_TIMEOUT_MS"),
    "group.consumer.session.timeout.ms": Setting(_ms, "TIDELOG_CONSUMER_SESSION_TIMEOUT_MS"),
    "group.consumer.heartbeat.interval.ms": Setting(_ms, "TIDELOG_CONSUMER_HEARTBEAT_INTERVAL_MS"),
    "group.consumer.min.session.timeout.ms": Setting(
        _ms, "TIDELOG_CONSUMER_MIN_SESSION_TIMEOUT_MS"
    ),
    "group.consumer.max.session.timeout.ms": Setting(
        _ms, "TIDELOG_CONSUMER_MAX_SESSION_TIMEOUT_MS"
    ),
    "group.consumer.min.heartbeat.interval.ms": Setting(
        _ms, "TIDELOG_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS"
    ),
    "group.consumer.max.heartbeat.interval.ms": Setting(
        _ms, "TIDELOG_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS"
    ),
    "transaction.max.timeout.ms": Setting(_ms, "TIDELOG_TRANSACTION_MAX_TIMEOUT_MS"),
    "listeners": Setting(_text),
    "sasl.enabled.mechanisms": Setting(_text),
    "authorizer.class.name": Setting(_text),
    "super.users": Setting(_text),
    "allow.everyone.if.no.acl.found": Setting(_flag),
}


@dataclass(frozen=True)
class Given:
    value: str
    source: str  # where it came from, for the banner


def gather(overrides: Iterable[str], environ: Mapping[str, str]) -> dict[str, Given]:
    """The broker settings given, by Kafka's name, each checked."""
    given: dict[str, Given] = {}
    for name, setting in SETTINGS.items():
        for variable in (setting.env, container_variable(name)):
            if variable is not None and environ.get(variable, "") != "":
                given[name] = Given(environ[variable], variable)
    for override in overrides:
        name, sep, value = override.partition("=")
        name = name.strip()
        if not sep:
            raise BrokerSettingError(f"--override {override!r}: give name=value")
        if name not in SETTINGS:
            raise BrokerSettingError(
                f"--override {name}: tidelog dev takes {', '.join(sorted(SETTINGS))}"
            )
        given[name] = Given(value, "--override")
    checked = {}
    for name, found in given.items():
        try:
            checked[name] = Given(SETTINGS[name].check(found.value), found.source)
        except ValueError as exc:
            raise BrokerSettingError(f"{name}={found.value!r} ({found.source}): {exc}") from exc
    return checked


def container_variable(name: str) -> str:
    """Apache Kafka's container image's variable for a setting: KAFKA_NUM_PARTITIONS."""
    return "KAFKA_" + name.upper().replace(".", "_")


def environment(given: Mapping[str, Given]) -> dict[str, str]:
    """The functions' and agent's settings the broker settings become."""
    out = {}
    for name, found in given.items():
        env = SETTINGS[name].env
        if env is not None:
            out[env] = found.value
    return out


@dataclass(frozen=True)
class KafkaPort:
    """The in-process agent's listeners, SASL mechanisms and authorizer."""

    listeners: tuple[Listener, ...] | None
    sasl_mechanisms: tuple[str, ...]
    authorizer: AuthorizerSettings | None


DEFAULT_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def kafka_port(given: Mapping[str, Given]) -> KafkaPort:
    def value(name: str) -> str:
        found = given.get(name)
        return found.value if found is not None else ""

    try:
        listeners = parse(value("listeners")) if value("listeners") else None
        mechanisms = tuple(m.strip() for m in value("sasl.enabled.mechanisms").split(",") if m)
        check_sasl(mechanisms or DEFAULT_MECHANISMS)
        super_users = parse_super_users(value("super.users"))
    except (ValueError, TidelogError) as exc:
        raise BrokerSettingError(str(exc)) from exc
    everyone = value("allow.everyone.if.no.acl.found") == "true"
    if not value("authorizer.class.name"):
        if super_users or everyone:
            raise BrokerSettingError(
                "super.users and allow.everyone.if.no.acl.found need authorizer.class.name"
            )
        authorizer = None
    else:  # Kafka's StandardAuthorizer (or the older AclAuthorizer): tidelog's ACLs, either way
        authorizer = AuthorizerSettings(
            super_users=super_users, allow_everyone_if_no_acl_found=everyone
        )
    return KafkaPort(listeners, mechanisms or DEFAULT_MECHANISMS, authorizer)


def banner(given: Mapping[str, Given]) -> str:
    """What the broker settings are, as `tidelog dev` prints them at start."""
    if not given:
        return ""
    lines = [
        f"    {name}={found.value}   ({found.source}"
        + (f"; {SETTINGS[name].note}" if SETTINGS[name].note else "")
        + ")"
        for name, found in sorted(given.items())
    ]
    return "  Broker settings\n" + "\n".join(lines) + "\n"
