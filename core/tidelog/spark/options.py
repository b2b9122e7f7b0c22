"""The options of the ``tidelog`` Spark format, parsed as Spark's Kafka source parses its own.

Pure but for finding a cluster's bucket and table by its stack (tidelog.clusters): no Spark.
Spark passes options case-insensitively; look them up through
:func:`option`, never by turning them into a plain dict.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tidelog import clusters

EARLIEST, LATEST = -2, -1  # Kafka's JSON sentinels in startingOffsets / endingOffsets

Locator = Callable[[str, str, "str | None"], clusters.Location]  # (cluster, region, endpoint)


def _locate(cluster: str, region: str, endpoint: str | None) -> clusters.Location:
    def cloudformation() -> Any:
        import boto3  # noqa: PLC0415 - only when the log must be found by its stack

        return boto3.session.Session().client(
            "cloudformation", region_name=region, endpoint_url=endpoint
        )

    return clusters.locate(cluster, endpoint=endpoint, cloudformation=cloudformation)


class OptionError(ValueError):
    """An option is missing, unknown in its context, or malformed; the message names it."""


def option(options: Mapping[str, str], name: str, default: str | None = None) -> str | None:
    lowered = name.lower()
    for key, value in options.items():
        if key.lower() == lowered:
            return str(value)
    return default


@dataclass(frozen=True)
class Connection:
    """Where the log is: endpoint (None: AWS), region, bucket and table."""

    region: str
    bucket: str
    table: str
    endpoint: str | None = None

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, str],
        environ: Mapping[str, str] = os.environ,
        locate: Locator | None = None,
    ) -> Connection:
        """Bucket and table as given (options, else ``$TIDELOG_BUCKET``/``$TIDELOG_TABLE``),
        else those of the cluster named by the ``cluster`` option, ``$TIDELOG_CLUSTER`` or
        the default, the dev stack (tidelog.clusters; ``locate`` stands in for it in tests)."""
        bucket = option(options, "bucket") or environ.get("TIDELOG_BUCKET")
        table = option(options, "table") or environ.get("TIDELOG_TABLE")
        region = (
            option(options, "region")
            or environ.get("AWS_REGION")
            or environ.get("AWS_DEFAULT_REGION")
            or "us-east-1"
        )
        endpoint = option(options, "endpoint") or environ.get("AWS_ENDPOINT_URL")
        if not bucket or not table:
            cluster = clusters.cluster_name(option(options, "cluster"), environ)
            try:
                found = (locate or _locate)(cluster, region, endpoint)
            except clusters.ClusterNotFoundError as exc:
                raise OptionError(str(exc)) from exc
            bucket, table = bucket or found.bucket, table or found.table
        return cls(region=region, bucket=bucket, table=table, endpoint=endpoint)


@dataclass(frozen=True)
class Subscription:
    """Exactly one of Kafka's three: subscribe, subscribePattern, assign."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[tuple[str, int], ...] = ()

    def matches(self, topic: str) -> bool:
        if self.assigned:
            return any(t == topic for t, _ in self.assigned)
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics

    def partitions(self, sizes: Mapping[str, int]) -> list[tuple[str, int]]:
        """The topic-partitions read, given every topic's partition count."""
        if self.assigned:
            missing = [tp for tp in self.assigned if tp[1] >= sizes.get(tp[0], 0)]
            if missing:
                raise OptionError(f"assign names partitions that do not exist: {missing}")
            return sorted(self.assigned)
        return sorted(
            (topic, p) for topic, n in sizes.items() if self.matches(topic) for p in range(n)
        )


