"""Committing a flush: offsets are assigned here, atomically, or not at all.

For each partition the object holds batches for, the commit needs the partition's head (its
next offset), the states of the idempotent producers involved and the transactional ids its
transactions' requests name; it reads what of the log it does not know in one call, then plans
(tidelog.log.write.plan, pure): retried batches keep their original offsets, new ones get the
next offsets. The plans of a group of partitions are written in one DynamoDB transaction that
compare-and-sets every head, creates every index item, updates every producer state, marks the
partition for housekeeping and checks the topic still exists. A conflict (another writer moved
a head) means: re-read, re-plan, retry; the object never changes, since offsets are not in it.

Heads and producer states are kept as this process last wrote them, so a steady producer's
flush reads nothing: a stale guess fails its compare-and-set and comes back as a conflict. A
verdict that writes nothing (a duplicate, a refused sequence, a conditional append's mismatch)
has no compare-and-set to catch a stale guess, so it is never given from a kept state: such a
plan is planned again from what is read strongly.

An attempt whose outcome is unknown (a timeout, or a condition failure that may be our own
earlier attempt's success retried by botocore) is resolved by reading back: the index item at
the planned offset either names our object and range, or it does not.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tidelog.errors import RetriableError, TidelogError
from tidelog.log import keys
from tidelog.log.feed import Committed, Listener
from tidelog.log.head import Head
from tidelog.log.topics import TOPICS_PK, UnknownTopicError
from tidelog.log.write.plan import AppendResult, PartitionAppend, Plan, plan
from tidelog.log.write.producers import (
    ProducerState,
)
from tidelog.storage import (
    Check,
    Compare,
    ConditionFailedError,
    MetadataStore,
    Put,
    StorageUnavailableError,
    Write,
    all_of,
)
from tidelog.storage.metadata import MAX_TRANSACTION_WRITES
from tidelog.txn.guard import read_txns
from tidelog.txn.state import Txn

Sleep = Callable[[float], None]

# Producer states kept between flushes (about a kilobyte each): a partition's steady producers.
KEPT_STATES = 8192

PartitionKey = tuple[str, int]


@dataclass
class _Progress:
    """One commit call's state. Never kept on the Committer: in Lambda mode one Writer (and
    so one Committer) serves concurrent requests."""

    results: dict[tuple[str, int], AppendResult] = field(default_factory=dict)
    referenced: bool = False  # some index item now points at the object
    # Partitions an attempt of which may have committed, unconfirmed: if no later attempt
    # settles them, their requests must hear "maybe written", never "not written".
    uncertain: set[tuple[str, int]] = field(default_factory=set)


@dataclass
class _Known:
    """What an attempt plans from: read now, or kept from this process's own commits."""

    txns: Mapping[str, Txn | None]
    heads: dict[PartitionKey, Head | None]
    states: dict[PartitionKey, dict[int, ProducerState]]
    kept_states: set[PartitionKey]  # partitions some producer state of which was kept, not read


