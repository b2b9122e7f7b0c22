"""Kafka's transaction APIs on the agent (KIP-98, KIP-447, KIP-664's tooling), over the
coordinator every agent serves (tidelog.transactions.coordinator): InitProducerId with a
transactional id, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn,
DescribeTransactions and ListTransactions."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from tidelog import runtime
from tidelog.errors import RetriableError, TidelogError
from tidelog.kafka.codec import NONE, Answer, Request, code, field, items
from tidelog.log.write.producer_ids import allocate_producer_id
from tidelog.transactions.coordinator import TransactionCoordinator
from tidelog.transactions.offsets import PendingOffset
from tidelog.txn.state import Txn

NO_TIME = datetime.datetime.fromtimestamp(-0.001, datetime.UTC)  # encodes as -1


def _code(exc: TidelogError) -> int:
    """The error a client hears. A store that failed (or answered ambiguously) is Kafka's
    coordinator failing to write its log: COORDINATOR_NOT_AVAILABLE, which every client
    retries; what the retry finds already done it answers as done."""
    if isinstance(exc, RetriableError) and exc.kafka_error.name != "CONCURRENT_TRANSACTIONS":
        return code("COORDINATOR_NOT_AVAILABLE")
    return exc.kafka_error.code


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000)


def _at(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)


class TransactionHandlers:
    def __init__(
        self, coordinator: Callable[[], TransactionCoordinator] = runtime.transactions
    ) -> None:
        self._coordinator = coordinator

    def init_producer_id(self, request: Request) -> Answer:
        body = request.body
        transactional_id = field(body, "transactional_id")
        answer: Answer = {"throttle_time": 0, "error_code": NONE}
        try:
            if transactional_id is None:  # an idempotent producer: a fresh id, epoch 0
                producer_id, epoch = allocate_producer_id(runtime.metadata_store())
                return {**answer, "producer_id": producer_id, "producer_epoch": epoch}
            producer_id = int(field(body, "producer_id", -1))
            expected = (producer_id, int(field(body, "producer_epoch", -1)))
            txn = self._coordinator().init_producer_id(
                str(transactional_id),
                _ms(body.transaction_timeout),
                expected if producer_id >= 0 else None,
            )
        except TidelogError as exc:
            return {**answer, "error_code": _code(exc), "producer_id": -1, "producer_epoch": -1}
        return {**answer, "producer_id": txn.producer_id, "producer_epoch": txn.epoch}

    def add_partitions_to_txn(self, request: Request) -> Answer:
        body = request.body
        topics = items(body.v3_and_below_topics)
        wanted = [(str(t.name), int(p)) for t in topics for p in items(t.partitions)]
        errors = _unknown(wanted)
        if errors:  # Kafka adds none of them: the others are OPERATION_NOT_ATTEMPTED
            error = code("OPERATION_NOT_ATTEMPTED")
            return _by_partition(wanted, lambda tp: errors.get(tp, error))
        try:
            self._coordinator().add_partitions(
                str(body.v3_and_below_transactional_id),
                int(body.v3_and_below_producer_id),
                int(body.v3_and_below_producer_epoch),
                wanted,
            )
        except TidelogError as exc:
            failed = _code(exc)
            return _by_partition(wanted, lambda _: failed)
        return _by_partition(wanted, lambda _: NONE)

    def add_offsets_to_txn(self, request: Request) -> Answer:
        body = request.body
        return self._simple(
            lambda c: c.add_offsets(
                str(body.transactional_id),
                int(body.producer_id),
                int(body.producer_epoch),
                str(body.group_id),
            )
        )

    def end_txn(self, request: Request) -> Answer:
        body = request.body
        return self._simple(
            lambda c: c.end_txn(
                str(body.transactional_id),
                int(body.producer_id),
                int(body.producer_epoch),
                bool(body.committed),
            )
        )

    def txn_offset_commit(self, request: Request) -> Answer:
        body = request.body
        pending = [
            PendingOffset(
                str(t.name),
                int(p.partition_index),
                int(p.committed_offset),
                str(p.committed_metadata or ""),
                int(field(p, "committed_leader_epoch", -1)),
            )
            for t in items(body.topics)
            for p in items(t.partitions)
        ]
        wanted = [(o.topic, o.partition) for o in pending]
        errors = _unknown(wanted)
        try:
            self._coordinator().commit_offsets(
                str(body.transactional_id),
                int(body.producer_id),
                int(body.producer_epoch),
                str(body.group_id),
                [o for o in pending if (o.topic, o.partition) not in errors],
                member_id=str(field(body, "member_id", "")),
                generation=int(field(body, "generation_id", -1)),
            )
        except TidelogError as exc:
            failed = _code(exc)
            return _offsets_answer(wanted, lambda tp: errors.get(tp, failed))
        return _offsets_answer(wanted, lambda tp: errors.get(tp, NONE))

    def describe_transactions(self, request: Request) -> Answer:
        states = []
        for transactional_id in items(request.body.transactional_ids):
            try:
                txn = self._coordinator().describe(str(transactional_id))
            except TidelogError as exc:
                states.append(described(str(transactional_id), None, exc.kafka_error.code))
                continue
            states.append(described(str(transactional_id), txn, NONE))
        return {"throttle_time": 0, "transaction_states": states}

    def list_transactions(self, request: Request) -> Answer:
        body = request.body
        known = {
            "Empty",
            "Ongoing",
            "PrepareCommit",
            "PrepareAbort",
            "CompleteCommit",
            "CompleteAbort",
            "PrepareEpochFence",
            "Dead",
        }
        wanted_states = {str(s) for s in items(field(body, "state_filters"))}
        producers = {int(p) for p in items(field(body, "producer_id_filters"))}
        longer_than = int(field(body, "duration_filter", -1))
        now = runtime.clock_ms()
        listed = []
        for txn in self._coordinator().list():
            if wanted_states and txn.state.value not in wanted_states:
                continue
            if producers and txn.producer_id not in producers:
                continue
            if longer_than >= 0 and (txn.started_ms < 0 or now - txn.started_ms < longer_than):
                continue
            listed.append(
                {
                    "transactional_id": txn.transactional_id,
                    "producer_id": txn.producer_id,
                    "transaction_state": txn.state.value,
                }
            )
        return {
            "throttle_time": 0,
            "error_code": NONE,
            "unknown_state_filters": sorted(wanted_states - known),
            "transaction_states": listed,
        }

    def _simple(self, call: Callable[[TransactionCoordinator], Txn]) -> Answer:
        try:
            call(self._coordinator())
        except TidelogError as exc:
            return {"throttle_time": 0, "error_code": _code(exc)}
        return {"throttle_time": 0, "error_code": NONE}


def _unknown(wanted: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The error of each partition named that does not exist."""
    errors = {}
    for name, partition in wanted:
        try:
            runtime.topic_cache().get(name, partition).check_partition(partition)
        except TidelogError as exc:
            errors[(name, partition)] = exc.kafka_error.code
    return errors


