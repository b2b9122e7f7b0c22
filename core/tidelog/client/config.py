"""Kafka's config dicts (``{"linger.ms": 5}``) read into typed dataclasses, shared by the
producer and the consumer: the keys are Kafka's, the values strings or Python values, and an
unknown key is an error rather than a silent no-op."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from tidelog.errors import InvalidRequestError

CONNECTION_KEYS = ("url", "cluster", "sign", "region")
"""The API connection's own keys (as tidelog.client.Http takes them)."""

_C = TypeVar("_C")


def merged(config: Mapping[str, Any] | None, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with Python-spelled ``overrides`` (``linger_ms=0``) over it."""
    return {**(config or {}), **{k.replace("_", "."): v for k, v in overrides.items()}}


def parse(
    cls: type[_C], config: Mapping[str, Any], *, ignored: tuple[str, ...] = ()
) -> tuple[_C, dict[str, Any]]:
    """The dataclass ``cls`` from Kafka's keys, and the connection's keys apart. ``ignored``:
    keys the caller has read itself."""
    connection = {k: config[k] for k in CONNECTION_KEYS if k in config}
    fields = cls.__dataclass_fields__  # type: ignore[attr-defined]
    defaults = cls()
    values: dict[str, Any] = {}
    for key, value in config.items():
        if key in connection or key in ignored:
            continue
        name = key.replace(".", "_")
        if name not in fields:
            raise InvalidRequestError(f"unknown config {key!r}")
        values[name] = coerce(key, value, type(getattr(defaults, name)))
    return cls(**values), connection


def coerce(key: str, value: Any, kind: type) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "false"):
            return str(value).lower() == "true"
    elif kind is int:
        try:
            return int(value)
        except (TypeError, ValueError):
            pass
    else:
        return str(value)
    raise InvalidRequestError(f"{key}={value!r} is not a {kind.__name__}")
