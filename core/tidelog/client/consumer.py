"""``Consumer``: Kafka's consumer over the HTTP API, in confluent-kafka's shape.

``subscribe`` joins a group (``group.id``) over the group routes: a background thread
heartbeats every ``heartbeat.interval.ms`` and learns of rebalances, and ``poll`` acts on them
on the caller's thread, as Kafka's consumers do: commit (with auto-commit), ``on_revoke``, join
the new generation, ``on_assign``. ``group.protocol=consumer`` speaks KIP-848's protocol
instead (``tidelog.client.consumer_routes``). ``assign`` takes partitions by hand, without a
group.

Fetching and positions are ``tidelog.client.fetching``'s; commits ``tidelog.client.commits``'.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx2

from tidelog.client import config as settings
from tidelog.client.admin import Admin
from tidelog.client.commits import Commits
from tidelog.client.consumed import (
    OFFSET_INVALID,
    OFFSET_STORED,
    ConsumerRecord,
    TopicPartition,
)
from tidelog.client.consumer_config import ConsumerConfig
from tidelog.client.consumer_routes import ConsumerProtocolRoutes
from tidelog.client.fetching import Fetcher
from tidelog.client.group_routes import GroupRoutes
from tidelog.client.http import Http
from tidelog.client.membership import Membership, Rebalancing, Stable, TopicPartitionKey
from tidelog.client.transactional import GroupMetadata
from tidelog.errors import InvalidRequestError, RetriableError, TidelogError

log = logging.getLogger(__name__)

REBALANCE_HEARTBEAT_S = 0.1
"""How often a member heartbeats while its group rebalances: the heartbeat is the join, and
the answer that the group is Stable, so a joined member asks often."""

PartitionsCallback = Callable[["Consumer", list[TopicPartition]], None]
_REJOIN = ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_MEMBER_EPOCH")  # errors that
# put the member out of the group, to join again (under a new epoch)


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
        self._http = http or Http(timeout_s=self.config.request_timeout_ms / 1000, **connection)
        self._admin = Admin(http=self._http)
        self._group = quote(self.config.group_id, safe="")
        self._lock = threading.Condition()
        self._membership = Membership()
        self._routes: GroupRoutes | ConsumerProtocolRoutes = (
            ConsumerProtocolRoutes(self._http, self.config, self._owned)
            if self.config.group_protocol == "consumer"
            else GroupRoutes(self._http, self.config)
        )
        self._member_id: str | None = None
        self._giving_up: frozenset[TopicPartitionKey] = frozenset()  # being revoked
        self._answer: Rebalancing | Stable | None = None  # news for poll to act on
        self._heard: Rebalancing | Stable | None = None  # the last answer, news or not
        self._fatal: TidelogError | None = None
        self._subscription: _Subscription | None = None
        self._manual: set[TopicPartitionKey] = set()
        self._last_poll = time.monotonic()
        self._closed = False
        self._commits = Commits(
            self._http,
            self.config,
            fence=self._fence,
            regenerate=self._regenerate,
            on_commit=options.get("on_commit"),
        )
        self._fetcher = Fetcher(
            self._http,
            self._admin,
            self.config,
            assigned=self._assigned,
            stored_offsets=self._commits.stored,
            idle=self._await_group,
        )
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
            self._fetcher.positions[tp.key] = None
        self._fetcher.start_from(
            [tp for tp in wanted if tp.offset not in (OFFSET_INVALID, OFFSET_STORED)]
        )

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
            self._commits.maybe_auto(self._fetcher.consumed)
            out += self._fetcher.take(num_messages - len(out))
            left = None if deadline is None else deadline - time.monotonic()
            if len(out) >= num_messages or (left is not None and left <= 0):
                return out
            if out and left is None:
                left = self.config.fetch_max_wait_ms / 1000
            self._fetcher.fetch(left)

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
        self._fetcher.start_from([partition])

    def position(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        """The offset of the next record each partition hands out (OFFSET_INVALID: unknown)."""
        out = []
        for tp in partitions:
            offset = self._fetcher.positions.get(tp.key)
            out.append(
                TopicPartition(tp.topic, tp.partition, OFFSET_INVALID if offset is None else offset)
            )
        return out

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self._fetcher.paused |= {tp.key for tp in partitions}

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._fetcher.paused -= {tp.key for tp in partitions}

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
            wanted = self._fetcher.consumed()
        future = self._commits.submit(wanted)
        if asynchronous:
            return None
        return future.result()

    def consumer_group_metadata(self) -> GroupMetadata:
        """The group, member and generation, for a transactional producer's
        ``send_offsets_to_transaction``: its offsets are fenced by them (KIP-447)."""
        with self._lock:
            return GroupMetadata(
                self.config.group_id, self._member_id or "", self._membership.joined
            )

    def committed(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> list[TopicPartition]:
        """The group's committed offset of each partition (OFFSET_INVALID: none)."""
        del timeout
        stored = self._commits.stored()
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
                if not self.config.group_instance_id or self.config.group_protocol == "consumer":
                    self._leave()  # a static member of the consumer protocol leaves with -2
            elif self.config.enable_auto_commit and self._manual:
                self._commits.quietly(self._fetcher.consumed())
        finally:
            with self._lock:
                self._closed = True
                self._lock.notify_all()
            self._heartbeat.join()
            self._commits.shutdown()
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
                self._fetcher.forget(lost)
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
            self._giving_up = frozenset(step.revoke)
        self._revoke(step.revoke)
        if step.revoke:
            with self._lock:
                self._giving_up = frozenset()
                self._lock.notify_all()  # heartbeat now, to say so: the next owner waits
        if step.join is not None:
            with self._lock:
                self._membership.join(step.join)
                self._lock.notify_all()  # heartbeat now: that is the join
        if step.assign is not None:
            for key in step.assign:
                self._fetcher.positions[key] = None
            self._fetcher.start_from([])
            self._call(self._subscription.on_assign, step.assign)

    def _revoke(self, partitions: Sequence[TopicPartitionKey]) -> None:
        if not partitions or self._subscription is None:
            return
        if self.config.enable_auto_commit:
            self._commits.quietly(self._fetcher.consumed(partitions))
        self._fetcher.forget(partitions)
        self._call(self._subscription.on_revoke, partitions)

    def _join(self) -> None:
        assert self._subscription is not None
        try:
            joined = self._routes.join(self._subscription.topics, self._subscription.pattern)
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
            self._routes.leave(member)

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
                    answer = self._routes.heartbeat(member, generation)
                finally:
                    self._lock.acquire()
                if self._member_id != member:
                    continue  # the member left or joined again meanwhile
                if isinstance(answer, (Rebalancing, Stable)):
                    self._hear(answer)
                elif answer is not None:
                    self._out_of_group(answer)
                self._lock.notify_all()

    def _out_of_group(self, error: TidelogError) -> None:
        """Called with the lock held."""
        if error.kafka_error.name in _REJOIN:
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
                self._routes.leave(member)
            finally:
                self._lock.acquire()

    def _owned(self) -> frozenset[TopicPartitionKey]:
        """What the member still owns, as its consumer-protocol heartbeats say: partitions
        being revoked included until their commit is made, or their next owner could start
        from an older one."""
        with self._lock:
            return self._membership.owned | self._giving_up

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

    def _unassign_all(self) -> None:
        self._fetcher.forget(list(self._fetcher.positions))
        self._manual = set()

    def _await_group(self, seconds: float) -> None:
        """Nothing to fetch: wait for the group to hand something out."""
        with self._lock:
            if self._answer is None and self._fatal is None:
                self._lock.wait(seconds)

    # -- committing -----------------------------------------------------------------------

    def _fence(self) -> tuple[str | None, int, int]:
        with self._lock:
            member = self._member_id if self._subscription is not None else None
            return member, self._membership.held, self._membership.joined

    def _regenerate(self, member: str, joined: int) -> int | None:
        heard = self._routes.heartbeat(member, joined)
        if not isinstance(heard, (Rebalancing, Stable)):
            return None
        with self._lock:
            current = self._membership.commit_generation(heard)
            self._hear(heard)  # news for the next poll, too
        return current


def _is_pattern(topic: str | re.Pattern[str]) -> bool:
    return isinstance(topic, re.Pattern) or topic.startswith("^")
