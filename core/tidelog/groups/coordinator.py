"""The group coordinator over the metadata store: joins, heartbeats, leaves, fenced offset
commits, and the assignment a rebalance writes (its items: :mod:`tidelog.groups.items`).

Every membership change (join, leave, a session found expired, a subscribed topic appearing or
growing) is one transaction conditional on the meta item's version; it moves the group to the
next generation in PreparingRebalance and starts the assignment state machine for it. The
state machine's task calls :meth:`Coordinator.assign`, which writes the assignment only if the
generation is still current; where one of the group's members runs the assignor, as Kafka
Streams' and Kafka Connect's do, it only elects that leader, whose SyncGroup brings the
assignment (:meth:`Coordinator.complete`). Sessions expire by their last heartbeat, checked on
every operation on the group (never by DynamoDB TTL).
"""

from __future__ import annotations

import contextlib
import logging
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from tidelog.assignors import TopicPartition, assign
from tidelog.groups import items, sessions, stored
from tidelog.groups.changes import GroupChanges
from tidelog.groups.joining import (
    elect_leader,
    led_assignment,
    requested_member,
    same_protocol_type,
)
from tidelog.groups.model import (
    REBALANCING,
    Assignment,
    Committed,
    FencedInstanceError,
    Group,
    Heartbeat,
    IllegalGenerationError,
    Joined,
    JoinRequest,
    Limits,
    Member,
    RebalanceInProgressError,
    State,
    UnknownMemberError,
    checked_topics,
    is_cooperative,
    joining_generation,
    known_member,
    laggards,
    membership_changed,
    rebalance_deadline_ms,
    rebalanced,
    select_protocol,
    stalled,
    subscriptions,
    validate_group_id,
    withheld,
)
from tidelog.groups.offsets import CommitResult, GroupOffsets, OffsetCommit
from tidelog.groups.rebalancer import Rebalancer
from tidelog.groups.stored import AnyGroup
from tidelog.log.read.fetch import LogReader
from tidelog.log.topics import Topics
from tidelog.storage import ConditionFailedError, MetadataStore, Put, Write

logger = logging.getLogger(__name__)

BARRIER_POLL_S = 1  # how long the state machine waits before asking the barrier again
_PATH_SAFE = re.compile(r"[A-Za-z0-9._~-]{1,100}")


