"""A consumer's positions and what it has fetched: one multi-partition long poll
(``POST /v1/fetch``) for every assigned, unpaused partition with nothing waiting, resumed from
each partition's ``next_offset`` (compaction leaves gaps in offsets). A position not known
yet starts from the group's committed offset, else ``auto.offset.reset``; so does an offset
outside the log."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2

from tidelog.client import errors
from tidelog.client.admin import Admin
from tidelog.client.consumed import (
    OFFSET_BEGINNING,
    OFFSET_END,
    ConsumerRecord,
    TopicPartition,
    record_from_json,
)
from tidelog.client.consumer_config import ConsumerConfig
from tidelog.client.http import Http
from tidelog.client.membership import TopicPartitionKey
from tidelog.errors import InvalidRequestError, RetriableError

log = logging.getLogger(__name__)

FETCH_MAX_PARTITIONS = 1000

StoredOffsets = Callable[[], Mapping[TopicPartitionKey, tuple[int, str]]]


@dataclass
class _Fetched:
    """A partition's fetched records not yet handed out, and where its next fetch starts."""

    records: deque[ConsumerRecord]
    next_offset: int


class Fetcher:
    def __init__(
        self,
        http: Http,
        admin: Admin,
        config: ConsumerConfig,
        *,
        assigned: Callable[[], set[TopicPartitionKey]],
        stored_offsets: StoredOffsets,
        idle: Callable[[float], None],
    ) -> None:
        """``assigned``: the partitions to consume now; ``idle``: wait up to so many seconds
        for the group to hand partitions out, when there is nothing to fetch."""
        self._http = http
        self._admin = admin
        self._config = config
        self._assigned = assigned
        self._stored_offsets = stored_offsets
        self._idle = idle
        self.positions: dict[TopicPartitionKey, int | None] = {}  # None: not yet known
        self.paused: set[TopicPartitionKey] = set()
        self._fetched: dict[TopicPartitionKey, _Fetched] = {}

    def take(self, count: int) -> list[ConsumerRecord]:
        """Up to ``count`` records already fetched, moving their partitions' positions."""
        out: list[ConsumerRecord] = []
        for key, fetched in list(self._fetched.items()):
            if key in self.paused:
                continue
            while fetched.records and len(out) < count:
                record = fetched.records.popleft()
                out.append(record)
                self.positions[key] = record.offset + 1
            if not fetched.records:
                self.positions[key] = fetched.next_offset
                del self._fetched[key]
            if len(out) >= count:
                break
        return out

    def fetch(self, timeout: float | None) -> None:
        """One long poll for every assigned partition that has nothing fetched waiting."""
        wanted = [
            key
            for key in sorted(self._assigned())
            if key not in self.paused and key not in self._fetched
        ]
        self.start_from([])
        ready = [
            (key, self.positions[key]) for key in wanted if self.positions.get(key) is not None
        ]
        wait_ms = self._config.fetch_max_wait_ms
        if timeout is not None:
            wait_ms = max(0, min(wait_ms, int(timeout * 1000)))
        if not ready:
            self._idle(wait_ms / 1000)
            return
        ready = ready[:FETCH_MAX_PARTITIONS]
        body = {
            "partitions": [
                {
                    "topic": t,
                    "partition": p,
                    "offset": offset,
                    "max_bytes": self._config.max_partition_fetch_bytes,
                }
                for (t, p), offset in ready
            ],
            "max_wait_ms": wait_ms,
            "min_bytes": self._config.fetch_min_bytes,
            "max_bytes": self._config.fetch_max_bytes,
            "encoding": "base64",
            "isolation": self._config.isolation_level,
        }
        try:
            answer = self._http.post("/v1/fetch", body)
        except (RetriableError, httpx2.TransportError) as exc:
            log.warning("fetch: %s", exc)
            time.sleep(self._config.retry_backoff_ms / 1000)
            return
        asked = dict(ready)
        for result in answer["responses"]:
            key = (result["topic"], result["partition"])
            if key not in self._assigned() or self.positions.get(key) != asked.get(key):
                continue  # revoked, or sought elsewhere, while the fetch was out
            if result.get("error"):
                self._fetch_error(key, result)
                continue
            records = deque(record_from_json(key, r) for r in result["records"])
            if records or result["next_offset"] != asked[key]:
                self._fetched[key] = _Fetched(records, result["next_offset"])

    def _fetch_error(self, key: TopicPartitionKey, result: Mapping[str, Any]) -> None:
        name = result["error"]
        if name == "OFFSET_OUT_OF_RANGE":
            reset = self._config.auto_offset_reset
            if reset == "none":
                raise InvalidRequestError(
                    f"{key[0]}[{key[1]}]: {result.get('message')} and auto.offset.reset is none",
                    kafka_error="OFFSET_OUT_OF_RANGE",
                )
            field_name = "log_start_offset" if reset == "earliest" else "high_watermark"
            log.info("%s[%d]: %s; reset to the %s", *key, result.get("message"), reset)
            self.positions[key] = int(result[field_name])
            return
        error = errors.from_item(result)
        if not error.retriable:
            raise error
        log.warning("fetch %s[%d]: %s", *key, error.message)

    def start_from(self, partitions: Sequence[TopicPartition]) -> None:
        """Positions for ``partitions`` (logical offsets resolved), and for every assigned
        partition whose position is not known yet: its committed offset, else the reset."""
        for tp in partitions:
            self._fetched.pop(tp.key, None)
            self.positions[tp.key] = tp.offset
        logical = {
            key: offset for key, offset in self.positions.items() if offset is None or offset < 0
        }
        if not logical:
            return
        unknown = [key for key, offset in logical.items() if offset is None]
        stored = self._stored_offsets() if unknown and self._config.group_id else {}
        reset = OFFSET_BEGINNING if self._config.auto_offset_reset == "earliest" else OFFSET_END
        ends: dict[str, Any] = {}
        for key, offset in logical.items():
            if offset is None and key in stored:
                self.positions[key] = stored[key][0]
                continue
            if offset is None and self._config.auto_offset_reset == "none":
                raise InvalidRequestError(
                    f"{key[0]}[{key[1]}] has no committed offset and auto.offset.reset is none",
                    kafka_error="OFFSET_OUT_OF_RANGE",
                )
            topic = key[0]
            if topic not in ends:
                ends[topic] = {p.partition: p for p in self._admin.describe_topic(topic).offsets}
            bounds = ends[topic][key[1]]
            wanted = reset if offset is None else offset
            latest = (
                bounds.last_stable_offset
                if self._config.isolation_level == "read_committed"
                else bounds.high_watermark
            )
            self.positions[key] = bounds.log_start_offset if wanted == OFFSET_BEGINNING else latest

    def forget(self, partitions: Iterable[TopicPartitionKey]) -> None:
        for key in partitions:
            self.positions.pop(key, None)
            self._fetched.pop(key, None)
            self.paused.discard(key)

    def consumed(self, keys: Iterable[TopicPartitionKey] | None = None) -> list[TopicPartition]:
        """The position of each of ``keys`` (default: every assigned partition) known."""
        wanted = self._assigned() if keys is None else set(keys)
        return [
            TopicPartition(t, p, offset)
            for (t, p), offset in sorted(self.positions.items())
            if offset is not None and offset >= 0 and (t, p) in wanted
        ]
