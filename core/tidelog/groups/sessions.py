"""A member's heartbeat, its rejoin during a rebalance, and a new member's join while the group
gathers its members, that read its own items and the group's meta item, not the group.

Kafka's coordinator holds its groups in memory, so a heartbeat costs it nothing. Here a group is
its items in DynamoDB, and a heartbeat that read them all cost O(members): a group of 100, each
member beating every 3 s, read 3,300 items a second, and past about 30 members the reads queued
long enough for sessions to run out while they waited. So a heartbeat that finds the group
settled reads the meta item and its own items (member, fenced; and the assignment, when its
answer carries it) in one BatchGetItem, and renews its session by one conditional write of its
member item.

What only the whole group shows (a session of someone else that ran out, a subscribed topic
that appeared or grew, a rebalance that stalled) is found by a full heartbeat: the first of
each group on this host every ``SWEEP_MS``. Kafka finds expired sessions by a timer at the
deadline; here they are found up to ``SWEEP_MS`` later, while any member beats. Kafka's consumers
find new topics and partitions by refreshing metadata (``metadata.max.age.ms``, 5 minutes).

A new member's join must not change the group's protocol unseen: Kafka refuses a member whose
assignors share none with every member's (INCONSISTENT_GROUP_PROTOCOL), and picks the one most
members prefer. So the meta item keeps the assignors every member supports, as each change that
reads the group whole computes them, and a join that reads only the meta item is taken only
when it leaves them and the protocol as they are (``keeps_protocol``). A change that read the
group before such a join committed may keep more assignors than every member supports, never
fewer: a later join it lets through still shares one with everyone.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace

from tidelog.groups import items
from tidelog.groups.consumer import items as consumer_items
from tidelog.groups.model import (
    CONSUMER_PROTOCOL_TYPE,
    REBALANCING,
    Group,
    Heartbeat,
    Joined,
    Member,
    RebalanceInProgressError,
    State,
    is_cooperative,
    known_member,
    session_over,
    stalled,
)
from tidelog.storage import ConditionFailedError, Delete, ItemExists, MetadataStore

SWEEP_MS = 1000
"""How often each host reads a group whole on a heartbeat, while its members beat."""
_KEPT = 4096  # groups whose last sweep is remembered; an older one is simply swept again


class Sweeps:
    """When this host last read each group whole on a heartbeat, and whether it is reading it
    now (a sweep slower than ``SWEEP_MS``, on a busy store, is not joined by the next)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: OrderedDict[str, int | None] = OrderedDict()  # None: under way

    def due(self, name: str, now_ms: int) -> bool:
        """Is a full heartbeat due? If so the caller takes it, and says when it is ``done``."""
        with self._lock:
            if name in self._last:
                last = self._last[name]
                if last is None or 0 <= now_ms - last < SWEEP_MS:
                    return False
            self._last[name] = None
            self._last.move_to_end(name)
            while len(self._last) > _KEPT:
                self._last.popitem(last=False)
            return True

    def done(self, name: str, now_ms: int) -> None:
        with self._lock:
            self._last[name] = now_ms


def beat(
    meta: MetadataStore,
    name: str,
    member_id: str,
    generation: int,
    now_ms: int,
    *,
    with_assignment: bool,
) -> Heartbeat | None:
    """Kafka's Heartbeat from a member in good standing, on a group whose meta item says all it
    needs: Stable at the member's generation (the answer: its partitions), or rebalancing past
    it or already joined by it (REBALANCE_IN_PROGRESS); a member it does not have, or fenced,
    is told so. ``None``: the full heartbeat decides (an expired member, a generation to join,
    a consumer-protocol group, a write that lost a race). Not ``with_assignment``, the answer
    leaves the member's partitions out (and a cooperative member's to keep), and the
    assignment item unread."""
    group = member_view(meta, name, member_id, with_assignment=with_assignment)
    if group is None:
        return None
    member = known_member(group, member_id)  # not a member: told so, as the full one tells it
    if session_over(group, member, now_ms) or generation > group.generation:
        return None
    stable = group.state == State.STABLE and generation == group.generation
    assigned = group.current_assignment()
    if stable and with_assignment and assigned is None:
        return None  # a batch read is no snapshot: the meta item was read after a commit
    behind = generation < group.generation or member.joined_generation == group.generation
    if not stable and not (group.state in REBALANCING and behind):
        return None
    try:
        meta.write(items.renewal(name, member, now_ms))
    except ConditionFailedError:
        return None
    if stable:
        return Heartbeat(group.state, group.generation, assigned.of(member_id) if assigned else ())
    return answer(group, member_id)


