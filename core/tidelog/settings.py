"""Settings read from the environment once, at cold start, and checked there."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tidelog.errors import InternalError

DEFAULT_STAGING_DIR = "/tmp/tidelog-staging"  # noqa: S108 - Lambda's only writable disk
DEFAULT_FLUSH_BYTES = 4 * 1024 * 1024
DEFAULT_FLUSH_IN_FLIGHT = 1  # more: see docs/decisions.md (issue 13)
DEFAULT_CACHE_DIR = "/tmp/tidelog-cache"  # noqa: S108 - Lambda's only writable disk
DEFAULT_CACHE_BYTES = 256 * 1024 * 1024
DEFAULT_GC_GRACE_MS = 60 * 60 * 1000
DEFAULT_ROLL_SETTLE_MS = 60 * 1000  # beyond a produce request's whole life (29 s)
DEFAULT_HOUSEKEEPING_AT_ONCE = 16  # housekeeping's own (tidelog.log.lifecycle.AT_ONCE)
FAULT_PROFILES = ("aws-latency", "nemesis")


class ConfigurationError(InternalError):
    """The function was deployed without a setting it needs, or with one it cannot use."""


@dataclass(frozen=True, slots=True)
class Settings:
    table: str
    """DynamoDB table holding tidelog's metadata (``TIDELOG_TABLE``)."""
    bucket: str
    """S3 bucket holding the log's objects (``TIDELOG_BUCKET``)."""
    staging_dir: Path = Path(DEFAULT_STAGING_DIR)
    """Where flush objects are staged before upload (``TIDELOG_STAGING_DIR``)."""
    group_commit: bool = False
    """Whether concurrent requests share flushes, as a long-running host's do (the agent,
    ``tidelog dev``); off, every request is its own flush, as in Lambda
    (``TIDELOG_GROUP_COMMIT``, on or off)."""
    flush_ms: int = 0
    """With group commit, the least time a flush gathers requests for once the host is idle;
    0: a flush starts as soon as none is in flight (``TIDELOG_FLUSH_MS``)."""
    flush_bytes: int = DEFAULT_FLUSH_BYTES
    """Flush early once this much is waiting (``TIDELOG_FLUSH_BYTES``)."""
    flush_in_flight: int = DEFAULT_FLUSH_IN_FLIGHT
    """Flushes uploading at once, committed in order (``TIDELOG_FLUSH_IN_FLIGHT``, >= 1)."""
    cache_dir: Path = Path(DEFAULT_CACHE_DIR)
    """The fetch path's read-through cache of object bytes (``TIDELOG_CACHE_DIR``)."""
    cache_bytes: int = DEFAULT_CACHE_BYTES
    """Its size bound; 0 turns it off (``TIDELOG_CACHE_BYTES``)."""
    gc_grace_ms: int = DEFAULT_GC_GRACE_MS
    """How long an unreferenced object is kept for readers still on their way to it
    (``TIDELOG_GC_GRACE_MS``)."""
    roll_settle_ms: int = DEFAULT_ROLL_SETTLE_MS
    """How old a committed run must be before the roller takes it (``TIDELOG_ROLL_SETTLE_MS``)."""
    housekeeping_at_once: int = DEFAULT_HOUSEKEEPING_AT_ONCE
    """The S3 calls a housekeeping job keeps out at once: a roll's GETs, the collector's reads
    and deletes (``TIDELOG_HOUSEKEEPING_AT_ONCE``, >= 1; 1 in `tidelog dev`, whose emulator
    serves one call at a time: more would only queue there, ahead of every produce and
    fetch)."""
    assignment_state_machine: str = ""
    """ARN of the consumer groups' assignment state machine
    (``TIDELOG_ASSIGNMENT_STATE_MACHINE``)."""
    initial_rebalance_delay_ms: int = 3000
    """Kafka's group.initial.rebalance.delay.ms (``TIDELOG_INITIAL_REBALANCE_DELAY_MS``)."""
    min_session_timeout_ms: int = 6000
    """Kafka's group.min.session.timeout.ms (``TIDELOG_GROUP_MIN_SESSION_TIMEOUT_MS``)."""
    max_session_timeout_ms: int = 1_800_000
    """Kafka's group.max.session.timeout.ms (``TIDELOG_GROUP_MAX_SESSION_TIMEOUT_MS``)."""
    consumer_session_timeout_ms: int = 45_000
    """Kafka's group.consumer.session.timeout.ms: a member of a consumer-protocol group (KIP-848)
    silent this long is removed (``TIDELOG_CONSUMER_SESSION_TIMEOUT_MS``)."""
    consumer_heartbeat_interval_ms: int = 5_000
    """Kafka's group.consumer.heartbeat.interval.ms, what a settled member is told
    (``TIDELOG_CONSUMER_HEARTBEAT_INTERVAL_MS``)."""
    consumer_min_session_timeout_ms: int = 45_000
    """Kafka's group.consumer.min.session.timeout.ms: the shortest session a group's own
    ``consumer.session.timeout.ms`` may set (``TIDELOG_CONSUMER_MIN_SESSION_TIMEOUT_MS``)."""
    consumer_max_session_timeout_ms: int = 60_000
    """Kafka's group.consumer.max.session.timeout.ms
    (``TIDELOG_CONSUMER_MAX_SESSION_TIMEOUT_MS``)."""
    consumer_min_heartbeat_interval_ms: int = 5_000
    """Kafka's group.consumer.min.heartbeat.interval.ms
    (``TIDELOG_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS``)."""
    consumer_max_heartbeat_interval_ms: int = 15_000
    """Kafka's group.consumer.max.heartbeat.interval.ms
    (``TIDELOG_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS``)."""
    auto_create_topics: bool = False
    """Kafka's auto.create.topics.enable: a Metadata request or an HTTP produce naming an
    unknown topic creates it (``TIDELOG_AUTO_CREATE_TOPICS``, true or false; off in the deployed
    stack, as on MSK and Confluent Cloud, on in `tidelog dev`)."""
    transaction_max_timeout_ms: int = 900_000
    """Kafka's transaction.max.timeout.ms: a producer asking for a longer transaction.timeout.ms
    is refused INVALID_TRANSACTION_TIMEOUT (``TIDELOG_TRANSACTION_MAX_TIMEOUT_MS``)."""
    transaction_cleanup_interval_ms: int = 10_000
    """How often a long-running host (the agent) aborts transactions open past their timeout:
    Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms
    (``TIDELOG_TRANSACTION_CLEANUP_INTERVAL_MS``)."""
    num_partitions: int = 1
    """Kafka's num.partitions: the partition count of a topic created that way, or by a
    CreateTopics that asks for the default (``TIDELOG_NUM_PARTITIONS``, >= 1)."""
    faults: str = ""
    """A simulation profile for the stores: ``aws-latency`` makes every S3 and DynamoDB call
    take as long as on AWS; ``nemesis`` fails and slows them as ``fault_file`` says from moment
    to moment (``TIDELOG_FAULTS``; for `tidelog dev`, the chaos runs and benchmarks, never a
    deployed stack)."""
    fault_seed: int | None = None
    """Its random seed, to replay a run (``TIDELOG_FAULT_SEED``)."""
    fault_file: Path | None = None
    """The ``nemesis`` profile's switch, which `tidelog chaos` rewrites (``TIDELOG_FAULT_FILE``;
    see tidelog.storage.faults.FaultFile)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Settings:
        missing = [name for name in ("TIDELOG_TABLE", "TIDELOG_BUCKET") if not environ.get(name)]
        if missing:
            raise ConfigurationError(f"missing environment variable(s): {', '.join(missing)}")
        settings = cls(
            table=environ["TIDELOG_TABLE"],
            bucket=environ["TIDELOG_BUCKET"],
            staging_dir=Path(environ.get("TIDELOG_STAGING_DIR") or DEFAULT_STAGING_DIR),
            group_commit=_one_of(environ, "TIDELOG_GROUP_COMMIT", ("off", "on")) == "on",
            flush_ms=_number(environ, "TIDELOG_FLUSH_MS", 0),
            flush_bytes=_number(environ, "TIDELOG_FLUSH_BYTES", DEFAULT_FLUSH_BYTES),
            flush_in_flight=_at_least_one(
                environ, "TIDELOG_FLUSH_IN_FLIGHT", DEFAULT_FLUSH_IN_FLIGHT
            ),
            cache_dir=Path(environ.get("TIDELOG_CACHE_DIR") or DEFAULT_CACHE_DIR),
            cache_bytes=_number(environ, "TIDELOG_CACHE_BYTES", DEFAULT_CACHE_BYTES),
            gc_grace_ms=_number(environ, "TIDELOG_GC_GRACE_MS", DEFAULT_GC_GRACE_MS),
            roll_settle_ms=_number(environ, "TIDELOG_ROLL_SETTLE_MS", DEFAULT_ROLL_SETTLE_MS),
            housekeeping_at_once=_at_least_one(
                environ, "TIDELOG_HOUSEKEEPING_AT_ONCE", DEFAULT_HOUSEKEEPING_AT_ONCE
            ),
            assignment_state_machine=environ.get("TIDELOG_ASSIGNMENT_STATE_MACHINE", ""),
            initial_rebalance_delay_ms=_number(environ, "TIDELOG_INITIAL_REBALANCE_DELAY_MS", 3000),
            min_session_timeout_ms=_number(environ, "TIDELOG_GROUP_MIN_SESSION_TIMEOUT_MS", 6000),
            max_session_timeout_ms=_number(
                environ, "TIDELOG_GROUP_MAX_SESSION_TIMEOUT_MS", 1_800_000
            ),
            consumer_session_timeout_ms=_at_least_one(
                environ, "TIDELOG_CONSUMER_SESSION_TIMEOUT_MS", 45_000
            ),
            consumer_heartbeat_interval_ms=_at_least_one(
                environ, "TIDELOG_CONSUMER_HEARTBEAT_INTERVAL_MS", 5_000
            ),
            consumer_min_session_timeout_ms=_at_least_one(
                environ, "TIDELOG_CONSUMER_MIN_SESSION_TIMEOUT_MS", 45_000
            ),
            consumer_max_session_timeout_ms=_at_least_one(
                environ, "TIDELOG_CONSUMER_MAX_SESSION_TIMEOUT_MS", 60_000
            ),
            consumer_min_heartbeat_interval_ms=_at_least_one(
                environ, "TIDELOG_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS", 5_000
            ),
            consumer_max_heartbeat_interval_ms=_at_least_one(
                environ, "TIDELOG_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS", 15_000
            ),
            auto_create_topics=_one_of(environ, "TIDELOG_AUTO_CREATE_TOPICS", ("true", "false"))
            == "true",
            num_partitions=_at_least_one(environ, "TIDELOG_NUM_PARTITIONS", 1),
            transaction_cleanup_interval_ms=_at_least_one(
                environ, "TIDELOG_TRANSACTION_CLEANUP_INTERVAL_MS", 10_000
            ),
            transaction_max_timeout_ms=_at_least_one(
                environ, "TIDELOG_TRANSACTION_MAX_TIMEOUT_MS", 900_000
            ),
            faults=_one_of(environ, "TIDELOG_FAULTS", FAULT_PROFILES),
            fault_seed=_number(environ, "TIDELOG_FAULT_SEED", 0)
            if environ.get("TIDELOG_FAULT_SEED")
            else None,
            fault_file=Path(environ["TIDELOG_FAULT_FILE"])
            if environ.get("TIDELOG_FAULT_FILE")
            else None,
        )
        _check_consumer_bounds(settings)
        return settings


def _check_consumer_bounds(settings: Settings) -> None:
    """Kafka refuses to start when a consumer group default is outside its own bounds."""
    for name, value, low, high in (
        (
            "SESSION_TIMEOUT_MS",
            settings.consumer_session_timeout_ms,
            settings.consumer_min_session_timeout_ms,
            settings.consumer_max_session_timeout_ms,
        ),
        (
            "HEARTBEAT_INTERVAL_MS",
            settings.consumer_heartbeat_interval_ms,
            settings.consumer_min_heartbeat_interval_ms,
            settings.consumer_max_heartbeat_interval_ms,
        ),
    ):
        if not low <= value <= high:
            raise ConfigurationError(
                f"TIDELOG_CONSUMER_{name}={value} must be between "
                f"TIDELOG_CONSUMER_MIN_{name}={low} and TIDELOG_CONSUMER_MAX_{name}={high}"
            )


def _number(environ: Mapping[str, str], name: str, default: int) -> int:
    value = environ.get(name, "")
    if not value:
        return default
    if not value.isdigit():
        raise ConfigurationError(f"{name}={value!r} is not a whole number")
    return int(value)


def _one_of(environ: Mapping[str, str], name: str, allowed: tuple[str, ...]) -> str:
    value = environ.get(name, "")
    if value and value not in allowed:
        raise ConfigurationError(f"{name}={value!r} is not one of {', '.join(allowed)}")
    return value


def _at_least_one(environ: Mapping[str, str], name: str, default: int) -> int:
    value = _number(environ, name, default)
    if value < 1:
        raise ConfigurationError(f"{name}={value} must be at least 1")
    return value