class Committer:
    def __init__(
        self,
        meta: MetadataStore,
        *,
        clock_ms: Callable[[], int],
        sleep: Sleep,
        jitter: Callable[[], float],
        attempts: int = 30,
        on_commit: Listener | None = None,
    ) -> None:
        """``on_commit`` hears each partition's new head and index entries when its
        transaction succeeds (see tidelog.log.feed)."""
        self._meta = meta
        self._on_commit = on_commit
        self._clock_ms = clock_ms
        self._sleep = sleep
        self._jitter = jitter
        self._attempts = attempts
        # The head each partition had after this process's last commit, or as a conflict
        # reported it. Planning from it skips a read; the commit's compare-and-set still
        # decides, and a stale guess comes back as a conflict carrying the current head.
        self._heads: dict[PartitionKey, Head | None] = {}
        self._states: OrderedDict[tuple[PartitionKey, int], ProducerState] = OrderedDict()
        self._heads_lock = threading.Lock()  # guards both

    def commit(
        self, appends: Sequence[PartitionAppend], object_key: str
    ) -> tuple[dict[tuple[str, int], AppendResult], bool]:
        """Each partition's result, and whether any index item now points at the object."""
        progress = _Progress()
        results = progress.results
        pending = list(appends)
        for attempt in range(self._attempts):
            if not pending:
                break
            if attempt:
                self._sleep(min(0.2, 0.002 * 2 ** min(attempt, 7)) * (0.5 + self._jitter()))
            plans = []
            try:
                known = self._known(pending)
            except StorageUnavailableError:
                continue
            for append in pending:
                try:
                    plans.append(self._plan(append, known))
                except StorageUnavailableError:
                    continue  # read failed: try this partition again next round
                except TidelogError as exc:
                    results[append.key] = AppendResult(append.partition, error=exc)
            self._write(plans, object_key, progress)
            pending = [a for a in pending if a.key not in results]
        for append in pending:
            where = f"partition {append.partition} of {append.topic.name!r}"
            if append.key in progress.uncertain:
                # Kafka's answer when acks=all times out: it may have been written. Clients
                # retry the same sequence, which is then found a duplicate if it was.
                error = RetriableError(
                    f"the commit to {where} may or may not have happened (storage answered "
                    "ambiguously); retry",
                    kafka_error="REQUEST_TIMED_OUT",
                )
            else:
                error = RetriableError(
                    f"could not commit to {where} after {self._attempts} attempts: the "
                    "partition is contended or storage is unavailable; retry"
                )
            results[append.key] = AppendResult(append.partition, error=error)
        return results, progress.referenced

    def _known(self, appends: Sequence[PartitionAppend]) -> _Known:
        """Everything the appends' plans stand on: kept where this process knows it, the rest
        read strongly, in one call; and the transactional ids their guards name, always read."""
        guards = list({g for a in appends for g in a.guards.values()})
        heads: dict[PartitionKey, Head | None] = {}
        states: dict[PartitionKey, dict[int, ProducerState]] = {a.key: {} for a in appends}
        kept_states: set[PartitionKey] = set()
        unread: list[tuple[PartitionKey, int]] = []
        with self._heads_lock:
            for append in appends:
                # A marker plans from the head as it is (one that closes nothing writes
                # nothing, so no compare-and-set would catch a stale guess), and so does a
                # conditional append (a mismatch writes nothing either).
                if append.key in self._heads and _may_guess_head(append):
                    heads[append.key] = self._heads[append.key]
                for producer_id in _idempotent(append):
                    state = self._states.get((append.key, producer_id))
                    if state is None:
                        unread.append((append.key, producer_id))
                        continue
                    self._states.move_to_end((append.key, producer_id))
                    states[append.key][producer_id] = state
                    kept_states.add(append.key)
        # Transactional ids apart: a role may read the log's keys and the coordinator's only
        # in calls of their own (IAM's LeadingKeys condition holds for every key of a call).
        txns = read_txns(self._meta.get_many([g.key for g in guards]), guards) if guards else {}
        wanted = [(keys.log_pk(*a.key), keys.HEAD_SK) for a in appends if a.key not in heads]
        wanted += [(keys.log_pk(*key), keys.producer_sk(pid)) for key, pid in unread]
        read = self._meta.get_many(wanted) if wanted else {}
        for append in appends:
            if append.key not in heads:
                pk = keys.log_pk(*append.key)
                heads[append.key] = Head.from_item(read.get((pk, keys.HEAD_SK)))
        for key, producer_id in unread:
            states[key] |= _states_in(read, key, [producer_id])
        return _Known(txns, heads, states, kept_states)

    def _plan(self, append: PartitionAppend, known: _Known) -> Plan:
        head = known.heads[append.key]
        planned = plan(append, head, known.states[append.key], known.txns)
        if planned.judged_unwritten and append.key in known.kept_states:
            pk, producer_ids = keys.log_pk(*append.key), _idempotent(append)
            read = self._meta.get_many([(pk, keys.producer_sk(pid)) for pid in producer_ids])
            planned = plan(append, head, _states_in(read, append.key, producer_ids), known.txns)
        return planned

    def _write(self, plans: list[Plan], object_key: str, progress: _Progress) -> None:
        """Write the plans in transactions; record what committed in ``progress``."""
        now = self._clock_ms()
        planned = [(p, p.writes(object_key, now)) for p in plans]  # built once per attempt
        for planned_group in _transactions(planned):
            group = [p for p, _ in planned_group]
            writes, owners = _group_writes(planned_group)
            if not any(isinstance(owner, Plan) for owner in owners):
                for p in group:  # nothing to write: every batch was a retry
                    progress.results[p.append.key] = p.result
                continue
            sent = time.monotonic()
            try:
                self._meta.transact(writes)
            except ConditionFailedError as exc:
                gone = {owners[i] for i in exc.failed if isinstance(owners[i], str)}
                self._learn_heads(exc, writes, owners)
                self._forget_states(group)
                self._settle(group, object_key, progress, gone)
            except StorageUnavailableError as exc:
                self._forget_heads(group)
                self._forget_states(group)
                if exc.ambiguous:
                    self._settle(group, object_key, progress, set())
            else:
                for p in group:
                    self._committed(p, progress)
                if self._on_commit is not None:
                    written = [p for p in group if p.runs]
                    self._on_commit(
                        Committed(
                            heads={p.append.key: p.new_head for p in written},
                            entries={p.append.key: p.entries(object_key, now) for p in written},
                            sent=sent,
                        )
                    )

    def _settle(
        self,
        group: list[Plan],
        object_key: str,
        progress: _Progress,
        deleted_topics: set[str | Plan],
    ) -> None:
        """After a failed or uncertain attempt: what is known to be done or impossible."""
        for p in group:
            if p.append.topic.topic_id in deleted_topics:
                error = UnknownTopicError(f"topic {p.append.topic.name!r} was deleted")
                progress.results[p.append.key] = AppendResult(p.append.partition, error=error)
            elif (landed := self._landed(p, object_key)) is None:
                progress.uncertain.add(p.append.key)
            elif landed:
                self._committed(p, progress)

    def _committed(self, p: Plan, progress: _Progress) -> None:
        progress.results[p.append.key] = p.result
        progress.referenced = progress.referenced or bool(p.runs)
        if p.runs:
            with self._heads_lock:
                self._heads[p.append.key] = p.new_head
                for producer_id, (_, state) in p.states.items():
                    self._states[(p.append.key, producer_id)] = state
                    self._states.move_to_end((p.append.key, producer_id))
                while len(self._states) > KEPT_STATES:
                    self._states.popitem(last=False)

    def _learn_heads(
        self, exc: ConditionFailedError, writes: list[Write], owners: list[Plan | str]
    ) -> None:
        """A refused head write reports the head as it is: the next plan starts from it."""
        with self._heads_lock:
            for i in exc.failed:
                owner, write = owners[i], writes[i]
                if (
                    isinstance(owner, Plan)
                    and isinstance(write, Put)
                    and (write.item.get("sk") == keys.HEAD_SK)
                ):
                    self._heads[owner.append.key] = Head.from_item(exc.current.get(i))
                elif isinstance(owner, Plan):
                    self._heads.pop(owner.append.key, None)

    def _forget_heads(self, group: list[Plan]) -> None:
        with self._heads_lock:
            for p in group:
                self._heads.pop(p.append.key, None)

    def _forget_states(self, group: list[Plan]) -> None:
        """A refused or uncertain write: what the group's producers' states are is unknown."""
        with self._heads_lock:
            for p in group:
                for producer_id in _idempotent(p.append):
                    self._states.pop((p.append.key, producer_id), None)

    def _landed(self, p: Plan, object_key: str) -> bool | None:
        """Did an earlier attempt of exactly this plan commit? Its first index item says;
        None if it cannot be read."""
        if not p.runs:
            return False
        run = p.runs[0]
        try:
            item = self._meta.get(keys.log_pk(*p.append.key), keys.index_sk(run.base_offset))
        except StorageUnavailableError:
            return None
        return (
            item is not None and item.get("object") == object_key and item.get("start") == run.start
        )