class Coordinator(GroupChanges):
    def __init__(
        self,
        meta: MetadataStore,
        topics: Topics,
        reader: LogReader,
        rebalancer: Rebalancer,
        *,
        clock_ms: Callable[[], int],
        limits: Limits | None = None,
        initial_rebalance_delay_ms: int = 3000,
        new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
        new_incarnation: Callable[[], str] = lambda: uuid.uuid4().hex[:8],
    ) -> None:
        super().__init__(
            meta,
            topics,
            rebalancer,
            clock_ms=clock_ms,
            initial_rebalance_delay_ms=initial_rebalance_delay_ms,
            new_incarnation=new_incarnation,
        )
        self._reader = reader
        self._limits = limits or Limits()
        self._new_id = new_id
        self._sweeps = sessions.Sweeps()
        self.offsets = GroupOffsets(meta, topics, reader, clock_ms=clock_ms, current=self.current)

    # -- reading -------------------------------------------------------------------------

    def member_view(self, name: str, member_id: str) -> Group:
        """The classic group as one member sees it: the meta item, the member's own items and
        the last assignment, in one read by key (ConsumerProtocolGroupError likewise)."""
        view = sessions.member_view(self._meta, name, member_id, with_assignment=True)
        if view is None:
            raise stored.not_classic(name)
        return view

    def groups(self) -> list[AnyGroup]:
        """Every group, of either protocol, sessions that ran out removed (not written)."""
        return [self.current(str(item["sk"])) for item in self._meta.query(items.GROUPS_PK)]

    def current(self, name: str) -> AnyGroup:
        return stored.load_any(self._meta, name, self._clock_ms(), self._expired)

    def describe(self, name: str) -> Group:
        """The group as it is (sessions that ran out removed); a group that does not exist is
        Dead, as Kafka's DescribeGroups answers."""
        validate_group_id(name)
        group = self._mutate(name, lambda group: (group, [], group))
        return group if group.exists else replace(group, state=State.DEAD)

    # -- membership ----------------------------------------------------------------------

    def join(self, name: str, request: JoinRequest, *, member_id: str | None = None) -> Joined:
        """A new member joins; ``member_id``, when given, is one ``reserve_member_id`` handed
        out (UNKNOWN_MEMBER_ID once its time is up)."""
        validate_group_id(name)
        stored.release_consumer(self._meta, name)
        now = self._clock_ms()
        return self._mutate(
            name, lambda group: self._joining(name, group, request, member_id, now), arrived_ms=now
        )

    def _joining(
        self, name: str, group: Group, request: JoinRequest, member_id: str | None, now: int
    ) -> tuple[Group, list[Write], Joined]:
        instance = request.group_instance_id
        previous = group.static_member(instance) if instance is not None else None
        if member_id is not None and group.pending.get(member_id, -1) < now:
            raise UnknownMemberError(f"member id {member_id!r} was not handed out, or ran out")
        pending = {k: v for k, v in group.pending.items() if k != member_id}
        group = replace(group, pending=pending)
        others = {
            k: v for k, v in group.members.items() if previous is None or k != previous.member_id
        }
        same_protocol_type(replace(group, members=others), request.protocol_type)
        group = replace(group, protocol_type=request.protocol_type)
        member = requested_member(
            member_id or self._member_id(request),
            request,
            now,
            self._limits,
            joined_generation=joining_generation(group),
        )
        members = {**others, member.member_id: member}
        protocol = select_protocol(members.values())
        extra: list[Write] = []
        if previous is not None:
            extra.append(items.fence(name, previous))
            if (
                group.state == State.STABLE
                and previous.same_subscription(member)
                and group.current_assignment() is not None
                and previous.member_id != group.leader
            ):
                # KIP-345: the same static member is back; it gets its partitions back
                # under its new id, and nobody rebalances.
                members[member.member_id] = replace(member, joined_generation=group.generation)
                assignment = group.current_assignment()
                assert assignment is not None
                moved = dict(assignment.members)
                moved[member.member_id] = moved.pop(previous.member_id, ())
                sent = dict(assignment.sent)
                if previous.member_id in sent:
                    sent[member.member_id] = sent.pop(previous.member_id)
                stable = replace(
                    group,
                    members=members,
                    assignment=replace(assignment, members=moved, sent=sent),
                )
                extra.append(Put(items.assignment_item(name, stable.assignment)))
                return stable, extra, Joined(member.member_id, group.generation, State.STABLE)
        changed = membership_changed(group, members, protocol, now)
        return changed, extra, Joined(member.member_id, changed.generation, changed.state)

    def reserve_member_id(self, name: str, request: JoinRequest) -> str:
        """Kafka's MEMBER_ID_REQUIRED (KIP-394): the id a new member is to join with, kept for
        one session timeout. A client whose join answer was lost retries with it, rather than
        leaving a member behind that no one will ever heartbeat."""
        validate_group_id(name)
        stored.release_consumer(self._meta, name)
        now = self._clock_ms()
        member_id = self._member_id(request)
        requested_member(member_id, request, now, self._limits)  # checked now, not on its return
        expires = now + request.session_timeout_ms

        def change(group: Group) -> tuple[Group, list[Write], str]:
            return replace(group, pending={**group.pending, member_id: expires}), [], member_id

        # An id of its own, whoever else is reserving: the meta item is all it needs to read.
        return self._mutate(name, change, arrived_ms=now, whole=False)

    def _member_id(self, request: JoinRequest) -> str:
        """As Kafka names members: after the instance, else the client (when its id is one
        that travels in a URL path as it is)."""
        client = request.client_id if _PATH_SAFE.fullmatch(request.client_id) else None
        named = request.group_instance_id if request.group_instance_id is not None else client
        return f"{named}-{self._new_id()}" if named else self._new_id()

    def rejoin(self, name: str, member_id: str, request: JoinRequest) -> Joined:
        """Kafka's JoinGroup from a member the group knows. During a rebalance the member joins
        it; in a Stable group the same subscription changes nothing (the member syncs the
        current generation again), a new one starts a rebalance, as does a rebalance that
        never got its assignment. A member id that was handed out joins as a new member."""
        validate_group_id(name)
        now = self._clock_ms()

        def described(known: Member | None, generation: int) -> Member:
            return requested_member(
                member_id, request, now, self._limits, joined_generation=generation, known=known
            )

        quick = sessions.rejoin(
            self._meta,
            name,
            member_id,
            request.group_instance_id,
            described=described,
            now_ms=now,
            protocol_type=request.protocol_type,
        )
        if quick is not None:
            return quick

        def change(group: Group) -> tuple[Group, list[Write], Joined]:
            if member_id in group.pending:
                return self._joining(name, group, request, member_id, now)
            member = known_member(group, member_id)
            if request.group_instance_id != member.group_instance_id:
                raise FencedInstanceError(
                    f"member {member_id} joined with group_instance_id "
                    f"{member.group_instance_id!r}, not {request.group_instance_id!r}"
                )
            same_protocol_type(group, request.protocol_type)
            wanted = described(member, group.generation)
            stuck = stalled(group, now)
            # Kafka's leader rejoins a Stable group to have it rebalance (Streams' probing).
            leading = group.state == State.STABLE and member_id == group.leader
            if not wanted.same_subscription(member) or stuck or leading:
                # The member joins as a new member does; a stalled generation starts over.
                at = group.generation + 1 if stuck else joining_generation(group)
                members = {**group.members, member_id: replace(wanted, joined_generation=at)}
                change_of = rebalanced if stuck else membership_changed
                changed = change_of(group, members, select_protocol(members.values()), now)
                return changed, [], Joined(member_id, changed.generation, changed.state)
            if group.state not in REBALANCING:
                wanted = replace(wanted, joined_generation=member.joined_generation)
            rejoined = replace(group, members={**group.members, member_id: wanted})
            return rejoined, [], Joined(member_id, group.generation, group.state)

        return self._mutate(name, change, arrived_ms=now)

    def renew(self, name: str, group: Group, member: Member) -> None:
        """A waiting member's session renewed by one write of its item, if still as read in
        ``group`` (else at its next read); a stalled rebalance is started over by a heartbeat."""
        if stalled(group, self._clock_ms()):
            with contextlib.suppress(RebalanceInProgressError):  # what a waiting member expects
                self.heartbeat(name, member.member_id, member.joined_generation)
            return
        with contextlib.suppress(ConditionFailedError):
            self._meta.write(items.renewal(name, member, self._clock_ms()))

    def leave(self, name: str, member_id: str) -> Group:
        """The member leaves; the group as it is after."""
        validate_group_id(name)

        def change(group: Group) -> tuple[Group, list[Write], Group]:
            known_member(group, member_id)
            members = {k: v for k, v in group.members.items() if k != member_id}
            protocol = select_protocol(members.values()) if members else None
            left = membership_changed(group, members, protocol, self._clock_ms())
            return left, [], left

        return self._mutate(name, change)

    def heartbeat(
        self, name: str, member_id: str, generation: int, *, with_assignment: bool = True
    ) -> Heartbeat:
        """Kafka's Heartbeat, JoinGroup and SyncGroup in one: keeps the session alive; during a
        rebalance, a heartbeat naming the new generation joins it (the member has revoked its
        partitions, eager, or those outside what it was told to keep, cooperative); once the
        generation is Stable it answers the member's assignment (unless not ``with_assignment``,
        as Kafka's Heartbeat answers). Most read only the member's own items and the meta item
        (tidelog.groups.sessions)."""
        validate_group_id(name)
        now = self._clock_ms()
        sweep = self._sweeps.due(name, now)
        if not sweep:
            quick = sessions.beat(
                self._meta, name, member_id, generation, now, with_assignment=with_assignment
            )
            if quick is not None:
                return quick
        try:
            return self._beat_whole(name, member_id, generation, now)
        finally:
            if sweep:
                self._sweeps.done(name, self._clock_ms())

    def _beat_whole(self, name: str, member_id: str, generation: int, now: int) -> Heartbeat:
        sizes = self.topic_sizes()

        def change(group: Group) -> tuple[Group, list[Write], Group]:
            member = known_member(group, member_id)
            if generation > group.generation:
                raise IllegalGenerationError(
                    f"generation {generation} is ahead of the group's {group.generation}"
                )
            alive = replace(member, heartbeat_ms=now)
            if group.state in REBALANCING and generation == group.generation:
                # The member names the new generation: it has given up what it had to, and
                # joins (the join barrier counts it).
                alive = replace(alive, joined_generation=generation)
            members = {**group.members, member_id: alive}
            assigned = group.current_assignment() is not None
            if group.state == State.STABLE and assigned and group.leader is None:
                wanted = {
                    t: n for t, n in sizes.items() if any(m.subscribes(t) for m in members.values())
                }
                checked = checked_topics(group, wanted, now)
                if checked is None:
                    changed = rebalanced(group, members, group.protocol, now)
                    return changed, [], changed
                group = checked
            if stalled(group, now):
                logger.warning(
                    "group %s: generation %d never got its assignment", name, group.generation
                )
                changed = rebalanced(group, members, group.protocol, now)
                return changed, [], changed
            alive_group = replace(group, members=members)
            return alive_group, [], alive_group

        return sessions.answer(self._mutate(name, change, arrived_ms=now), member_id)

    # -- the rebalance's task --------------------------------------------------------------

    def assign(self, name: str, generation: int) -> dict[str, object]:
        """Compute and write generation ``generation``'s assignment, if it is still current and
        every member has joined it. Until then the answer says to wait and ask again (the state
        machine loops); a member that has not joined by the rebalance timeout is removed, as
        Kafka removes it, which starts the next generation. A group upgraded to the consumer
        protocol meanwhile is stale here: its epochs have executions of their own."""
        try:
            return self._assign(name, generation)
        except stored.ConsumerProtocolGroupError:
            return {"group": name, "generation": generation, "stale": True, "waiting": False}

    def _assign(self, name: str, generation: int) -> dict[str, object]:
        answer: dict[str, object] = {
            "group": name,
            "generation": generation,
            "stale": False,
            "waiting": False,
        }
        stale = {**answer, "stale": True}

        def completing(group: Group) -> tuple[Group, list[Write], str]:
            """Everyone joined: the assignor runs (Kafka's CompletingRebalance)."""
            if group.generation != generation or group.state not in REBALANCING:
                return group, [], "stale"
            late = laggards(group) if group.state == State.PREPARING_REBALANCE else []
            if late:
                now = self._clock_ms()
                if now < rebalance_deadline_ms(group):
                    return group, [], "wait"
                logger.info("group %s: %s did not rejoin generation %d", name, late, generation)
                members = {k: v for k, v in group.members.items() if k not in late}
                protocol = select_protocol(members.values()) if members else None
                return rebalanced(group, members, protocol, now), [], "stale"
            # Kafka chooses the protocol here too (initNextGeneration): a join that read only
            # the meta item counted on it (tidelog.groups.sessions).
            protocol = select_protocol(group.members.values()) if group.members else None
            completing = replace(group, state=State.COMPLETING_REBALANCE, protocol=protocol)
            leader = elect_leader(completing)
            # Where a member assigns, its JoinGroup answer names it the leader, and its
            # SyncGroup brings the assignment (complete); the state machine is done.
            step = "assign" if leader is None else "leader"
            return replace(completing, leader=leader), [], step

        step = self._mutate(name, completing, expire=False)
        if step == "stale":
            return stale
        if step == "leader":
            return answer
        if step == "wait":
            return {**answer, "waiting": True, "wait_seconds": BARRIER_POLL_S}
        sizes = self.topic_sizes()
        follow_up: list[bool] = [False]

        def change(group: Group) -> tuple[Group, list[Write], dict[str, object]]:
            if group.generation != generation or group.state != State.COMPLETING_REBALANCE:
                return group, [], stale
            subscribed, wanted = subscriptions(group, sizes)
            result = assign(group.protocol or "range", wanted, subscribed)
            assignment = Assignment(
                generation,
                group.protocol,
                {m: tuple(ps) for m, ps in result.items()},
                wanted,
            )
            follow_up[0] = is_cooperative(group.protocol) and withheld(result, wanted)
            stable = replace(
                group, state=State.STABLE, assignment=assignment, stable_ms=self._clock_ms()
            )
            return stable, [Put(items.assignment_item(name, assignment))], answer

        result = self._mutate(name, change, expire=False)
        if follow_up[0]:
            # Cooperative rebalancing (KIP-429): partitions changing owner were held back. The
            # next generation hands them over, once every member has joined it: the barrier
            # waits for their old owners to give them up (or to time out).
            self._mutate(
                name,
                lambda group: (
                    (rebalanced(group, group.members, group.protocol, self._clock_ms()), [], None)
                    if group.generation == generation and group.state == State.STABLE
                    else (group, [], None)
                ),
            )
        return result

    def complete(
        self,
        name: str,
        member_id: str,
        generation: int,
        sent: Mapping[str, bytes],
        partitions_of: Callable[[bytes], Sequence[TopicPartition]],
    ) -> Assignment | None:
        """Kafka's SyncGroup from the leader, where a member assigns: what it ``sent`` (each
        member's assignment as its client encoded it, ``partitions_of`` reads the partitions
        in it) completes the generation, whose assignment it answers. A follower's SyncGroup
        changes nothing (``None``, as for a generation not Stable yet)."""
        validate_group_id(name)

        def change(group: Group) -> tuple[Group, list[Write], Assignment | None]:
            now = self._clock_ms()
            stable = led_assignment(
                group, member_id, generation, sent, partitions_of=partitions_of, now_ms=now
            )
            if stable is None:
                done = group.current_assignment() if group.generation == generation else None
                return group, [], done
            put = Put(items.assignment_item(name, stable.assignment))
            return stable, [put], stable.assignment

        return self._mutate(name, change)

    # -- offsets: tidelog.groups.offsets ------------------------------------------------

    def commit(
        self, name: str, member_id: str, generation: int, offsets: Sequence[OffsetCommit]
    ) -> list[CommitResult]:
        return self.offsets.commit(name, member_id, generation, offsets)

    def committed(
        self, name: str, partitions: Iterable[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], Committed]:
        return self.offsets.committed(name, partitions)

    def reset(
        self,
        name: str,
        to: str,
        *,
        topics: Sequence[str] = (),
        timestamp: int | None = None,
        offset: int | None = None,
    ) -> list[Committed]:
        return self.offsets.reset(name, to, topics=topics, timestamp=timestamp, offset=offset)

    def delete(self, name: str) -> None:
        self.offsets.delete(name)
