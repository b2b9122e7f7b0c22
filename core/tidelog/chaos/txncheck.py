"""The transactional anomalies (pure), over the ``txn``, ``txn-poll`` and ``txn-read``
operations of a history (tidelog.chaos.txnworkers):

- ``aborted-read`` (G1a): a read_committed reader (a poll, or a final read) saw a record of a
  transaction that certainly aborted.
- ``lost-commit``: a record of a transaction that certainly committed is missing from a
  final read_committed read.
- ``torn-transaction``: a final read_committed read holds some of a transaction's records
  but not all (whatever its outcome: committed, aborted or unknown, it is all or nothing).
- ``txn-duplicate``: a record at more than one offset in what read_committed readers saw.
- ``txn-inconsistent-offset``: two records at one offset across read_committed readers.
- ``txn-divergent-reads``: the final read_committed reads over Kafka and over HTTP differ.
- ``txn-non-monotonic-poll``: a read_committed consumer's offsets going backwards in a
  partition.
- ``own-uncommitted-read``: a transaction read one of its own records before it committed
  (its reads are read_committed, and a transaction is not committed while it reads).

A transaction's own reads (``reads``, of the ``txn-reader``) count with the consumers' polls
for every check of what read_committed readers saw.

Jepsen's cycle checks (G0, G1c over write-write and write-read dependencies) are not run:
concurrent transactions interleave their records in a partition, so write order gives cycles
Kafka allows by design (G0), and so do reads: T2 writes to p, T1 writes to p after it and
commits, T2 reads T1's records and commits, a cycle T1 -wr-> T2 -ww-> T1 (G1c). Kafka promises
read_committed visibility and atomicity, which the checks above hold, not Adya's PL-2 over
interleaved partitions.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from tidelog.chaos.anomaly import EXAMPLES, Anomaly
from tidelog.chaos.history import Op

Location = tuple[int, int]


@dataclass
class TxnFacts:
    values: dict[str, list[str]] = field(default_factory=dict)  # transaction -> its records
    reads: dict[str, list[str]] = field(default_factory=dict)  # transaction -> what it read
    outcome: dict[str, str] = field(default_factory=dict)  # commit, abort or info
    of_value: dict[str, str] = field(default_factory=dict)  # record -> its transaction
    polls: list[tuple[str, int, int, str]] = field(default_factory=list)
    final: dict[str, dict[int, list[tuple[int, str]]]] = field(default_factory=dict)

    @classmethod
    def of(cls, ops: Sequence[Op]) -> TxnFacts:
        facts = cls()
        for op in ops:
            value = op.value
            if op.f == "txn":
                name = str(value["txn"])
                if op.type == "invoke":
                    facts.values[name] = [str(v) for v in value["values"]]
                    facts.outcome.setdefault(name, "info")
                    for record in facts.values[name]:
                        facts.of_value[record] = name
                elif op.type == "ok":
                    facts.outcome[name] = str(value["outcome"])
                    read = value.get("reads") or []
                    facts.reads[name] = [str(v) for _, _, v in read]
                    for p, o, v in read:
                        facts.polls.append((op.process, int(p), int(o), str(v)))
            elif op.f == "txn-poll" and op.type == "ok":
                for p, o, v in value["records"]:
                    facts.polls.append((op.process, int(p), int(o), str(v)))
            elif op.f == "txn-read" and op.type == "ok":
                reader = facts.final.setdefault(str(value["reader"]), {})
                reader[int(value["partition"])] = [(int(o), str(v)) for o, v in value["records"]]
        return facts

    def seen(self) -> Iterator[tuple[str, Location, str]]:
        """(who, where, record) of everything read_committed readers saw."""
        for process, p, o, v in self.polls:
            yield process, (p, o), v
        for reader, partitions in self.final.items():
            for p, records in partitions.items():
                for o, v in records:
                    yield reader, (p, o), v


def aborted_reads(facts: TxnFacts) -> Iterator[Anomaly]:
    for who, (p, o), record in facts.seen():
        txn = facts.of_value.get(record)
        if txn is not None and facts.outcome.get(txn) == "abort":
            yield Anomaly(
                "aborted-read", {"reader": who, "partition": p, "offset": o, "record": record}
            )


def lost_commits(facts: TxnFacts) -> Iterator[Anomaly]:
    for reader, partitions in facts.final.items():
        present = {v for records in partitions.values() for _, v in records}
        for txn, outcome in sorted(facts.outcome.items()):
            missing = [v for v in facts.values[txn] if v not in present]
            if outcome == "commit" and missing:
                yield Anomaly("lost-commit", {"txn": txn, "reader": reader, "missing": missing})


def torn_transactions(facts: TxnFacts) -> Iterator[Anomaly]:
    for reader, partitions in facts.final.items():
        present = {v for records in partitions.values() for _, v in records}
        for txn, records in sorted(facts.values.items()):
            there = [v for v in records if v in present]
            if there and len(there) != len(records):
                yield Anomaly(
                    "torn-transaction",
                    {
                        "txn": txn,
                        "reader": reader,
                        "outcome": facts.outcome[txn],
                        "present": len(there),
                        "of": len(records),
                    },
                )


def duplicates_and_inconsistencies(facts: TxnFacts) -> Iterator[Anomaly]:
    where: dict[str, set[Location]] = defaultdict(set)
    at: dict[Location, set[str]] = defaultdict(set)
    for _, location, record in facts.seen():
        where[record].add(location)
        at[location].add(record)
    for record, locations in sorted(where.items()):
        if len(locations) > 1:
            yield Anomaly("txn-duplicate", {"record": record, "at": sorted(locations)})
    for location, records in sorted(at.items()):
        if len(records) > 1:
            yield Anomaly(
                "txn-inconsistent-offset",
                {"partition": location[0], "offset": location[1], "records": sorted(records)},
            )


def divergent_reads(facts: TxnFacts) -> Iterator[Anomaly]:
    for first, second in itertools.pairwise(sorted(facts.final)):
        for p in sorted(set(facts.final[first]) | set(facts.final[second])):
            a, b = facts.final[first].get(p), facts.final[second].get(p)
            if a != b:
                yield Anomaly(
                    "txn-divergent-reads",
                    {
                        "partition": p,
                        "readers": [first, second],
                        "lengths": [len(a or []), len(b or [])],
                    },
                )


def non_monotonic_polls(facts: TxnFacts) -> Iterator[Anomaly]:
    last: dict[tuple[str, int], int] = {}
    for process, p, o, _ in facts.polls:
        key = (process, p)
        if key in last and o <= last[key]:
            yield Anomaly(
                "txn-non-monotonic-poll",
                {"process": process, "partition": p, "after": last[key], "offset": o},
            )
        last[key] = o


def own_uncommitted_reads(facts: TxnFacts) -> Iterator[Anomaly]:
    for txn, read in sorted(facts.reads.items()):
        own = sorted(set(read) & set(facts.values.get(txn, [])))
        if own:
            yield Anomaly("own-uncommitted-read", {"txn": txn, "records": own[:EXAMPLES]})


def check_transactions(ops: Sequence[Op]) -> dict[str, list[Anomaly]]:
    facts = TxnFacts.of(ops)
    found: dict[str, list[Anomaly]] = defaultdict(list)
    for run in (
        aborted_reads,
        lost_commits,
        torn_transactions,
        duplicates_and_inconsistencies,
        divergent_reads,
        non_monotonic_polls,
        own_uncommitted_reads,
    ):
        for anomaly in run(facts):
            found[anomaly.kind].append(anomaly)
    return dict(found)
