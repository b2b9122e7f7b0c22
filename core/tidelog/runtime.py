"""What a function's process builds once and reuses across invocations: settings, stores, the
write path.

Handlers ask for these; tests and ``tidelog dev`` point them elsewhere through the environment
and ``reset()``.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from tidelog import aws, principals
from tidelog.log import claims
from tidelog.log.feed import CommitFeed
from tidelog.log.topics import Topic, TopicCache, Topics, UnknownTopicError
from tidelog.log.write.groupcommit import GroupCommitter
from tidelog.log.write.plan import AppendResult
from tidelog.log.write.staging import StagingArea
from tidelog.log.write.writer import AppendRequest, Writer, recover_staging
from tidelog.partitioner import DefaultPartitioner
from tidelog.settings import ConfigurationError, Settings
from tidelog.storage import MetadataStore, ObjectStore
from tidelog.storage.shared import SharedGetsStore

if TYPE_CHECKING:
    from tidelog.groups.configs import Bounds
    from tidelog.groups.consumer.coordinator import ConsumerCoordinator
    from tidelog.groups.consumer.heartbeat import Config
    from tidelog.groups.coordinator import Coordinator
    from tidelog.log.lifecycle.housekeeping import Housekeeper
    from tidelog.log.read.fetch import LogReader
    from tidelog.storage.configs import ConfigItems
    from tidelog.storage.faults import FaultPlan
    from tidelog.transactions.coordinator import TransactionCoordinator

_T = TypeVar("_T")
_UNSET: Any = object()
_building = threading.RLock()


class _Once(Generic[_T]):
    """What ``build`` returns, built once per process even when many threads ask at once (an
    agent's first requests do: two read caches would empty each other's directory)."""

    def __init__(self, build: Callable[[], _T]) -> None:
        self._build = build
        self._value: _T = _UNSET
        functools.update_wrapper(self, build)

    def __call__(self) -> _T:
        value = self._value
        if value is _UNSET:
            with _building:  # re-entrant: builders ask for what they are built from
                if self._value is _UNSET:
                    self._value = self._build()
                value = self._value
        return value

    def cache_clear(self) -> None:
        self._value = _UNSET


def _once(build: Callable[[], _T]) -> _Once[_T]:
    return _Once(build)


# Each function imports only its own path: the read path, housekeeping and groups are imported
# when first asked for, so a produce cold start never pays for them.


@_once
def settings() -> Settings:
    return Settings.from_env()


# The adapters import boto3: they are imported when first needed, not when a handler loads.


@_once
def metadata_store() -> MetadataStore:
    from tidelog.storage.dynamodb import DynamoMetadataStore  # noqa: PLC0415 - cold start

    store: MetadataStore = DynamoMetadataStore(aws.client("dynamodb"), settings().table)
    plan = fault_plan()
    if plan is not None:
        from tidelog.storage.faults import FaultyMetadataStore  # noqa: PLC0415

        store = FaultyMetadataStore(store, plan)
    # Reads made at once go together (a rebalanced group's members all read their offsets
    # and heads): in tidelog dev only those made in the same role, as the emulator checks.
    return SharedGetsStore(store, principals.acting_for.get)


@_once
def object_store() -> ObjectStore:
    from tidelog.storage.s3 import S3ObjectStore  # noqa: PLC0415 - cold start

    store: ObjectStore = S3ObjectStore(aws.client("s3"), settings().bucket)
    plan = fault_plan()
    if plan is not None:
        from tidelog.storage.faults import FaultyObjectStore  # noqa: PLC0415

        store = FaultyObjectStore(store, plan)
    return store


@_once
def fault_plan() -> FaultPlan | None:
    """The stores' simulation profile (``TIDELOG_FAULTS``), shared by both, or None."""
    config = settings()
    if not config.faults:
        return None
    from tidelog.storage.faults import FaultFile, FaultPlan  # noqa: PLC0415

    seed = config.fault_seed
    if seed is None:
        seed = random.randrange(2**32)  # noqa: S311 - a seed to replay, not a secret
    logging.getLogger(__name__).warning(
        "stores under the %s profile (TIDELOG_FAULT_SEED=%d replays it)", config.faults, seed
    )
    if config.faults == "nemesis":
        if config.fault_file is None:
            raise ConfigurationError("TIDELOG_FAULTS=nemesis needs TIDELOG_FAULT_FILE")
        return FaultPlan.controlled(seed, FaultFile(config.fault_file))
    return FaultPlan.aws_latency(seed)


