"""Reading a whole history for every anomaly Jepsen looks for in a Kafka-like log (pure).

Each check is a function of the history's facts to anomalies; ``check`` runs them all. The
kinds, and what tidelog promises that makes each one a bug (docs/reliability.md):

- ``lost``: an acknowledged send missing from a final read (acks=all: acknowledged only once
  committed).
- ``duplicate``: one value at more than one offset (idempotent producers; nothing is written
  twice).
- ``inconsistent-offset``: two values at one offset, across polls and final reads, or an
  acknowledged offset holding another value.
- ``divergent-reads``: the final reads (over Kafka and over HTTP) of a partition differ.
- ``offset-gap``: a final read whose offsets are not contiguous (the chaos topic is never
  compacted, so a gap is a lost offset).
- ``failed-but-present``: a send reported as certainly failed, found in the log.
- ``non-monotonic-send``: a producer's later send to a partition acknowledged at a lower offset.
- ``non-monotonic-poll``: a consumer's offsets in a partition going backwards with no
  assignment in between.
- ``poll-skip``: an assign consumer passing over offsets that are in the log.
- ``group-skip``: a record below the group's final committed offset that no member polled.
- ``client-fatal``: a client that died of a fatal error (librdkafka's idempotence above all).

``unseen-but-present`` is informational: sends of unknown outcome that were written.

The transactional workload's anomalies (aborted reads, lost commits, torn transactions...)
are checked over its own topic's operations: tidelog.chaos.txncheck.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidelog.chaos.anomaly import EXAMPLES, Anomaly
from tidelog.chaos.history import Op, by_process
from tidelog.chaos.txncheck import check_transactions

Location = tuple[int, int]  # (partition, offset)


@dataclass
class Facts:
    """What a history says, arranged once for the checks."""

    ops: Sequence[Op]
    acked: dict[str, Location] = field(default_factory=dict)  # value -> where acknowledged
    # Acknowledged without an offset (Kafka's DUPLICATE_SEQUENCE_NUMBER: written before, its
    # offset no longer known): must be in the log, anywhere.
    acked_somewhere: set[str] = field(default_factory=set)
    sends: dict[str, str] = field(default_factory=dict)  # value -> ok, fail or info
    producer_order: dict[str, list[str]] = field(default_factory=dict)  # process -> values
    final: dict[str, dict[int, list[tuple[int, str]]]] = field(default_factory=dict)
    polls: list[tuple[str, int, int, str]] = field(default_factory=list)  # process, p, o, value
    committed: dict[int, int] = field(default_factory=dict)
    group_processes: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, ops: Sequence[Op]) -> Facts:
        facts = cls(ops)
        for process, own in by_process(ops):
            facts._take(process, own)
        return facts

    def _take(self, process: str, ops: list[Op]) -> None:
        invoked: dict[str, bool] = {}  # sends begun and not yet completed
        for op in ops:
            value = op.value
            if op.f == "send":
                name = str(value["value"])
                if op.type == "invoke":
                    invoked[name] = True
                    self.producer_order.setdefault(process, []).append(name)
                    continue
                invoked.pop(name, None)
                self.sends[name] = op.type
                if op.type == "ok" and int(value["offset"]) >= 0:
                    self.acked[name] = (int(value["partition"]), int(value["offset"]))
                elif op.type == "ok":
                    self.acked_somewhere.add(name)
            elif op.f == "poll" and op.type == "ok":
                if value.get("group"):
                    self.group_processes.add(process)
                for partition, offset, record in value["records"]:
                    self.polls.append((process, int(partition), int(offset), str(record)))
            elif op.f == "read" and op.type == "ok":
                reader = self.final.setdefault(str(value["reader"]), {})
                reader[int(value["partition"])] = [(int(o), str(v)) for o, v in value["records"]]
            elif op.f == "committed" and op.type == "ok":
                self.committed = {int(p): int(o) for p, o in value["offsets"].items()}
        for name in invoked:  # the process ended before it heard: unknown
            self.sends.setdefault(name, "info")

    # Derived once the facts are taken (Facts.of), for every check that needs them.

    @functools.cached_property
    def values_at(self) -> dict[Location, set[str]]:
        """Every value seen at each offset, by any reader, final or polling."""
        seen: dict[Location, set[str]] = defaultdict(set)
        for records in self.final.values():
            for partition, read in records.items():
                for offset, value in read:
                    seen[(partition, offset)].add(value)
        for _, partition, offset, value in self.polls:
            seen[(partition, offset)].add(value)
        return seen

    @functools.cached_property
    def in_log(self) -> dict[str, set[Location]]:
        """Where each value is, by any reader."""
        where: dict[str, set[Location]] = defaultdict(set)
        for location, values in self.values_at.items():
            for value in values:
                where[value].add(location)
        return where

    @functools.cached_property
    def logged(self) -> dict[int, list[int]]:
        """Each partition's offsets in the final reads, in order."""
        offsets: dict[int, set[int]] = defaultdict(set)
        for records in self.final.values():
            for partition, read in records.items():
                offsets[partition].update(o for o, _ in read)
        return {partition: sorted(found) for partition, found in offsets.items()}

    def log_offsets(self, partition: int) -> list[int]:
        return self.logged.get(partition, [])


