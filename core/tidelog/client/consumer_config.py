"""Kafka's consumer configs, checked, with Kafka's defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tidelog.client import config as settings
from tidelog.errors import InvalidRequestError

FETCH_MAX_BYTES = 4 * 1024 * 1024  # the API's bound on one fetch

_RESETS = {
    "earliest": "earliest",
    "smallest": "earliest",
    "beginning": "earliest",
    "latest": "latest",
    "largest": "latest",
    "end": "latest",
    "none": "none",
    "error": "none",
}
_STRATEGIES = {"range", "roundrobin", "sticky", "cooperative-sticky"}


@dataclass(frozen=True)
class ConsumerConfig:
    """Kafka's consumer configs, with Kafka's defaults."""

    group_id: str = ""
    group_instance_id: str = ""
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5_000
    auto_offset_reset: str = "latest"
    partition_assignment_strategy: str = "range,cooperative-sticky"
    fetch_min_bytes: int = 1
    fetch_max_bytes: int = FETCH_MAX_BYTES
    max_partition_fetch_bytes: int = 1_048_576
    fetch_max_wait_ms: int = 500
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    isolation_level: str = "read_committed"  # librdkafka's default (Java's: read_uncommitted)
    group_protocol: str = "classic"  # or "consumer" (KIP-848); Kafka 4's clients default so too
    group_remote_assignor: str = ""  # the consumer protocol's assignor; "": the group's choice

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> tuple[ConsumerConfig, dict[str, Any]]:
        parsed, connection = settings.parse(cls, config, ignored=("client.id", "on_commit"))
        reset = _RESETS.get(parsed.auto_offset_reset.lower())
        if reset is None:
            raise InvalidRequestError(
                f"auto.offset.reset={parsed.auto_offset_reset!r}: earliest, latest or none"
            )
        if parsed.isolation_level not in ("read_committed", "read_uncommitted"):
            raise InvalidRequestError(
                f"isolation.level={parsed.isolation_level!r}: read_committed or read_uncommitted"
            )
        if parsed.group_protocol not in ("classic", "consumer"):
            raise InvalidRequestError(
                f"group.protocol={parsed.group_protocol!r}: classic or consumer"
            )
        if parsed.group_remote_assignor not in ("", "uniform", "range"):
            raise InvalidRequestError(
                f"group.remote.assignor={parsed.group_remote_assignor!r}: uniform or range",
                kafka_error="UNSUPPORTED_ASSIGNOR",
            )
        strategies = parsed.assignors()
        if not strategies or not set(strategies) <= _STRATEGIES:
            raise InvalidRequestError(
                f"partition.assignment.strategy={parsed.partition_assignment_strategy!r}: "
                f"a list of {sorted(_STRATEGIES)}"
            )
        heartbeat = parsed.heartbeat_interval_ms
        if "heartbeat.interval.ms" not in config:
            # Kafka's 3 s, but never over a third of the session: a shorter session set alone
            # still has three heartbeats to miss before it runs out.
            heartbeat = min(heartbeat, parsed.session_timeout_ms // 3)
        if not 0 < heartbeat < parsed.session_timeout_ms:
            raise InvalidRequestError("heartbeat.interval.ms must be below session.timeout.ms")
        return cls(
            **{
                **parsed.__dict__,
                "auto_offset_reset": reset,
                "fetch_max_bytes": min(parsed.fetch_max_bytes, FETCH_MAX_BYTES),
                "heartbeat_interval_ms": heartbeat,
            }
        ), connection

    def assignors(self) -> list[str]:
        return [s.strip() for s in self.partition_assignment_strategy.split(",") if s.strip()]
