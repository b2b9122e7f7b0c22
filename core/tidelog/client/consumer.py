"""``Consumer``: Kafka's consumer over the HTTP API, in confluent-kafka's shape.

``subscribe`` joins a group (``group.id``) over the group routes: a background thread
heartbeats every ``heartbeat.interval.ms`` and learns of rebalances, and ``poll`` acts on them
on the caller's thread, as Kafka's consumers do: commit (with auto-commit), ``on_revoke``, join
the new generation, ``on_assign``. ``assign`` takes partitions by hand, without a group.

Fetching is one multi-partition long poll (``POST /v1/fetch``) for every assigned, unpaused
partition, resumed from each partition's ``next_offset`` (compaction leaves gaps in offsets).
An offset outside the log is reset by ``auto.offset.reset``.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx2

from tidelog.client import config as settings
from tidelog.client.admin import Admin
from tidelog.client.http import Http
from tidelog.client.membership import Membership, Rebalancing, Stable, TopicPartitionKey
from tidelog.errors import InvalidRequestError, RetriableError, TidelogError

log = logging.getLogger(__name__)

OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_STORED = -1000
OFFSET_INVALID = -1001
"""confluent-kafka's logical offsets: ``OFFSET_STORED`` the group's committed offset,
``OFFSET_INVALID`` none (what ``committed`` answers for a partition never committed)."""

FETCH_MAX_BYTES = 4 * 1024 * 1024  # the API's bound on one fetch
FETCH_MAX_PARTITIONS = 1000
REBALANCE_HEARTBEAT_S = 0.1
"""How often a member heartbeats while its group rebalances: the heartbeat is the join, and
the answer that the group is Stable, so a joined member asks often."""


@dataclass(frozen=True)
class TopicPartition:
    """confluent-kafka's TopicPartition: a partition, with an offset where one is meant."""

    topic: str
    partition: int
    offset: int = OFFSET_INVALID
    metadata: str = ""
    error: TidelogError | None = None

    @property
    def key(self) -> TopicPartitionKey:
        return (self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: str  # CreateTime or LogAppendTime
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


PartitionsCallback = Callable[["Consumer", list[TopicPartition]], None]
CommitCallback = Callable[[TidelogError | None, list[TopicPartition]], None]

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
_STALE_GENERATION = ("ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS")
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

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> tuple[ConsumerConfig, dict[str, Any]]:
        parsed, connection = settings.parse(cls, config, ignored=("client.id", "on_commit"))
        reset = _RESETS.get(parsed.auto_offset_reset.lower())
        if reset is None:
            raise InvalidRequestError(
                f"auto.offset.reset={parsed.auto_offset_reset!r}: earliest, latest or none"
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


@dataclass
class _Fetched:
    """A partition's fetched records not yet handed out, and where its next fetch starts."""

    records: deque[ConsumerRecord]
    next_offset: int


@dataclass
class _Subscription:
    topics: list[str] = field(default_factory=list)
    pattern: str | None = None
    on_assign: PartitionsCallback | None = None
    on_revoke: PartitionsCallback | None = None
    on_lost: PartitionsCallback | None = None


class Consumer:
    def __init__(
        self, config: Mapping[str, Any] | None = None, *, http: Http | None = None, **overrides: Any
    ) -> None:
        """``config``: Kafka's consumer keys (``group.id``, ``auto.offset.reset``...), plus
        ``url``/``cluster``/``sign``/``region`` for the API and ``on_commit`` (confluent's
        commit callback); ``overrides`` in Python spelling."""
        options = settings.merged(config, overrides)
        self.config, connection = ConsumerConfig.parse(options)
        self._on_commit: CommitCallback | None = options.get("on_commit")
        self._http = http or Http(timeout_s=self.config.request_timeout_ms / 1000, **connection)
        self._admin = Admin(http=self._http)
        self._group = quote(self.config.group_id, safe="")
        self._lock = threading.Condition()
        self._membership = Membership()
        self._member_id: str | None = None
        self._answer: Rebalancing | Stable | None = None  # news for poll to act on
        self._heard: Rebalancing | Stable | None = None  # the last answer, news or not
        self._fatal: TidelogError | None = None
        self._subscription: _Subscription | None = None
        self._manual: set[TopicPartitionKey] = set()
        self._positions: dict[TopicPartitionKey, int | None] = {}  # None: not yet known
        self._fetched: dict[TopicPartitionKey, _Fetched] = {}
        self._paused: set[TopicPartitionKey] = set()
        self._committed: dict[TopicPartitionKey, int] = {}  # what this consumer last committed
        self._next_auto_commit = time.monotonic() + self.config.auto_commit_interval_ms / 1000
        self._last_poll = time.monotonic()
        self._closed = False
        self._commits = ThreadPoolExecutor(1, thread_name_prefix="tidelog-commit")
        self._heartbeat = threading.Thread(target=self._beat, name="tidelog-heartbeat", daemon=True)
        self._heartbeat.start()

    # -- what to consume ------------------------------------------------------------------

    def subscribe(
        self,
        topics: Sequence[str] | str | re.Pattern[str],
        on_assign: PartitionsCallback | None = None,
        on_revoke: PartitionsCallback | None = None,
        on_lost: PartitionsCallback | None = None,
    ) -> None:
        """Join ``group.id`` (at the next poll) for ``topics``: names, or one regular expression
        over whole names, given as a ``re.Pattern`` or a string starting with ``^`` (as
        confluent-kafka's). ``on_lost`` defaults to ``on_revoke``, as in Kafka."""
        if not self.config.group_id:
            raise InvalidRequestError("subscribe needs a group.id", kafka_error="INVALID_GROUP_ID")
        given = [topics] if isinstance(topics, (str, re.Pattern)) else list(topics)
        names = [t.pattern if isinstance(t, re.Pattern) else t for t in given]
        pattern = [n for n, t in zip(names, given, strict=True) if _is_pattern(t)]
        if pattern and len(names) > 1:
            raise InvalidRequestError("subscribe to topic names or to one pattern, not both")
        if not names:
            raise InvalidRequestError("subscribe to at least one topic")
        self.unsubscribe()
        self._subscription = _Subscription(
            topics=[] if pattern else names,
            pattern=pattern[0] if pattern else None,
            on_assign=on_assign,
            on_revoke=on_revoke,
            on_lost=on_lost,
        )

    def unsubscribe(self) -> None:
        """Give up the group's partitions (committing them, with auto-commit) and leave."""
        if self._subscription is not None:
            self._revoke(tuple(sorted(self._membership.owned)))
            self._leave()
            self._subscription = None
        self._unassign_all()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume these partitions, without a group: from each one's ``offset``, or, for
        ``OFFSET_INVALID``/``OFFSET_STORED``, from ``group.id``'s committed offset, else
        ``auto.offset.reset``. ``OFFSET_BEGINNING`` and ``OFFSET_END`` are the log's ends."""
        if self._subscription is not None:
            raise InvalidRequestError("assign after subscribe: unsubscribe first")
        self._unassign_all()
        wanted = list(partitions)
        self._manual = {tp.key for tp in wanted}
        for tp in wanted:
            self._positions[tp.key] = None
        self._start_from([tp for tp in wanted if tp.offset not in (OFFSET_INVALID, OFFSET_STORED)])

    def unassign(self) -> None:
        self._unassign_all()

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, p in sorted(self._assigned())]

    # -- consuming ------------------------------------------------------------------------

    def poll(self, timeout: float | None = None) -> ConsumerRecord | None:
        """The next record, or None once ``timeout`` seconds pass (None: wait for one)."""
        records = self.consume(1, timeout)
        return records[0] if records else None

    def consume(self, num_messages: int = 1, timeout: float | None = None) -> list[ConsumerRecord]:
        """Up to ``num_messages`` records, waiting up to ``timeout`` seconds for them (None or
        a negative timeout: until there are that many)."""
        if self._closed:
            raise RuntimeError("the consumer is closed")
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        out: list[ConsumerRecord] = []
        while True:
            self._last_poll = time.monotonic()
            if out and self._news():
                return out  # a rebalance waits for the next poll: these may be revoked
            self._rebalance()
            self._maybe_auto_commit()
            out += self._take(num_messages - len(out))
            left = None if deadline is None else deadline - time.monotonic()
            if len(out) >= num_messages or (left is not None and left <= 0):
                return out
            if out and left is None:
                left = self.config.fetch_max_wait_ms / 1000
            self._fetch(left)

    def __iter__(self) -> Any:
        while True:
            record = self.poll(self.config.fetch_max_wait_ms / 1000)
            if record is not None:
                yield record

    def seek(self, partition: TopicPartition) -> None:
        """Consume ``partition`` from its ``offset`` next (or a log end, by its logical
        offset). Records already fetched past it are dropped."""
        if partition.key not in self._assigned():
            raise InvalidRequestError(
                f"{partition.topic}[{partition.partition}] is not assigned to this consumer",
                kafka_error="UNKNOWN_TOPIC_OR_PARTITION",
            )
        self._start_from([partition])

    def position(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        """The offset of the next record each partition hands out (OFFSET_INVALID: unknown)."""
        out = []
        for tp in partitions:
            offset = self._positions.get(tp.key)
            out.append(
                TopicPartition(tp.topic, tp.partition, OFFSET_INVALID if offset is None else offset)
            )
        return out

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self._paused |= {tp.key for tp in partitions}

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._paused -= {tp.key for tp in partitions}

    def offsets_for_times(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> list[TopicPartition]:
        """For each partition, whose ``offset`` is a time in ms, the first offset written at
        or after it (OFFSET_END when none is)."""
        del timeout  # each lookup is bounded by request.timeout.ms
        out = []
        for tp in partitions:
            found = self._admin.offset_at(tp.topic, tp.partition, tp.offset)
            out.append(TopicPartition(tp.topic, tp.partition, found.offset))
        return out

    # -- offsets --------------------------------------------------------------------------

    def commit(
        self,
        message: ConsumerRecord | None = None,
        offsets: Iterable[TopicPartition] | None = None,
        asynchronous: bool = False,
    ) -> list[TopicPartition] | None:
        """Commit ``offsets`` (each the next offset to consume), the offset after ``message``,
        or the current position of every assigned partition. Synchronous: the committed
        partitions, or the error. Asynchronous: None; ``on_commit`` hears the outcome."""
        if message is not None:
            wanted = [TopicPartition(message.topic, message.partition, message.offset + 1)]
        elif offsets is not None:
            wanted = list(offsets)
        else:
            wanted = self._consumed()
        future = self._commits.submit(self._commit_now, wanted)
        if asynchronous:
            return None
        return future.result()

    def committed(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> list[TopicPartition]:
        """The group's committed offset of each partition (OFFSET_INVALID: none)."""
        del timeout
        stored = self._stored_offsets()
        return [
            TopicPartition(tp.topic, tp.partition, *stored.get(tp.key, (OFFSET_INVALID, "")))
            for tp in partitions
        ]

    def lag(self) -> list[dict[str, Any]]:
        """tidelog's extra: per partition the group has committed, the committed offset, the
        high watermark, the lag in records and in time (``lag_ms``: how long ago the first
        record not yet consumed was written)."""
        answer = self._http.get(f"/v1/groups/{self._group}/offsets")
        offsets: list[dict[str, Any]] = answer["offsets"]
        return offsets

    # -- closing --------------------------------------------------------------------------

    def close(self) -> None:
        """Commit (with auto-commit), give the partitions up and leave the group. A static
        member (``group.instance.id``) does not leave: its partitions wait for it until its
        session times out, as in Kafka."""
        if self._closed:
            return
        try:
            if self._subscription is not None:
                self._revoke(tuple(sorted(self._membership.owned)))
                if not self.config.group_instance_id:
                    self._leave()
            elif self.config.enable_auto_commit and self._manual:
                self._commit_quietly(self._consumed())
        finally:
            with self._lock:
                self._closed = True
                self._lock.notify_all()
            self._heartbeat.join()
            self._commits.shutdown(wait=True)
            self._http.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the group ------------------------------------------------------------------------

    def _news(self) -> bool:
        with self._lock:
            out = self._subscription is not None and self._member_id is None
            return out or self._answer is not None or self._fatal is not None

    def _rebalance(self) -> None:
        """Act on what the heartbeats learnt, on the caller's thread (as Kafka's poll does)."""
        with self._lock:
            if self._fatal is not None:
                fatal, self._fatal = self._fatal, None
                raise fatal
            answer, self._answer = self._answer, None
            out = self._member_id is None
        if self._subscription is None:
            return
        if out:
            lost = self._membership.lose()
            if lost:
                self._forget(lost)
                self._call(self._subscription.on_lost or self._subscription.on_revoke, lost)
            self._join()
            return
        if answer is None:
            return
        # Revoked partitions are committed (with auto-commit) before the member joins the
        # next generation, as Kafka's onJoinPrepare does: the generation they were held in
        # still takes their commits while the next one is being prepared.
        with self._lock:
            step = self._membership.step(answer)
        self._revoke(step.revoke)
        if step.join is not None:
            with self._lock:
                self._membership.join(step.join)
                self._lock.notify_all()  # heartbeat now: that is the join
        if step.assign is not None:
            for key in step.assign:
                self._positions[key] = None
            self._start_from([])
            self._call(self._subscription.on_assign, step.assign)

    def _revoke(self, partitions: Sequence[TopicPartitionKey]) -> None:
        if not partitions or self._subscription is None:
            return
        if self.config.enable_auto_commit:
            self._commit_quietly(self._consumed(partitions))
        self._forget(partitions)
        self._call(self._subscription.on_revoke, partitions)

    def _join(self) -> None:
        assert self._subscription is not None
        body: dict[str, Any] = {
            "assignors": self.config.assignors(),
            "session_timeout_ms": self.config.session_timeout_ms,
            "rebalance_timeout_ms": self.config.max_poll_interval_ms,
        }
        if self._subscription.pattern is not None:
            body["topic_pattern"] = self._subscription.pattern
        else:
            body["topics"] = self._subscription.topics
        if self.config.group_instance_id:
            body["group_instance_id"] = self.config.group_instance_id
        try:
            joined = self._http.post(f"/v1/groups/{self._group}/members", body)
        except (RetriableError, httpx2.TransportError) as exc:
            log.warning("joining group %s: %s", self.config.group_id, exc)
            time.sleep(self.config.retry_backoff_ms / 1000)
            return  # the next poll tries again
        with self._lock:
            self._member_id = joined["member_id"]
            self._membership.joined_by_join(int(joined["generation_id"]))
            self._answer = self._heard = None
        self._wake_heartbeat()

    def _leave(self) -> None:
        with self._lock:
            member, self._member_id = self._member_id, None
        self._membership.lose()
        if member is not None:
            self._delete_member(member)

    def _delete_member(self, member: str) -> None:
        try:
            self._http.request("DELETE", f"/v1/groups/{self._group}/members/{quote(member)}")
        except (TidelogError, httpx2.TransportError) as exc:
            log.warning("leaving group %s: %s", self.config.group_id, exc)

    def _hear(self, answer: Rebalancing | Stable) -> None:
        """Called with the lock held: an answer that differs from the last is news for poll."""
        if answer != self._heard:
            self._answer = self._heard = answer

    def _beat(self) -> None:
        """The heartbeat thread: keeps the session, and hears of rebalances and assignments."""
        interval = self.config.heartbeat_interval_ms / 1000
        with self._lock:
            while not self._closed:
                waiting = self._membership.joined != self._membership.held
                self._lock.wait(REBALANCE_HEARTBEAT_S if waiting else interval)
                member, generation = self._member_id, self._membership.joined
                if self._closed or member is None:
                    continue
                if time.monotonic() - self._last_poll > self.config.max_poll_interval_ms / 1000:
                    self._poll_timed_out(member)
                    continue
                self._lock.release()
                try:
                    answer = self._heartbeat_once(member, generation)
                finally:
                    self._lock.acquire()
                if self._member_id != member:
                    continue  # the member left or joined again meanwhile
                if isinstance(answer, (Rebalancing, Stable)):
                    self._hear(answer)
                elif answer is not None:
                    self._out_of_group(answer)
                self._lock.notify_all()

    def _heartbeat_once(
        self, member: str, generation: int
    ) -> Rebalancing | Stable | TidelogError | None:
        try:
            body = self._http.post(
                f"/v1/groups/{self._group}/members/{quote(member)}/heartbeat",
                {"generation_id": generation},
            )
        except (RetriableError, httpx2.TransportError) as exc:
            log.warning("heartbeat to group %s: %s", self.config.group_id, exc)
            return None
        except TidelogError as exc:
            if exc.kafka_error.name != "REBALANCE_IN_PROGRESS":
                return exc
            details = exc.details
            return Rebalancing(
                int(details["generation_id"]),
                _keys(details["assignment"]),
                int(details.get("assignment_generation_id", -1)),
            )
        return Stable(int(body["generation_id"]), _keys(body["assignment"]))

    def _out_of_group(self, error: TidelogError) -> None:
        """Called with the lock held."""
        if error.kafka_error.name in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"):
            log.warning("group %s: %s; joining again", self.config.group_id, error.message)
            self._member_id = None  # the next poll calls on_lost and joins again
        else:
            self._fatal = error  # FENCED_INSTANCE_ID, a refused signature: the caller's to see

    def _poll_timed_out(self, member: str) -> None:
        """Called with the lock held: the caller has not polled for max.poll.interval.ms.
        Kafka's consumer leaves the group then, so its partitions go to a live member."""
        log.warning(
            "group %s: poll was not called for max.poll.interval.ms (%d ms); leaving the group",
            self.config.group_id,
            self.config.max_poll_interval_ms,
        )
        self._member_id = None
        if not self.config.group_instance_id:
            self._lock.release()
            try:
                self._delete_member(member)
            finally:
                self._lock.acquire()

    def _wake_heartbeat(self) -> None:
        with self._lock:
            self._lock.notify_all()

    def _call(self, callback: PartitionsCallback | None, keys: Iterable[TopicPartitionKey]) -> None:
        if callback is not None:
            callback(self, [TopicPartition(t, p) for t, p in keys])

    # -- fetching -------------------------------------------------------------------------

    def _assigned(self) -> set[TopicPartitionKey]:
        if self._subscription is not None:
            return set(self._membership.owned)
        return set(self._manual)

    def _take(self, count: int) -> list[ConsumerRecord]:
        out: list[ConsumerRecord] = []
        for key, fetched in list(self._fetched.items()):
            if key in self._paused:
                continue
            while fetched.records and len(out) < count:
                record = fetched.records.popleft()
                out.append(record)
                self._positions[key] = record.offset + 1
            if not fetched.records:
                self._positions[key] = fetched.next_offset
                del self._fetched[key]
            if len(out) >= count:
                break
        return out

    def _fetch(self, timeout: float | None) -> None:
        """One long poll for every assigned partition that has nothing fetched waiting."""
        wanted = [
            key
            for key in sorted(self._assigned())
            if key not in self._paused and key not in self._fetched
        ]
        self._start_from([])
        ready = [
            (key, self._positions[key]) for key in wanted if self._positions.get(key) is not None
        ]
        wait_ms = self.config.fetch_max_wait_ms
        if timeout is not None:
            wait_ms = max(0, min(wait_ms, int(timeout * 1000)))
        if not ready:
            with self._lock:  # nothing to fetch: wait for the group to hand something out
                if self._answer is None and self._fatal is None:
                    self._lock.wait(wait_ms / 1000)
            return
        ready = ready[:FETCH_MAX_PARTITIONS]
        body = {
            "partitions": [
                {
                    "topic": t,
                    "partition": p,
                    "offset": offset,
                    "max_bytes": self.config.max_partition_fetch_bytes,
                }
                for (t, p), offset in ready
            ],
            "max_wait_ms": wait_ms,
            "min_bytes": self.config.fetch_min_bytes,
            "max_bytes": self.config.fetch_max_bytes,
            "encoding": "base64",
        }
        try:
            answer = self._http.post("/v1/fetch", body)
        except (RetriableError, httpx2.TransportError) as exc:
            log.warning("fetch: %s", exc)
            time.sleep(self.config.retry_backoff_ms / 1000)
            return
        asked = dict(ready)
        for result in answer["responses"]:
            key = (result["topic"], result["partition"])
            if key not in self._assigned() or self._positions.get(key) != asked.get(key):
                continue  # revoked, or sought elsewhere, while the fetch was out
            if result.get("error"):
                self._fetch_error(key, result)
                continue
            records = deque(_record(key, r) for r in result["records"])
            if records or result["next_offset"] != asked[key]:
                self._fetched[key] = _Fetched(records, result["next_offset"])

    def _fetch_error(self, key: TopicPartitionKey, result: Mapping[str, Any]) -> None:
        name = result["error"]
        if name == "OFFSET_OUT_OF_RANGE":
            reset = self.config.auto_offset_reset
            if reset == "none":
                raise InvalidRequestError(
                    f"{key[0]}[{key[1]}]: {result.get('message')} and auto.offset.reset is none",
                    kafka_error="OFFSET_OUT_OF_RANGE",
                )
            field_name = "log_start_offset" if reset == "earliest" else "high_watermark"
            log.info("%s[%d]: %s; reset to the %s", *key, result.get("message"), reset)
            self._positions[key] = int(result[field_name])
            return
        error = TidelogError(str(result.get("message") or name), kafka_error=name)
        if not error.retriable:
            raise error
        log.warning("fetch %s[%d]: %s", *key, error.message)

    def _start_from(self, partitions: Sequence[TopicPartition]) -> None:
        """Positions for ``partitions`` (logical offsets resolved), and for every assigned
        partition whose position is not known yet: its committed offset, else the reset."""
        for tp in partitions:
            self._fetched.pop(tp.key, None)
            self._positions[tp.key] = tp.offset
        logical = {
            key: offset for key, offset in self._positions.items() if offset is None or offset < 0
        }
        if not logical:
            return
        unknown = [key for key, offset in logical.items() if offset is None]
        stored = self._stored_offsets() if unknown and self.config.group_id else {}
        reset = OFFSET_BEGINNING if self.config.auto_offset_reset == "earliest" else OFFSET_END
        ends: dict[str, Any] = {}
        for key, offset in logical.items():
            if offset is None and key in stored:
                self._positions[key] = stored[key][0]
                continue
            if offset is None and self.config.auto_offset_reset == "none":
                raise InvalidRequestError(
                    f"{key[0]}[{key[1]}] has no committed offset and auto.offset.reset is none",
                    kafka_error="OFFSET_OUT_OF_RANGE",
                )
            topic = key[0]
            if topic not in ends:
                ends[topic] = {p.partition: p for p in self._admin.describe_topic(topic).offsets}
            bounds = ends[topic][key[1]]
            wanted = reset if offset is None else offset
            self._positions[key] = (
                bounds.log_start_offset if wanted == OFFSET_BEGINNING else bounds.high_watermark
            )

    def _forget(self, partitions: Iterable[TopicPartitionKey]) -> None:
        for key in partitions:
            self._positions.pop(key, None)
            self._fetched.pop(key, None)
            self._paused.discard(key)

    def _unassign_all(self) -> None:
        self._forget(list(self._positions))
        self._manual = set()

    # -- committing -----------------------------------------------------------------------

    def _consumed(self, keys: Iterable[TopicPartitionKey] | None = None) -> list[TopicPartition]:
        """The position of each of ``keys`` (default: every assigned partition) known."""
        wanted = self._assigned() if keys is None else set(keys)
        return [
            TopicPartition(t, p, offset)
            for (t, p), offset in sorted(self._positions.items())
            if offset is not None and offset >= 0 and (t, p) in wanted
        ]

    def _maybe_auto_commit(self) -> None:
        if not self.config.enable_auto_commit or time.monotonic() < self._next_auto_commit:
            return
        self._next_auto_commit = time.monotonic() + self.config.auto_commit_interval_ms / 1000
        changed = [tp for tp in self._consumed() if self._committed.get(tp.key) != tp.offset]
        if changed:
            self.commit(offsets=changed, asynchronous=True)

    def _commit_quietly(self, offsets: list[TopicPartition]) -> None:
        """A commit on the way out of a partition: failing it must not stop the rebalance
        (Kafka logs it); the next owner starts from the last commit that held."""
        if not offsets:
            return
        try:
            self._commits.submit(self._commit_now, offsets).result()
        except TidelogError as exc:
            log.warning("commit before giving up partitions: %s", exc)

    def _commit_now(self, offsets: list[TopicPartition]) -> list[TopicPartition]:
        """On the commit thread (one at a time, in order)."""
        result: list[TopicPartition] = []
        error: TidelogError | None = None
        try:
            if offsets:
                answer = self._post_offsets(offsets)
                for item, tp in zip(answer["offsets"], offsets, strict=True):
                    failed = None
                    if item.get("error"):
                        failed = TidelogError(item.get("message") or "", kafka_error=item["error"])
                        error = error or failed
                    else:
                        self._committed[tp.key] = tp.offset
                    result.append(TopicPartition(tp.topic, tp.partition, tp.offset, error=failed))
        except (TidelogError, httpx2.TransportError) as exc:
            error = exc if isinstance(exc, TidelogError) else RetriableError(str(exc))
        if self._on_commit is not None:
            try:
                self._on_commit(error, result or list(offsets))
            except Exception:
                log.exception("on_commit raised")
        if error is not None:
            raise error
        return result

    def _post_offsets(self, offsets: list[TopicPartition]) -> Any:
        """The commit, fenced by the generation this member holds. A member can be in a
        generation it has not heard of yet (it joined, and the group moved on before a
        heartbeat brought the answer); refused for that, it asks the group once and commits
        as the generation the group says it is in."""
        with self._lock:
            member = self._member_id if self._subscription is not None else None
            generation, joined = self._membership.held, self._membership.joined
        body = {
            "member_id": member or "",
            "generation_id": generation if member else -1,
            "offsets": [
                {
                    "topic": t.topic,
                    "partition": t.partition,
                    "offset": t.offset,
                    "metadata": t.metadata,
                }
                for t in offsets
            ],
        }
        path = f"/v1/groups/{self._group}/offsets"
        try:
            return self._http.post(path, body)
        except TidelogError as exc:
            if member is None or exc.kafka_error.name not in _STALE_GENERATION:
                raise
            heard = self._heartbeat_once(member, joined)
            if not isinstance(heard, (Rebalancing, Stable)):
                raise
            with self._lock:
                current = self._membership.commit_generation(heard)
                self._hear(heard)  # news for the next poll, too
            if current is None or current == generation:
                raise
            return self._http.post(path, {**body, "generation_id": current})

    def _stored_offsets(self) -> dict[TopicPartitionKey, tuple[int, str]]:
        try:
            answer = self._http.get(f"/v1/groups/{self._group}/offsets")
        except TidelogError as exc:
            if exc.kafka_error.name in ("GROUP_ID_NOT_FOUND",) or exc.http_status == 404:
                return {}
            raise
        return {
            (o["topic"], o["partition"]): (o["offset"], o["metadata"]) for o in answer["offsets"]
        }


def _is_pattern(topic: str | re.Pattern[str]) -> bool:
    return isinstance(topic, re.Pattern) or topic.startswith("^")


def _keys(assignment: Sequence[Mapping[str, Any]]) -> frozenset[TopicPartitionKey]:
    return frozenset((a["topic"], p) for a in assignment for p in a["partitions"])


def _decode(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


def _record(key: TopicPartitionKey, r: Mapping[str, Any]) -> ConsumerRecord:
    return ConsumerRecord(
        key[0],
        key[1],
        r["offset"],
        r["timestamp"],
        r["timestamp_type"],
        _decode(r["key"]),
        _decode(r["value"]),
        tuple((h["key"], _decode(h["value"])) for h in r["headers"]),
    )


__all__ = [
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "Consumer",
    "ConsumerConfig",
    "ConsumerRecord",
    "TopicPartition",
]