Planned = tuple[Plan, list[Write]]


def _states_in(
    read: Mapping[tuple[str, str], Mapping[str, object]], key: PartitionKey, producer_ids: list[int]
) -> dict[int, ProducerState]:
    """The states of ``producer_ids`` in partition ``key`` that ``read`` found."""
    pk = keys.log_pk(*key)
    return {
        pid: ProducerState.from_attributes(pid, dict(item))
        for pid in producer_ids
        if (item := read.get((pk, keys.producer_sk(pid)))) is not None
    }


def _may_guess_head(append: PartitionAppend) -> bool:
    return not append.has_markers and append.expected_offset is None


def _idempotent(append: PartitionAppend) -> list[int]:
    return list(dict.fromkeys(b.producer_id for b in append.batches if b.idempotent))


def _group_writes(group: list[Planned]) -> tuple[list[Write], list[Plan | str]]:
    """The group's writes, and who each belongs to: a plan, or (a topic id) a topic check."""
    writes: list[Write] = []
    owners: list[Plan | str] = []
    topics = sorted(
        {p.append.topic.name: p.append.topic for p, _ in group}.values(), key=lambda t: t.name
    )
    for topic in topics:
        writes.append(Check(TOPICS_PK, topic.name, Compare("topic_id", "=", topic.topic_id)))
        owners.append(topic.topic_id)
    checks: dict[tuple[str, str], int] = {}  # a transactional id's check: one per transaction
    for p, plan_writes in group:
        for write in plan_writes:
            if isinstance(write, Check) and write.key in checks:
                # Two partitions of one transaction: one check holding both conditions (equal
                # when both requests were sent in one transaction, as they should be).
                at = checks[write.key]
                held = writes[at]
                assert isinstance(held, Check)
                if held.condition != write.condition:
                    writes[at] = Check(*held.key, all_of(held.condition, write.condition))
                continue
            if isinstance(write, Check):
                checks[write.key] = len(writes)
            writes.append(write)
            owners.append(p)
    return writes, owners


def _transactions(planned: list[Planned]) -> list[list[Planned]]:
    """Plans grouped so each group's writes (plus a topic check each) fit one transaction."""
    groups: list[list[Planned]] = []
    size = 0
    topics: set[str] = set()
    for p, writes in planned:
        topic_id = p.append.topic.topic_id
        if not groups or size + len(writes) + (topic_id not in topics) > MAX_TRANSACTION_WRITES:
            groups.append([])
            size, topics = 0, set()
        need = len(writes) + (topic_id not in topics)
        if need > MAX_TRANSACTION_WRITES:
            raise RetriableError(
                f"partition {p.append.partition}: too many producers in one request; split it"
            )
        groups[-1].append((p, writes))
        topics.add(topic_id)
        size += need
    return groups