def member_view(
    meta: MetadataStore, name: str, member_id: str, *, with_assignment: bool, reserved: bool = False
) -> Group | None:
    """The classic group as one member's requests see it, in one BatchGetItem: its meta item,
    the member (or that it was fenced, or, if ``reserved``, that its id was handed out) and the
    group's last assignment (if asked for) but no other member. ``None``: a consumer-protocol
    group."""
    pk = items.group_pk(name)
    wanted = [
        (pk, items.META_SK),
        (pk, items.MEMBER_PREFIX + member_id),
        (pk, items.FENCED_PREFIX + member_id),
    ]
    if with_assignment:
        wanted.append((pk, items.ASSIGNMENT_SK))
    if reserved:
        wanted.append((pk, items.PENDING_PREFIX + member_id))
    found = meta.get_many(wanted)
    if consumer_items.is_consumer(found.values()):
        return None
    return items.group_from_items(name, found.values())


def answer(group: Group, member_id: str) -> Heartbeat:
    """A heartbeat's answer: a Stable group's assignment, or REBALANCE_IN_PROGRESS with what a
    cooperative member keeps (its partitions in the last generation assigned)."""
    assigned = group.current_assignment()
    if group.state == State.STABLE and assigned is not None:
        return Heartbeat(group.state, group.generation, assigned.of(member_id))
    last = group.assignment
    keep = last.of(member_id) if is_cooperative(group.protocol) and last is not None else ()
    raise RebalanceInProgressError(
        f"group {group.name} is rebalancing to generation {group.generation}",
        generation=group.generation,
        state=group.state.value,
        keep=keep,
        kept_from=-1 if last is None else last.generation,
    )


def rejoin(
    meta: MetadataStore,
    name: str,
    member_id: str,
    instance_id: str | None,
    *,
    described: Callable[[Member | None, int], Member],
    now_ms: int,
    protocol_type: str = CONSUMER_PROTOCOL_TYPE,
) -> Joined | None:
    """Kafka's JoinGroup from a member in good standing while its group rebalances, with the
    subscription it had, or from a new member with the id it was handed while the group
    gathers its members: one BatchGetItem, and one write conditional on the meta item and the
    member's own items. (A rebalance is a wave of these: each that read the group whole read
    it once per member, n squared in all.) ``described(member, generation)`` is the member as
    the request describes it (``member`` as known, or ``None``: new), joined to the
    generation. ``None``: the full rejoin decides (a new subscription, a static member's
    first join, an assignor that could change the group's protocol, an ended session or
    reservation, a stalled rebalance, a write that lost a race, a group that is not
    rebalancing or not classic)."""
    group = member_view(meta, name, member_id, with_assignment=False, reserved=True)
    if group is None or group.state not in REBALANCING or member_id in group.fenced:
        return None
    if group.protocol_type != protocol_type:  # refused, or the group's first: the full join
        return None
    member = group.members.get(member_id)
    if member is None:
        return _join_reserved(
            meta, group, member_id, instance_id, described=described, now_ms=now_ms
        )
    if member.group_instance_id != instance_id:
        return None
    # Stalled as far as this member's rebalance timeout goes: the full rejoin, which reads
    # everyone's, decides past it.
    if session_over(group, member, now_ms) or stalled(group, now_ms):
        return None
    joined = described(member, group.generation)
    if not joined.same_subscription(member):
        return None
    writes = items.member_writes(name, {member_id: member}, {member_id: joined}, items.member_item)
    try:
        meta.transact([items.meta_check(name, group), *writes])
    except ConditionFailedError:
        return None
    return Joined(member_id, group.generation, group.state)


def _join_reserved(
    meta: MetadataStore,
    group: Group,
    member_id: str,
    instance_id: str | None,
    *,
    described: Callable[[Member | None, int], Member],
    now_ms: int,
) -> Joined | None:
    """A new member joins the generation gathering, if the meta item shows that changes
    nothing but the members: its reserved id claimed, its item written."""
    if (
        instance_id is not None  # a static member may replace its old self: the full join
        or group.state != State.PREPARING_REBALANCE
        or group.pending.get(member_id, -1) < now_ms
    ):
        return None
    joined = described(None, group.generation)
    # Stalled as far as its own rebalance timeout goes: the full join decides past it.
    if stalled(replace(group, members={member_id: joined}), now_ms):
        return None
    if not keeps_protocol(group, joined):
        return None
    claimed = Delete(items.group_pk(group.name), items.PENDING_PREFIX + member_id, ItemExists())
    writes = items.member_writes(group.name, {}, {member_id: joined}, items.member_item)
    try:
        meta.transact([items.meta_check(group.name, group), claimed, *writes])
    except ConditionFailedError:
        return None
    return Joined(member_id, group.generation, group.state)


def keeps_protocol(group: Group, member: Member) -> bool:
    """Does ``member`` joining leave the group's candidate assignors and its protocol as the
    meta item has them? It does when the member supports every candidate (their intersection
    stays) and votes for the protocol (Kafka's selectProtocol: the most votes; that one only
    gains one). The protocol is chosen again at the join barrier, which reads every member."""
    candidates = group.assignors
    if not candidates or not candidates <= set(member.assignors):
        return False
    return next(a for a in member.assignors if a in candidates) == group.protocol
