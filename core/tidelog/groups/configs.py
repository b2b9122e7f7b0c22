"""A group's own configs (Kafka's GroupConfig, KIP-848): the session timeout and heartbeat
interval of its consumer-protocol members, set over IncrementalAlterConfigs on a GROUP resource.

Kept apart from the group, as Kafka keeps them: they may be set before the group exists, and
deleting the group leaves them. Each is checked against the broker's bounds
(``group.consumer.min/max.*``) when it is set, and a group's session must stay longer than its
heartbeat interval. A change reaches the group's next heartbeat within a second
(tidelog.storage.configs).

Items (one table)::

    ("groupconfigs", <group>)    {"configs": {name: value}}, absent when none is set
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from tidelog.groups.consumer.heartbeat import Config
from tidelog.log.configs import InvalidConfigError

PK = "groupconfigs"
SESSION = "consumer.session.timeout.ms"
HEARTBEAT = "consumer.heartbeat.interval.ms"

# Kafka's other group configs, refused by name with the reason rather than as unknown.
UNSERVED = {
    "consumer.assignment.interval.ms": "tidelog assigns each group epoch as it comes, in the "
    "assignment state machine, so there is no interval between assignments to set",
    "share.": "share groups (KIP-932) are not served",
    "streams.": "streams groups (KIP-1071) are not served; Kafka Streams runs as classic groups",
}


@dataclass(frozen=True)
class Bounds:
    """Kafka's broker configs bounding what a group may set (tidelog.settings checks the
    defaults against them at start)."""

    min_session_timeout_ms: int = 45_000  # group.consumer.min.session.timeout.ms
    max_session_timeout_ms: int = 60_000  # group.consumer.max.session.timeout.ms
    min_heartbeat_interval_ms: int = 5_000  # group.consumer.min.heartbeat.interval.ms
    max_heartbeat_interval_ms: int = 15_000  # group.consumer.max.heartbeat.interval.ms

    def ranges(self, config: Config) -> tuple[tuple[str, int, int, int], ...]:
        return (
            (
                SESSION,
                config.session_timeout_ms,
                self.min_session_timeout_ms,
                self.max_session_timeout_ms,
            ),
            (
                HEARTBEAT,
                config.heartbeat_interval_ms,
                self.min_heartbeat_interval_ms,
                self.max_heartbeat_interval_ms,
            ),
        )


@dataclass(frozen=True)
class Definition:
    name: str
    broker_name: str  # the broker config whose value it overrides
    doc: str


DEFINITIONS = {
    SESSION: Definition(
        SESSION,
        "group.consumer.session.timeout.ms",
        "The timeout to detect client failures when using the consumer group protocol.",
    ),
    HEARTBEAT: Definition(
        HEARTBEAT,
        "group.consumer.heartbeat.interval.ms",
        "The heartbeat interval given to the members of a consumer group.",
    ),
}


def _bound(name: str, side: str) -> str:
    family, rest = name.split(".", 1)
    return f"{family}.{side}.{rest}"


def check_name(name: str) -> None:
    if name in DEFINITIONS:
        return
    for prefix, why in UNSERVED.items():
        if name == prefix or (prefix.endswith(".") and name.startswith(prefix)):
            raise InvalidConfigError(f"Group config {name} is not served: {why}")
    raise InvalidConfigError(f"Unknown group config name: {name}")


def validated(configs: Mapping[str, str], base: Config, bounds: Bounds) -> dict[str, str]:
    """The configs as stored, each value an integer within the bounds, and the group's session
    (its own or the default) longer than its heartbeat interval, as Kafka checks them."""
    values: dict[str, str] = {}
    for name, value in configs.items():
        check_name(name)
        try:
            values[name] = str(int(str(value).strip()))
        except ValueError:
            raise InvalidConfigError(
                f"Invalid value {value} for configuration {name}: Not a number of type INT"
            ) from None
    effective = applied(values, base)
    for config, number, low, high in bounds.ranges(effective):
        if config not in values:
            continue
        if number < low:
            raise InvalidConfigError(
                f"{config} must be greater than or equal to group.{_bound(config, 'min')}"
            )
        if number > high:
            raise InvalidConfigError(
                f"{config} must be less than or equal to group.{_bound(config, 'max')}"
            )
    if effective.session_timeout_ms <= effective.heartbeat_interval_ms:
        raise InvalidConfigError(f"{SESSION} must be greater than {HEARTBEAT}")
    return values


def applied(configs: Mapping[str, str], base: Config) -> Config:
    """The broker's consumer-group config with a group's own values in place."""
    return replace(
        base,
        session_timeout_ms=int(configs.get(SESSION, base.session_timeout_ms)),
        heartbeat_interval_ms=int(configs.get(HEARTBEAT, base.heartbeat_interval_ms)),
    )
