"""GROUP config resources (Kafka 3.8+) over Kafka's config APIs: a group's own
``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms``
(tidelog.groups.configs), described with the broker value each one overrides as its synonym,
and changed by AlterConfigs and IncrementalAlterConfigs as Kafka changes them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from tidelog import runtime
from tidelog.errors import InvalidRequestError
from tidelog.groups import configs as group_configs
from tidelog.groups.consumer.heartbeat import Config
from tidelog.groups.model import validate_group_id
from tidelog.kafka.codec import Answer, items
from tidelog.log.configs import InvalidConfigError

GROUP_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 8, 4, 5
INT = 3  # ConfigType
SET, DELETE = 0, 1
_KAFKA = Config()  # Kafka's own defaults
KAFKA_DEFAULTS = {
    group_configs.SESSION: _KAFKA.session_timeout_ms,
    group_configs.HEARTBEAT: _KAFKA.heartbeat_interval_ms,
}


def describe(name: str) -> list[Answer]:
    """Each config a group may set, its own value or the broker's."""
    if not name:
        raise InvalidRequestError("Group name must not be empty")
    own = runtime.group_configs().get(validate_group_id(name))
    broker = runtime.consumer_group_config()
    broker_values = {
        group_configs.SESSION: broker.session_timeout_ms,
        group_configs.HEARTBEAT: broker.heartbeat_interval_ms,
    }
    answers = []
    for config, definition in sorted(group_configs.DEFINITIONS.items()):
        synonyms = [
            {
                "name": definition.broker_name,
                "value": str(KAFKA_DEFAULTS[config]),
                "source": DEFAULT_CONFIG,
            }
        ]
        if broker_values[config] != KAFKA_DEFAULTS[config]:
            synonyms.insert(
                0,
                {
                    "name": definition.broker_name,
                    "value": str(broker_values[config]),
                    "source": STATIC_BROKER_CONFIG,
                },
            )
        if config in own:
            synonyms.insert(0, {"name": config, "value": own[config], "source": GROUP_CONFIG})
        answers.append(
            {
                "name": config,
                "value": synonyms[0]["value"],
                "read_only": False,
                "config_source": synonyms[0]["source"],
                "is_sensitive": False,
                "synonyms": synonyms,
                "config_type": INT,
                "documentation": definition.doc,
            }
        )
    return answers


def replace_all(name: str, resource: Any, validate_only: bool) -> None:
    """AlterConfigs: the group's configs become exactly those given."""
    wanted = {str(c.name): c.value for c in items(resource.configs)}
    for config, value in wanted.items():
        if value is None:
            raise InvalidRequestError(f"Null value not supported for : {config}")
    _alter(name, lambda _: wanted, validate_only)


def alter_incrementally(name: str, resource: Any, validate_only: bool) -> None:
    """IncrementalAlterConfigs: SET or DELETE (back to the broker's); a group config is not a
    list, so APPEND and SUBTRACT are refused, as Kafka refuses them."""
    ops = [(str(c.name), int(c.config_operation), c.value) for c in items(resource.configs)]
    if any(n > 1 for n in Counter(k for k, _, _ in ops).values()):
        raise InvalidRequestError("Error due to duplicate config keys")
    for config, op, value in ops:
        group_configs.check_name(config)
        if op == SET and value is None:
            raise InvalidRequestError(f"Null value not supported for : {config}")
        if op not in (SET, DELETE):
            kind = {2: "APPEND", 3: "SUBTRACT"}.get(op)
            if kind is None:
                raise InvalidRequestError(f"{config}: unknown config operation {op}")
            raise InvalidConfigError(f"Can't {kind} to key {config} because its type is not LIST.")

    def change(current: dict[str, str]) -> dict[str, str]:
        for config, op, value in ops:
            if op == DELETE:
                current.pop(config, None)
            else:
                current[config] = str(value)
        return current

    _alter(name, change, validate_only)


def _alter(
    name: str, change: Callable[[dict[str, str]], dict[str, str]], validate_only: bool
) -> None:
    if not name:
        raise InvalidRequestError("Default group resources are not allowed.")
    validate_group_id(name)
    base, bounds = runtime.consumer_group_config(), runtime.consumer_group_bounds()

    def checked(current: dict[str, str]) -> dict[str, str]:
        return group_configs.validated(change(current), base, bounds)

    if validate_only:
        checked(runtime.group_configs().get(name))
    else:
        runtime.group_configs().alter(name, checked)


def listed() -> list[Answer]:
    """ListConfigResources: the groups with configs of their own, as Kafka lists them."""
    return [{"resource_name": g, "resource_type": 32} for g in runtime.group_configs().names()]