def _clock_skew_ns() -> int:
    """How far this process's wall clock is set off (``TIDELOG_CLOCK_SKEW_MS``, may be
    negative): chaos runs skew one agent's clock, as a host's clock drifts."""
    value = os.environ.get("TIDELOG_CLOCK_SKEW_MS", "0")
    try:
        return int(value) * 1_000_000
    except ValueError:
        raise ConfigurationError(f"TIDELOG_CLOCK_SKEW_MS={value!r} is not a whole number") from None


_SKEW_NS = _clock_skew_ns()


def clock_ms() -> int:
    return (time.time_ns() + _SKEW_NS) // 1_000_000


random_bytes = os.urandom


@_once
def topics() -> Topics:
    return Topics(metadata_store(), clock_ms)


@_once
def topic_cache() -> TopicCache:
    """Topic metadata for produce: a second old at most (see TopicCache)."""
    return TopicCache(topics(), ttl_s=1.0, clock_s=time.monotonic)


def topic_or_create(name: str, partition: int | None = None, *, create: bool = True) -> Topic:
    """The topic ``name`` for a producer or a Metadata request; created with ``num.partitions``
    partitions if it does not exist, the caller asks for it (``create``) and the cluster allows
    it (``auto.create.topics.enable``). A name CreateTopics would refuse is
    INVALID_TOPIC_EXCEPTION either way, as on Kafka."""
    try:
        return topic_cache().get(name, partition)
    except UnknownTopicError:
        if not (create and settings().auto_create_topics):
            raise
    return topics().create_if_absent(name, settings().num_partitions)


@_once
def partitioner() -> DefaultPartitioner:
    return DefaultPartitioner()


@_once
def appender() -> Writer | GroupCommitter:
    """The write path. Its staging recovery must never run beside a live writer, or it would
    take an in-flight object for an orphan: once per process, on a directory no other process
    holds."""
    config = settings()
    claims.claim(config.staging_dir, "TIDELOG_STAGING_DIR")
    recover_staging(config.staging_dir, metadata_store(), clock_ms())
    long_running = config.group_commit
    # A long-running host serves its own writes to its readers from its cache (see ObjectCache).
    cache = log_reader().cache if long_running else None
    writer = Writer(
        metadata_store(),
        object_store(),
        StagingArea(config.staging_dir),
        clock_ms=clock_ms,
        sleep=time.sleep,
        jitter=random.random,
        on_committed=cache.put if cache is not None else None,
        on_commit=commit_feed().publish if long_running else None,
    )
    if long_running:
        return GroupCommitter(
            writer,
            flush_ms=config.flush_ms,
            flush_bytes=config.flush_bytes,
            in_flight=config.flush_in_flight,
        )
    return writer


@_once
def commit_feed() -> CommitFeed:
    """What this process's commits write, for its long polls and its reader's index cache
    (tidelog.log.feed)."""
    return CommitFeed()


@_once
def log_reader() -> LogReader:
    from tidelog.log.read.abortedcache import AbortedCache  # noqa: PLC0415 - see above
    from tidelog.log.read.cache import ObjectCache  # noqa: PLC0415
    from tidelog.log.read.fetch import LogReader  # noqa: PLC0415
    from tidelog.log.read.indexcache import DEFAULT_TTL_MS, IndexCache  # noqa: PLC0415

    config = settings()
    objects = object_store()
    cache = None
    if config.cache_bytes > 0:
        claims.claim(config.cache_dir, "TIDELOG_CACHE_DIR")
        cache = ObjectCache(config.cache_dir, config.cache_bytes, objects.get)
    # A long-running host (group commit on) reads flush objects whole (see ObjectCache). Every
    # host remembers the index entries it read lately (IndexCache): a warm Lambda environment
    # serving a consumer's next fetch skips the index query as an agent does. No longer than
    # the collector's grace period, so a remembered entry's object always exists.
    long_running = config.group_commit
    reader = LogReader(
        metadata_store(),
        objects,
        cache,
        whole_objects=long_running,
        index_cache=IndexCache(
            lambda: time.monotonic_ns() // 1_000_000,
            ttl_ms=min(DEFAULT_TTL_MS, config.gc_grace_ms),
        ),
        aborted_cache=AbortedCache(metadata_store()),
    )
    if long_running:  # its own commits' index entries, as its object cache has their objects
        commit_feed().subscribe(reader.remember_committed)
    return reader


@_once
def housekeeper() -> Housekeeper:
    from tidelog.log.lifecycle.housekeeping import Housekeeper  # noqa: PLC0415 - see above

    config = settings()
    return Housekeeper(
        metadata_store(),
        object_store(),
        topics(),
        clock_ms=clock_ms,
        grace_ms=config.gc_grace_ms,
        settle_ms=config.roll_settle_ms,
        at_once=config.housekeeping_at_once,
    )