Check = Callable[[Facts], Iterable[Anomaly]]


def lost(facts: Facts) -> Iterator[Anomaly]:
    for reader, records in facts.final.items():
        values = {v for read in records.values() for _, v in read}
        for value, (partition, offset) in facts.acked.items():
            if value not in values:
                yield Anomaly(
                    "lost",
                    {"value": value, "partition": partition, "offset": offset, "reader": reader},
                )
        for value in sorted(facts.acked_somewhere - values):
            yield Anomaly("lost", {"value": value, "offset": None, "reader": reader})


def duplicates(facts: Facts) -> Iterator[Anomaly]:
    for value, locations in facts.in_log.items():
        if len(locations) > 1:
            yield Anomaly("duplicate", {"value": value, "at": sorted(locations)})


def inconsistent_offsets(facts: Facts) -> Iterator[Anomaly]:
    seen = facts.values_at
    for (partition, offset), values in seen.items():
        if len(values) > 1:
            yield Anomaly(
                "inconsistent-offset",
                {"partition": partition, "offset": offset, "values": sorted(values)},
            )
    for value, location in facts.acked.items():
        there = seen.get(location, set())
        if there and value not in there:
            yield Anomaly(
                "inconsistent-offset",
                {
                    "partition": location[0],
                    "offset": location[1],
                    "acked": value,
                    "read": sorted(there),
                },
            )


def divergent_reads(facts: Facts) -> Iterator[Anomaly]:
    readers = sorted(facts.final)
    for first, second in itertools.pairwise(readers):
        for partition in sorted(set(facts.final[first]) | set(facts.final[second])):
            a = facts.final[first].get(partition)
            b = facts.final[second].get(partition)
            if a != b:
                yield Anomaly(
                    "divergent-reads",
                    {
                        "partition": partition,
                        "readers": [first, second],
                        "lengths": [len(a or []), len(b or [])],
                    },
                )


def offset_gaps(facts: Facts) -> Iterator[Anomaly]:
    for reader, records in facts.final.items():
        for partition, read in records.items():
            offsets = [o for o, _ in read]
            for before, after in itertools.pairwise(offsets):
                if after != before + 1:
                    yield Anomaly(
                        "offset-gap",
                        {"partition": partition, "reader": reader, "between": [before, after]},
                    )


def failed_but_present(facts: Facts) -> Iterator[Anomaly]:
    where = facts.in_log
    for value, outcome in facts.sends.items():
        if outcome == "fail" and value in where:
            yield Anomaly("failed-but-present", {"value": value, "at": sorted(where[value])})


def non_monotonic_sends(facts: Facts) -> Iterator[Anomaly]:
    for process, values in facts.producer_order.items():
        last: dict[int, tuple[int, str]] = {}
        for value in values:
            if value not in facts.acked:
                continue
            partition, offset = facts.acked[value]
            if partition in last and offset <= last[partition][0]:
                yield Anomaly(
                    "non-monotonic-send",
                    {
                        "process": process,
                        "partition": partition,
                        "earlier": {"value": last[partition][1], "offset": last[partition][0]},
                        "later": {"value": value, "offset": offset},
                    },
                )
            last[partition] = (offset, value)


def _poll_runs(facts: Facts) -> Iterator[tuple[str, Op, Mapping[int, int]]]:
    """Each consumer's polls, with where each partition's reading (re)started: an ``assign``
    op starts every partition afresh from its ``from`` offset (or anywhere)."""
    for process, ops in by_process(facts.ops):
        start: dict[int, int] = {}
        for op in ops:
            if op.f == "assign" and op.type == "ok":
                start = {int(p): int(o) for p, o in op.value.get("from", {}).items()}
                yield process, op, start
            elif op.f == "poll" and op.type == "ok":
                yield process, op, start