def _by_partition(wanted: list[tuple[str, int]], error: Callable[[tuple[str, int]], int]) -> Answer:
    by_topic: dict[str, list[Answer]] = {}
    for name, partition in wanted:
        by_topic.setdefault(name, []).append(
            {"partition_index": partition, "partition_error_code": error((name, partition))}
        )
    return {
        "throttle_time": 0,
        "error_code": NONE,
        "results_by_topic_v3_and_below": [
            {"name": name, "results_by_partition": partitions}
            for name, partitions in by_topic.items()
        ],
    }


def _offsets_answer(
    wanted: list[tuple[str, int]], error: Callable[[tuple[str, int]], int]
) -> Answer:
    by_topic: dict[str, list[Answer]] = {}
    for name, partition in wanted:
        by_topic.setdefault(name, []).append(
            {"partition_index": partition, "error_code": error((name, partition))}
        )
    return {
        "throttle_time": 0,
        "topics": [{"name": name, "partitions": ps} for name, ps in by_topic.items()],
    }


def described(transactional_id: str, txn: Txn | None, error: int) -> Answer:
    if txn is None:
        return {
            "error_code": error,
            "transactional_id": transactional_id,
            "transaction_state": "",
            "transaction_timeout": 0,
            "transaction_start_time": NO_TIME,
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
    by_topic: dict[str, list[int]] = {}
    for name, partition in sorted(txn.partitions):
        by_topic.setdefault(name, []).append(partition)
    return {
        "error_code": error,
        "transactional_id": transactional_id,
        "transaction_state": txn.state.value,
        "transaction_timeout": txn.timeout_ms,
        # -1 when no transaction is open, as Kafka answers (a plain -1 would read as null).
        "transaction_start_time": _at(txn.started_ms) if txn.started_ms >= 0 else NO_TIME,
        "producer_id": txn.producer_id,
        "producer_epoch": txn.epoch,
        "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
    }