@_once
def coordinator() -> Coordinator:
    from tidelog.groups.coordinator import Coordinator  # noqa: PLC0415 - see above
    from tidelog.groups.model import Limits  # noqa: PLC0415
    from tidelog.groups.rebalancer import StepFunctionsRebalancer  # noqa: PLC0415

    config = settings()
    if not config.assignment_state_machine:
        raise ConfigurationError("missing environment variable TIDELOG_ASSIGNMENT_STATE_MACHINE")
    return Coordinator(
        metadata_store(),
        topics(),
        log_reader(),
        StepFunctionsRebalancer(aws.client("stepfunctions"), config.assignment_state_machine),
        clock_ms=clock_ms,
        limits=Limits(config.min_session_timeout_ms, config.max_session_timeout_ms),
        initial_rebalance_delay_ms=config.initial_rebalance_delay_ms,
    )


@_once
def consumer_groups() -> ConsumerCoordinator:
    """The coordinator of KIP-848's consumer groups."""
    from tidelog.groups.consumer.coordinator import ConsumerCoordinator  # noqa: PLC0415
    from tidelog.groups.rebalancer import StepFunctionsRebalancer  # noqa: PLC0415

    config = settings()
    if not config.assignment_state_machine:
        raise ConfigurationError("missing environment variable TIDELOG_ASSIGNMENT_STATE_MACHINE")
    return ConsumerCoordinator(
        metadata_store(),
        topics(),
        StepFunctionsRebalancer(aws.client("stepfunctions"), config.assignment_state_machine),
        clock_ms=clock_ms,
        config=consumer_group_config(),
        group_configs=group_configs(),
    )


def consumer_group_config() -> Config:
    """The broker's config of consumer-protocol groups, which a group's own configs override."""
    from tidelog.groups.consumer.heartbeat import Config  # noqa: PLC0415 - see above

    config = settings()
    return Config(
        session_timeout_ms=config.consumer_session_timeout_ms,
        heartbeat_interval_ms=config.consumer_heartbeat_interval_ms,
    )


def consumer_group_bounds() -> Bounds:
    from tidelog.groups.configs import Bounds  # noqa: PLC0415 - see above

    config = settings()
    return Bounds(
        min_session_timeout_ms=config.consumer_min_session_timeout_ms,
        max_session_timeout_ms=config.consumer_max_session_timeout_ms,
        min_heartbeat_interval_ms=config.consumer_min_heartbeat_interval_ms,
        max_heartbeat_interval_ms=config.consumer_max_heartbeat_interval_ms,
    )


@_once
def group_configs() -> ConfigItems:
    """Every group's own configs (Kafka's GroupConfig)."""
    from tidelog.groups.configs import PK  # noqa: PLC0415 - see above
    from tidelog.storage.configs import ConfigItems  # noqa: PLC0415

    return ConfigItems(metadata_store(), PK, clock_ms=clock_ms)


@_once
def transactions() -> TransactionCoordinator:
    from tidelog.groups.stored import load_any  # noqa: PLC0415 - see above
    from tidelog.log.write.producer_ids import allocate_producer_id  # noqa: PLC0415
    from tidelog.transactions.coordinator import TransactionCoordinator  # noqa: PLC0415

    meta = metadata_store()

    def append(requests: Sequence[AppendRequest]) -> list[AppendResult]:
        return [future.result() for future in appender().submit(requests, urgent=True)]

    return TransactionCoordinator(
        meta,
        append=append,
        topic=lambda name: topic_cache().get(name),
        group=lambda name: load_any(meta, name, clock_ms(), lambda group: group),
        clock_ms=clock_ms,
        new_producer_id=lambda: allocate_producer_id(meta)[0],
        max_timeout_ms=settings().transaction_max_timeout_ms,
    )


def forget_cached_state() -> None:
    """Forget the topics read from storage, keeping the stores and their clients: the cache's
    deadlines are on a monotonic clock, which a restored SnapStart copy does not share with
    the snapshot. (The read path's index cache lives only on long-running hosts.)"""
    topic_cache.cache_clear()


def reset() -> None:
    """Forget cached settings, stores and the write path (the environment changed)."""
    for cached in (
        settings,
        metadata_store,
        object_store,
        fault_plan,
        topics,
        topic_cache,
        partitioner,
        appender,
        log_reader,
        housekeeper,
        coordinator,
        consumer_groups,
        group_configs,
        transactions,
    ):
        cached.cache_clear()
    aws.reset()
