"""Kafka's OffsetCommit, OffsetFetch and OffsetDelete over tidelog's group offsets
(:mod:`tidelog.groups.offsets`): every agent answers for every group."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tidelog import runtime
from tidelog.errors import TidelogError
from tidelog.groups.coordinator import Coordinator
from tidelog.groups.model import validate_group_id
from tidelog.groups.offsets import CommitResult, OffsetCommit
from tidelog.groups.stored import check_fetch
from tidelog.kafka.codec import NONE, Answer, Request, code, field, items
from tidelog.storage.shared import SharedReads
from tidelog.transactions.offsets import unstable

NO_OFFSET = -1


class OffsetHandlers:
    def __init__(self, *, coordinator: Callable[[], Coordinator] = runtime.coordinator) -> None:
        self._coordinator = coordinator
        # A rebalanced group's members all fetch their offsets at once, each asking (as
        # librdkafka's read_committed consumers do) which are pending in a transaction: one
        # query of the group answers all who ask while the one before it is out.
        self._pending: SharedReads[str, set[tuple[str, int]]] = SharedReads(
            lambda names: {name: unstable(runtime.metadata_store(), name) for name in names}
        )

    def offset_commit(self, request: Request) -> Answer:
        body = request.body
        wanted = [
            OffsetCommit(
                str(t.name),
                int(p.partition_index),
                int(p.committed_offset),
                p.committed_metadata or "",
                int(field(p, "committed_leader_epoch", -1)),
            )
            for t in items(body.topics)
            for p in items(t.partitions)
        ]
        try:
            results = self._coordinator().commit(
                str(body.group_id),
                str(body.member_id),
                int(body.generation_id_or_member_epoch),
                wanted,
            )
        except TidelogError as exc:  # the whole request was refused: every partition says so
            results = [CommitResult(c.topic, c.partition, error=exc) for c in wanted]
        by_topic: dict[str, list[Answer]] = {}
        for result in results:
            error = NONE if result.error is None else result.error.kafka_error.code
            by_topic.setdefault(result.topic, []).append(
                {"partition_index": result.partition, "error_code": error}
            )
        return {
            "throttle_time": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    def offset_fetch(self, request: Request) -> Answer:
        body = request.body
        groups = field(body, "groups")
        if groups is None:  # before v8: one group
            groups = [OffsetFetchGroup(str(body.group_id), body.topics)]
        stable = bool(field(body, "require_stable", False))
        answers = [
            {
                "group_id": str(g.group_id),
                **self._fetch_offsets(
                    str(g.group_id),
                    g.topics,
                    require_stable=stable,
                    member=(field(g, "member_id"), int(field(g, "member_epoch", -1))),
                ),
            }
            for g in items(groups)
        ]
        # Before v8 the one group's answer is the whole answer; from v8, each in a list.
        first = answers[0] if answers else {"topics": [], "error_code": NONE}
        return {"throttle_time": 0, **first, "groups": answers}

    def offset_delete(self, request: Request) -> Answer:
        body = request.body
        wanted = [
            (str(t.name), int(p.partition_index))
            for t in items(body.topics)
            for p in items(t.partitions)
        ]
        try:
            outcome = self._coordinator().offsets.delete_offsets(str(body.group_id), wanted)
        except TidelogError as exc:
            return {"error_code": exc.kafka_error.code, "throttle_time": 0, "topics": []}
        by_topic: dict[str, list[Answer]] = {}
        for (topic, partition), error in outcome.items():
            by_topic.setdefault(topic, []).append(
                {
                    "partition_index": partition,
                    "error_code": NONE if error is None else error.kafka_error.code,
                }
            )
        return {
            "error_code": NONE,
            "throttle_time": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    def _fetch_offsets(
        self,
        name: str,
        topics: Iterable[Any] | None,
        *,
        require_stable: bool,
        member: tuple[str | None, int] = (None, -1),
    ) -> Answer:
        """A group's committed offsets: of the partitions named, or all it has (``topics``
        null). A partition without one answers offset -1, as Kafka's does. Asked for stable
        offsets (KIP-447), a partition with an offset pending in an open transaction answers
        UNSTABLE_OFFSET_COMMIT, retriable: the consumer waits for the transaction's end."""
        try:
            member_id, epoch = member
            if member_id is not None or epoch >= 0:  # v9: a consumer-protocol member's fetch
                check_fetch(self._coordinator().current(validate_group_id(name)), member_id, epoch)
            named = None
            if topics is not None:
                named = [(str(t.name), int(p)) for t in topics for p in items(t.partition_indexes)]
            committed = self._coordinator().committed(validate_group_id(name), named)
            pending = self._pending.read([name]).get(name, set()) if require_stable else set()
        except TidelogError as exc:
            return {"topics": [], "error_code": exc.kafka_error.code}
        wanted = sorted(committed) if named is None else named
        by_topic: dict[str, list[Answer]] = {}
        for topic, partition in wanted:
            found = committed.get((topic, partition))
            error = code("UNSTABLE_OFFSET_COMMIT") if (topic, partition) in pending else NONE
            by_topic.setdefault(topic, []).append(
                {
                    "partition_index": partition,
                    "committed_offset": NO_OFFSET if found is None or error else found.offset,
                    "committed_leader_epoch": -1 if found is None or error else found.leader_epoch,
                    "metadata": "" if found is None else found.metadata,
                    "error_code": error,
                }
            )
        return {
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            "error_code": NONE,
        }


@dataclass(frozen=True)
class OffsetFetchGroup:
    """One group of an OffsetFetch, as v8 names it, for the versions before that name one."""

    group_id: str
    topics: Any
    member_id: str | None = None
    member_epoch: int = -1