def non_monotonic_polls(facts: Facts) -> Iterator[Anomaly]:
    last: dict[tuple[str, int], int] = {}
    for process, op, _ in _poll_runs(facts):
        if op.f == "assign":
            for key in [k for k in last if k[0] == process]:
                del last[key]
            continue
        for partition, offset, _ in op.value["records"]:
            key = (process, int(partition))
            if key in last and int(offset) <= last[key]:
                yield Anomaly(
                    "non-monotonic-poll",
                    {
                        "process": process,
                        "partition": partition,
                        "after": last[key],
                        "offset": offset,
                    },
                )
            last[key] = int(offset)


def poll_skips(facts: Facts) -> Iterator[Anomaly]:
    """Assign consumers only: the group's members move between partitions by design."""
    log = facts.logged
    last: dict[tuple[str, int], int] = {}
    for process, op, start in _poll_runs(facts):
        if process in facts.group_processes:
            continue
        if op.f == "assign":
            for key in [k for k in last if k[0] == process]:
                del last[key]
            for partition, offset in start.items():
                last[(process, partition)] = offset - 1
            continue
        for partition, offset, _ in op.value["records"]:
            key = (process, int(partition))
            if key in last:
                offsets = log.get(int(partition), [])
                # the log's offsets strictly between the last polled one and this one
                first = bisect.bisect_right(offsets, last[key])
                missed = offsets[first : bisect.bisect_left(offsets, int(offset), first)]
                if missed:
                    yield Anomaly(
                        "poll-skip",
                        {
                            "process": process,
                            "partition": partition,
                            "from": last[key],
                            "to": offset,
                            "missed": missed[:EXAMPLES],
                        },
                    )
            last[key] = max(last.get(key, -1), int(offset))


def group_skips(facts: Facts) -> Iterator[Anomaly]:
    polled = {(p, o) for process, p, o, _ in facts.polls if process in facts.group_processes}
    for partition, committed in sorted(facts.committed.items()):
        missed = [
            o
            for o in facts.log_offsets(partition)
            if o < committed and (partition, o) not in polled
        ]
        if missed:
            yield Anomaly(
                "group-skip",
                {
                    "partition": partition,
                    "committed": committed,
                    "missed": len(missed),
                    "first": missed[:EXAMPLES],
                },
            )


def client_fatal(facts: Facts) -> Iterator[Anomaly]:
    for op in facts.ops:
        if op.f == "fatal":
            yield Anomaly("client-fatal", {"process": op.process, **op.value})


CHECKS: Sequence[Check] = (
    lost,
    duplicates,
    inconsistent_offsets,
    divergent_reads,
    offset_gaps,
    failed_but_present,
    non_monotonic_sends,
    non_monotonic_polls,
    poll_skips,
    group_skips,
    client_fatal,
)


@dataclass(frozen=True)
class Result:
    anomalies: Mapping[str, list[Anomaly]]
    counts: Mapping[str, int]  # operations, by outcome and function
    unseen_but_present: int  # sends of unknown outcome found written (informational)

    @property
    def valid(self) -> bool:
        return not any(self.anomalies.values())

    def summary(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "anomalies": {
                kind: {"count": len(found), "examples": [a.detail for a in found[:EXAMPLES]]}
                for kind, found in self.anomalies.items()
            },
            "counts": dict(self.counts),
            "unseen_but_present": self.unseen_but_present,
        }


def check(ops: Sequence[Op], checks: Sequence[Check] = CHECKS) -> Result:
    facts = Facts.of(ops)
    anomalies: dict[str, list[Anomaly]] = defaultdict(list)
    for run in checks:
        for anomaly in run(facts):
            anomalies[anomaly.kind].append(anomaly)
    for kind, found in check_transactions(ops).items():
        anomalies[kind] += found
    counts = Counter(f"{op.f}:{op.type}" for op in ops if op.type != "invoke" and op.f != "send")
    counts.update(f"send:{outcome}" for outcome in facts.sends.values())  # unfinished: info
    where = facts.in_log
    unseen = sum(1 for name, outcome in facts.sends.items() if outcome == "info" and name in where)
    return Result(dict(anomalies), dict(counts), unseen)
