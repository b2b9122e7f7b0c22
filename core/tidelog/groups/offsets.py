"""A group's committed offsets: Kafka's OffsetCommit (fenced by member and generation),
OffsetFetch, resetting offsets while the group is empty, OffsetDelete and DeleteGroups.

Commits are conditional on the group's meta item as the fence read it, so a membership change
between the check and the write refences the commit. Offsets are items of their own
(:mod:`tidelog.groups.items`), never part of the group's membership state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from tidelog.errors import ConflictError, InvalidRequestError, RetriableError, TidelogError
from tidelog.groups import items, sessions
from tidelog.groups.consumer.model import ConsumerGroup
from tidelog.groups.model import (
    MAX_METADATA_BYTES,
    REBALANCING,
    Committed,
    Group,
    GroupNotFoundError,
    IllegalGenerationError,
    NonEmptyGroupError,
    RebalanceInProgressError,
    State,
    UnknownMemberError,
    expired_members,
    known_member,
    validate_group_id,
)
from tidelog.log.read.fetch import LogReader
from tidelog.log.topics import MAX_NAME, Topic, Topics
from tidelog.storage import ConditionFailedError, Delete, Item, MetadataStore, Put, Write
from tidelog.storage.metadata import MAX_BATCH_GET, MAX_TRANSACTION_WRITES

_ATTEMPTS = 30
_GUARDS = 3  # a commit's checks: the meta item, and its member's and the assignment's items


@dataclass(frozen=True)
class OffsetCommit:
    topic: str
    partition: int
    offset: int
    metadata: str = ""
    leader_epoch: int = -1


@dataclass(frozen=True)
class CommitResult:
    topic: str
    partition: int
    offset: int | None = None
    error: TidelogError | None = None


class GroupOffsets:
    def __init__(
        self,
        meta: MetadataStore,
        topics: Topics,
        reader: LogReader,
        *,
        clock_ms: Callable[[], int],
        current: Callable[[str], Group | ConsumerGroup],
    ) -> None:
        """``current``: the group as it is now, of either protocol, members whose session ran
        out removed."""
        self._meta = meta
        self._topics = topics
        self._reader = reader
        self._clock_ms = clock_ms
        self._current = current

    def commit(
        self, name: str, member_id: str, generation: int, offsets: Sequence[OffsetCommit]
    ) -> list[CommitResult]:
        """Kafka's OffsetCommit: the member and generation are checked first, for the whole
        request; then each partition. Any offset is taken from a current member, lower ones
        included (a consumer that seeks back commits its new position): fencing, not
        monotonicity, is the protection."""
        validate_group_id(name)
        # A partition named twice is committed once, at the last offset named: Kafka's
        # coordinator reads a commit's partitions into a map.
        offsets = list({(o.topic, o.partition): o for o in offsets}.values())
        keys = [(o.topic, o.partition) for o in offsets]
        guard: list[Write] | None = self._fenced(name, member_id, generation)
        results: dict[tuple[str, int], CommitResult] = {}
        pending = []
        topics: dict[str, Topic | TidelogError] = {}  # each read once: a consumer names a few
        for commit in offsets:
            error = self._check_commit(commit, topics)
            if error is not None:
                results[(commit.topic, commit.partition)] = CommitResult(
                    commit.topic, commit.partition, error=error
                )
            else:
                pending.append(commit)
        for start in range(0, len(pending), MAX_TRANSACTION_WRITES - _GUARDS):
            chunk = pending[start : start + MAX_TRANSACTION_WRITES - _GUARDS]
            for result in self._commit_chunk(name, member_id, generation, chunk, guard):
                results[(result.topic, result.partition)] = result
            guard = None  # fenced again for the next chunk
        return [results[k] for k in keys]

    def _check_commit(
        self, commit: OffsetCommit, topics: dict[str, Topic | TidelogError]
    ) -> TidelogError | None:
        if len(commit.metadata.encode()) > MAX_METADATA_BYTES:
            return InvalidRequestError(
                f"metadata over {MAX_METADATA_BYTES} bytes", kafka_error="OFFSET_METADATA_TOO_LARGE"
            )
        found = topics.get(commit.topic)
        if found is None:
            try:
                found = self._topics.get(commit.topic)
            except TidelogError as exc:
                found = exc
            topics[commit.topic] = found
        if isinstance(found, TidelogError):
            return found
        try:
            found.check_partition(commit.partition)
        except TidelogError as exc:
            return exc
        return None

    def _commit_chunk(
        self,
        name: str,
        member_id: str,
        generation: int,
        chunk: Sequence[OffsetCommit],
        guard: list[Write] | None,
    ) -> list[CommitResult]:
        """The chunk's offsets written, conditional on ``guard`` (the fencing as it stands)
        or, when none is given or it no longer holds, on the group fenced again."""
        for _ in range(_ATTEMPTS):
            guard = guard or self._fenced(name, member_id, generation)
            now = self._clock_ms()
            writes: list[Write] = [
                Put(
                    items.offset_item(
                        name,
                        Committed(
                            commit.topic,
                            commit.partition,
                            commit.offset,
                            commit.metadata,
                            now,
                            commit.leader_epoch,
                        ),
                        generation=generation,
                        member_id=member_id,
                    )
                )
                for commit in chunk
            ]
            try:
                # Conditional on the group as fenced: a membership change in between refences.
                self._meta.transact([*guard, *writes])
            except ConditionFailedError:
                guard = None
                continue
            return [CommitResult(c.topic, c.partition, c.offset) for c in chunk]
        raise RetriableError(f"group {name} kept changing under the commit; try again")

    def _fenced(self, name: str, member_id: str, generation: int) -> list[Write]:
        """Fence the commit (raising Kafka's errors), and the checks that keep its writes
        conditional on what it was fenced on. A member in good standing is fenced on its own
        items and the meta item (a consumer commits every few seconds: reading every member's
        item each time made commits O(members)); anything else on the whole group."""
        if member_id:
            view = sessions.member_view(self._meta, name, member_id, with_assignment=True)
            member = None if view is None else view.members.get(member_id)
            now = self._clock_ms()
            if (
                view is not None
                and member is not None
                and member_id not in expired_members(view, now)
            ):
                self._fence_commit(view, member_id, generation)
                # Kafka's offset commits keep a classic member's session alive, as heartbeats
                # do, while its group is Stable or gathering members.
                renews = view.state in (State.STABLE, State.PREPARING_REBALANCE)
                checks = items.member_checks(name, view, member, renew_ms=now if renews else None)
                return [*items.guard(name, view), *checks]
        group = self._current(name)
        self._fence_commit(group, member_id, generation)
        return items.guard(name, group)

    def _fence_commit(self, group: Group | ConsumerGroup, member_id: str, generation: int) -> None:
        if isinstance(group, ConsumerGroup):
            _fence_consumer_commit(group, member_id, generation)
            return
        if not group.members:
            # Kafka's ClassicGroup.validateOffsetCommit: generation -1 is a client outside group
            # management (an admin client, a consumer that assigns itself, or one of KIP-848's
            # that never subscribed, which names its own member id), and it may commit while
            # the group is empty or does not exist.
            if generation < 0:
                return
            raise UnknownMemberError(
                f"group {group.name} has no members: commit with generation_id -1"
            )
        known_member(group, member_id)
        if group.state == State.STABLE and generation == group.generation:
            return
        last = group.assignment.generation if group.assignment is not None else None
        if group.state in REBALANCING and generation == last:
            return  # what a member processed before the rebalance is still its to commit
        if group.state in REBALANCING and generation == group.generation:
            raise RebalanceInProgressError(
                f"group {group.name} is rebalancing: commit as generation {last}",
                generation=group.generation,
                state=group.state.value,
                kept_from=-1 if last is None else last,
            )
        raise IllegalGenerationError(
            f"generation {generation} is not the group's current {group.generation}"
        )

    def committed(
        self, name: str, partitions: Iterable[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], Committed]:
        wanted = None if partitions is None else set(partitions)
        pk = items.offsets_pk(name)
        if (
            wanted is not None
            and len(wanted) <= MAX_BATCH_GET
            and all(len(topic) <= MAX_NAME for topic, _ in wanted)  # no topic has a longer name
        ):
            # A member's few partitions of a group that may have committed thousands.
            keys = [(pk, items.offset_sk(t, p)) for t, p in wanted]
            found: Iterable[Item] = self._meta.get_many(keys).values()
        else:
            found = self._meta.query(pk, hi=items.TXN_OFFSET_PREFIX)
        out = {}
        for item in found:
            key = (str(item["topic"]), items.int_of(item["partition"]))
            if wanted is not None and key not in wanted:
                continue
            out[key] = Committed(
                key[0],
                key[1],
                items.int_of(item["offset"]),
                str(item.get("metadata", "")),
                items.int_of(item["commit_ms"]),
                items.int_of(item.get("leader_epoch", -1)),
            )
        return out

    def reset(
        self,
        name: str,
        to: str,
        *,
        topics: Sequence[str] = (),
        timestamp: int | None = None,
        offset: int | None = None,
    ) -> list[Committed]:
        """Move committed offsets anywhere (back included): only while the group is empty."""
        validate_group_id(name)
        group = self._current(name)
        if group.members:
            raise NonEmptyGroupError(
                f"group {name} has {len(group.members)} member(s): reset offsets only while it "
                "is empty"
            )
        names = list(topics) or sorted({t for t, _ in self.committed(name)})
        now = self._clock_ms()
        writes: list[Write] = []
        out = []
        for topic_name in names:
            topic = self._topics.get(topic_name)
            bounds_of = self._reader.heads([(topic.topic_id, p) for p in range(topic.partitions)])
            for partition in range(topic.partitions):
                bounds = bounds_of[(topic.topic_id, partition)]
                target = self._reset_target(
                    topic.topic_id, partition, bounds, to, timestamp=timestamp, offset=offset
                )
                reset = Committed(topic_name, partition, target, "", now)
                out.append(reset)
                writes.append(Put(items.offset_item(name, reset, generation=-1, member_id="")))
        step = MAX_TRANSACTION_WRITES - 2  # room for the guard, a group's creation included
        for start in range(0, len(writes), step):
            guard = items.guard(name, group)
            try:
                self._meta.transact([*guard, *writes[start : start + step]])
            except ConditionFailedError as exc:
                raise NonEmptyGroupError(f"group {name} changed during the reset") from exc
            if not group.exists:  # created by this first transaction
                group = replace(group, version=group.version + 1)
        return out

    def delete(self, name: str) -> None:
        """Kafka's DeleteGroups: an empty group, and every offset it committed, are gone (a
        group with members is NON_EMPTY_GROUP; one that never was, GROUP_ID_NOT_FOUND)."""
        validate_group_id(name)
        group = self._current(name)
        if group.members:
            raise NonEmptyGroupError(
                f"group {name} has {len(group.members)} member(s): delete it once it is empty"
            )
        offsets = [
            Delete(str(i["pk"]), str(i["sk"])) for i in self._meta.query(items.offsets_pk(name))
        ]
        if not group.exists and not offsets:
            raise GroupNotFoundError(f"group {name!r} does not exist")
        # The group's own items go in the last transaction, which removes its meta item on
        # condition that nothing joined meanwhile; every transaction before it (only a group
        # with more than ~95 committed partitions needs them) is fenced the same way.
        own = [
            Delete(str(i["pk"]), str(i["sk"]))
            for i in self._meta.query(items.group_pk(name))
            if i["sk"] != items.META_SK
        ]
        fence: Write = items.meta_check(name, group)
        if group.exists:
            fence = Delete(items.group_pk(name), items.META_SK, items.meta_condition(group))
        last: list[Write] = [*own, Delete(items.GROUPS_PK, name), fence]
        room = MAX_TRANSACTION_WRITES - len(last)
        head, tail = offsets[: len(offsets) - room] if len(offsets) > room else [], offsets[-room:]
        step = MAX_TRANSACTION_WRITES - 1
        chunks = [
            [items.meta_check(name, group), *head[i : i + step]] for i in range(0, len(head), step)
        ]
        try:
            for chunk in [*chunks, [*tail, *last]]:
                self._meta.transact(chunk)
        except ConditionFailedError as exc:
            raise NonEmptyGroupError(f"group {name} changed during the delete") from exc

    def delete_offsets(
        self, name: str, partitions: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], TidelogError | None]:
        """Kafka's OffsetDelete (KIP-496): the committed offsets of ``partitions`` are gone,
        except those of topics a member is subscribed to (GROUP_SUBSCRIBED_TO_TOPIC). A group
        with neither members nor offsets is GROUP_ID_NOT_FOUND."""
        validate_group_id(name)
        for _ in range(_ATTEMPTS):
            group = self._current(name)
            if not group.exists and not any(self._meta.query(items.offsets_pk(name), limit=1)):
                raise GroupNotFoundError(f"group {name!r} does not exist")
            outcome: dict[tuple[str, int], TidelogError | None] = {}
            for topic, partition in dict.fromkeys(partitions):
                outcome[(topic, partition)] = (
                    SubscribedTopicError(
                        f"group {name} has a member subscribed to {topic}: its offsets stay"
                    )
                    if _subscribed(group, topic)
                    else None
                )
            gone = [
                Delete(items.offsets_pk(name), items.offset_sk(t, p))
                for (t, p), error in outcome.items()
                if error is None
            ]
            step = MAX_TRANSACTION_WRITES - 1
            try:
                for start in range(0, len(gone), step):
                    self._meta.transact(
                        [items.meta_check(name, group), *gone[start : start + step]]
                    )
            except ConditionFailedError:
                continue  # the membership changed: judge the subscriptions again
            return outcome
        raise RetriableError(f"group {name} kept changing; retry the deletion")

    def _reset_target(
        self,
        topic_id: str,
        partition: int,
        bounds: tuple[int, int],
        to: str,
        *,
        timestamp: int | None,
        offset: int | None,
    ) -> int:
        start, end = bounds
        if to == "earliest":
            return start
        if to == "latest":
            return end
        if to == "timestamp":
            if timestamp is None:
                raise InvalidRequestError('to "timestamp" needs a timestamp')
            found = self._reader.offset_for_timestamp(topic_id, partition, timestamp)
            return end if found is None else found[0]
        if to == "offset":
            if offset is None:
                raise InvalidRequestError('to "offset" needs an offset')
            return min(max(offset, start), end)
        raise InvalidRequestError("to must be earliest, latest, timestamp or offset")


def _fence_consumer_commit(group: ConsumerGroup, member_id: str, epoch: int) -> None:
    """Kafka's ConsumerGroup.validateOffsetCommit: a member's commit carries its current
    epoch; one from outside the group management (epoch -1) is taken only while the group is
    empty."""
    if epoch < 0 and not group.members:
        return
    group.member_at(member_id, epoch)


class SubscribedTopicError(ConflictError):
    default_kafka_error = "GROUP_SUBSCRIBED_TO_TOPIC"


def _subscribed(group: Group | ConsumerGroup, topic: str) -> bool:
    return any(member.subscribes(topic) for member in group.members.values())