def subscription(options: Mapping[str, str]) -> Subscription:
    given = {
        name: option(options, name)
        for name in ("subscribe", "subscribePattern", "assign")
        if option(options, name) is not None
    }
    if len(given) != 1:
        raise OptionError("give exactly one of subscribe, subscribePattern and assign")
    ((name, value),) = given.items()
    assert value is not None
    if name == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError("subscribe names no topic")
        return Subscription(topics=topics)
    if name == "subscribePattern":
        try:
            re.compile(value)
        except re.error as exc:
            raise OptionError(f"subscribePattern is not a regular expression: {exc}") from exc
        return Subscription(pattern=value)
    parsed = _json(value, "assign")
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError('assign is JSON like {"topicA": [0, 1], "topicB": [2]}')
    assigned = []
    for topic, partitions in parsed.items():
        if not isinstance(partitions, list) or not all(
            isinstance(p, int) and p >= 0 for p in partitions
        ):
            raise OptionError(f"assign: {topic!r} needs a list of partition numbers")
        assigned += [(str(topic), int(p)) for p in partitions]
    return Subscription(assigned=tuple(sorted(set(assigned))))


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends: earliest, latest, per-partition offsets (-2/-1 allowed),
    or timestamps (one for all, or per partition)."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamps"
    offsets: Mapping[tuple[str, int], int] = field(default_factory=dict)
    timestamp: int | None = None

    def for_partition(self, tp: tuple[str, int]) -> tuple[str, int | None]:
        """("earliest" | "latest" | "offset" | "timestamp", value)."""
        if self.kind in ("earliest", "latest"):
            return self.kind, None
        if self.kind == "timestamps":
            if tp in self.offsets:
                return "timestamp", self.offsets[tp]
            if self.timestamp is not None:
                return "timestamp", self.timestamp
            raise OptionError(f"startingOffsetsByTimestamp has no timestamp for {tp}")
        value = self.offsets.get(tp)
        if value is None:
            raise OptionError(f"the offsets given name no offset for {tp[0]}-{tp[1]}")
        if value == EARLIEST:
            return "earliest", None
        if value == LATEST:
            return "latest", None
        return "offset", value


def starting(options: Mapping[str, str], *, streaming: bool) -> OffsetSpec:
    """Kafka source's precedence: startingOffsetsByTimestamp, startingTimestamp,
    startingOffsets; the default is earliest for batch queries, latest for streaming ones."""
    by_timestamp = option(options, "startingOffsetsByTimestamp")
    if by_timestamp is not None:
        return OffsetSpec(
            "timestamps", offsets=_per_partition(by_timestamp, "startingOffsetsByTimestamp")
        )
    stamp = option(options, "startingTimestamp")
    if stamp is not None:
        return OffsetSpec("timestamps", timestamp=_non_negative(stamp, "startingTimestamp"))
    return _offset_spec(
        option(options, "startingOffsets", "latest" if streaming else "earliest"),
        "startingOffsets",
    )


def ending(options: Mapping[str, str]) -> OffsetSpec:
    spec = _offset_spec(option(options, "endingOffsets", "latest"), "endingOffsets")
    if spec.kind == "earliest" or any(v == EARLIEST for v in spec.offsets.values()):
        raise OptionError("endingOffsets cannot be earliest (-2)")
    return spec


def _offset_spec(value: str | None, name: str) -> OffsetSpec:
    assert value is not None
    if value.strip() in ("earliest", "latest"):
        return OffsetSpec(value.strip())
    offsets = _per_partition(value, name)
    if any(v < LATEST - 1 for v in offsets.values()):
        raise OptionError(f"{name}: offsets are >= 0, or -2 (earliest) / -1 (latest)")
    return OffsetSpec("offsets", offsets=offsets)


def _per_partition(value: str, name: str) -> dict[tuple[str, int], int]:
    parsed = _json(value, name)
    if not isinstance(parsed, dict):
        raise OptionError(f'{name} is earliest, latest, or JSON like {{"topic": {{"0": 23}}}}')
    out = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict):
            raise OptionError(f"{name}: {topic!r} needs an object of partition -> value")
        for partition, offset in partitions.items():
            if (
                not str(partition).isdigit()
                or not isinstance(offset, int)
                or isinstance(offset, bool)
            ):
                raise OptionError(f"{name}: {topic}[{partition}] = {offset!r} is not a number")
            out[(str(topic), int(partition))] = offset
    return out


def _json(value: str, name: str) -> object:
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise OptionError(f"{name} is not JSON: {exc}") from exc


def _non_negative(value: str, name: str) -> int:
    if not value.strip().isdigit():
        raise OptionError(f"{name} must be a non-negative whole number, not {value!r}")
    return int(value)


def positive(options: Mapping[str, str], name: str) -> int | None:
    value = option(options, name)
    if value is None:
        return None
    number = _non_negative(value, name)
    if number == 0:
        raise OptionError(f"{name} must be at least 1")
    return number


def flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = option(options, name)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise OptionError(f"{name} is true or false, not {value!r}")
    return value.strip().lower() == "true"


ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


def read_committed(options: Mapping[str, str]) -> bool:
    """``isolation`` (or the Kafka source's ``kafka.isolation.level``): read_committed, the
    default, reads below each partition's last stable offset and leaves out aborted
    transactions; read_uncommitted reads to the high watermark."""
    value = option(options, "isolation") or option(options, "kafka.isolation.level")
    level = (value or "read_committed").strip().lower()
    if level not in ISOLATION_LEVELS:
        raise OptionError(f"isolation is read_committed or read_uncommitted, not {value!r}")
    return level == "read_committed"
