"""A consumer group's items, under the same keys as a classic group's
(tidelog.groups.items), told apart by the meta item's ``type``::

    ("group#<group>", "meta")                  type "consumer", group epoch, version (CAS)
    ("group#<group>", "member#<member id>")    a member: epochs, state, partitions, session
    ("group#<group>", "target")                the target assignment and its epoch

Partitions are stored by topic id, ``{topic id: [partition, ...]}``. Every change is one
transaction: the meta item is written (a new epoch or target) or checked (a member's own
heartbeat), so a change computed from a group that has moved on is refused and computed again.
A group that empties loses its target: it is computed anew from its next members.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from tidelog.assignors import TopicPartition
from tidelog.groups import items as shared
from tidelog.groups.consumer.model import (
    NONE,
    ConsumerGroup,
    Member,
    MemberState,
    Partitions,
    Target,
)
from tidelog.storage import (
    AttrAbsent,
    Check,
    Compare,
    Condition,
    Delete,
    Item,
    ItemAbsent,
    Put,
    Write,
)

CONSUMER = "consumer"  # the meta item's type; a classic group's has none
VACANT = AttrAbsent("protocol")
"""A consumer member's key before it joins: no item, or a classic group's member item. An
upgrade replaces the classic group's items as it read them, on condition of the meta item's
version, which a new classic member's join leaves as it is (a wave of joins would conflict on
it otherwise): a join landing between the upgrade's read and its write leaves its item behind.
It is no member of the consumer group, and its client, told to join again, joins as one."""
TARGET_SK = "target"


def is_consumer(found: Iterable[Mapping[str, object]]) -> bool:
    """Do a group's items belong to a consumer-protocol group?"""
    return any(i["sk"] == shared.META_SK and i.get("type") == CONSUMER for i in found)


def group_from_items(name: str, found: Iterable[Mapping[str, object]]) -> ConsumerGroup:
    group = ConsumerGroup(name)
    members: dict[str, Member] = {}
    for item in found:
        sk = str(item["sk"])
        if sk == shared.META_SK:
            group = replace(
                group,
                epoch=shared.int_of(item["epoch"]),
                version=shared.int_of(item["version"]),
                epoch_ms=shared.int_of(item.get("epoch_ms", 0)),
                incarnation=str(item.get("incarnation", "")),
            )
        elif sk.startswith(shared.MEMBER_PREFIX) and item.get("protocol") == CONSUMER:
            member = member_from_item(item)
            members[member.member_id] = member
        elif sk == TARGET_SK:
            group = replace(group, target=target_from_item(item))
    return replace(group, members=members)


def member_from_item(item: Mapping[str, object]) -> Member:
    def text(key: str) -> str | None:
        value = item.get(key)
        return None if value is None else str(value)

    revoke_by = item.get("revoke_by_ms")
    session = item.get("classic_session_ms")
    return Member(
        member_id=str(item["member_id"]),
        epoch=shared.int_of(item["epoch"]),
        previous_epoch=shared.int_of(item["previous_epoch"]),
        state=MemberState(str(item["state"])),
        assigned=_partitions(item.get("assigned")),
        revoking=_partitions(item.get("revoking")),
        instance_id=text("instance_id"),
        rack_id=text("rack_id"),
        rebalance_timeout_ms=shared.int_of(item["rebalance_timeout_ms"]),
        topics=shared.strings(item.get("topics")),
        pattern=text("pattern"),
        assignor=text("assignor"),
        client_id=str(item.get("client_id", "")),
        client_host=str(item.get("client_host", "")),
        heartbeat_ms=shared.int_of(item["heartbeat_ms"]),
        revoke_by_ms=None if revoke_by is None else shared.int_of(revoke_by),
        classic_session_ms=None if session is None else shared.int_of(session),
        protocols=shared.strings(item.get("protocols")),
    )


def member_item(name: str, member: Member) -> Item:
    item: dict[str, object] = {
        "pk": shared.group_pk(name),
        "sk": shared.MEMBER_PREFIX + member.member_id,
        "protocol": CONSUMER,
        "member_id": member.member_id,
        "epoch": member.epoch,
        "previous_epoch": member.previous_epoch,
        "state": member.state.value,
        "assigned": by_topic(member.assigned),
        "revoking": by_topic(member.revoking),
        "rebalance_timeout_ms": member.rebalance_timeout_ms,
        "topics": list(member.topics),
        "heartbeat_ms": member.heartbeat_ms,
    }
    optional = {
        "instance_id": member.instance_id,
        "rack_id": member.rack_id,
        "pattern": member.pattern,
        "assignor": member.assignor,
        "client_id": member.client_id or None,
        "client_host": member.client_host or None,
        "revoke_by_ms": member.revoke_by_ms,
        "classic_session_ms": member.classic_session_ms,
        "protocols": list(member.protocols) or None,
    }
    item.update({k: v for k, v in optional.items() if v is not None})
    return item


def target_from_item(item: Mapping[str, object]) -> Target:
    members = item.get("members") or {}
    topics = item.get("topics") or {}
    assert isinstance(members, Mapping)
    assert isinstance(topics, Mapping)
    assignor = item.get("assignor")
    return Target(
        epoch=shared.int_of(item["epoch"]),
        members={str(m): _partitions(tps) for m, tps in members.items()},
        topics={str(t): shared.int_of(n) for t, n in topics.items()},
        assignor=None if assignor is None else str(assignor),
    )


def target_item(name: str, target: Target) -> Item:
    item: dict[str, object] = {
        "pk": shared.group_pk(name),
        "sk": TARGET_SK,
        "epoch": target.epoch,
        "members": {m: by_topic(tps) for m, tps in target.members.items()},
        "topics": dict(target.topics),
    }
    if target.assignor is not None:
        item["assignor"] = target.assignor
    return item


def diff(name: str, old: ConsumerGroup, new: ConsumerGroup) -> list[Write]:
    """The writes that turn ``old`` into ``new``: members put or deleted, each conditional on
    the heartbeat it was read with; the target when it changed; the meta item written (epoch or
    target moved) or checked."""
    writes = shared.member_writes(name, old.members, new.members, member_item, vacant=VACANT)
    target_moved = new.target != old.target
    if target_moved:
        if new.members:
            writes.append(Put(target_item(name, new.target)))
        else:  # an empty group keeps no target (module docstring)
            writes.append(Delete(shared.group_pk(name), TARGET_SK))
    moved = (new.epoch, new.incarnation) != (old.epoch, old.incarnation)
    if moved or target_moved or not old.exists:
        writes[:0] = meta_writes(name, old, new)
    elif writes:
        writes.insert(0, Check(shared.group_pk(name), shared.META_SK, version_is(old)))
    return writes


def meta_writes(name: str, old: ConsumerGroup, new: ConsumerGroup) -> list[Write]:
    item: dict[str, object] = {
        "pk": shared.group_pk(name),
        "sk": shared.META_SK,
        "type": CONSUMER,
        "epoch": new.epoch,
        "epoch_ms": new.epoch_ms,
        "version": old.version + 1,
    }
    if new.incarnation:
        item["incarnation"] = new.incarnation
    writes: list[Write] = [Put(item, version_is(old))]
    if not old.exists:
        writes.append(Put({"pk": shared.GROUPS_PK, "sk": name}))
    return writes


def version_is(group: ConsumerGroup) -> Condition:
    return ItemAbsent() if not group.exists else Compare("version", "=", group.version)


def by_topic(partitions: Partitions) -> dict[str, list[int]]:
    """``{topic id: [partition, ...]}``, sorted, as stored and as the protocol lists them."""
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        grouped.setdefault(topic, []).append(partition)
    return grouped


def _partitions(value: object) -> Partitions:
    if not isinstance(value, Mapping):
        return NONE
    return frozenset(
        TopicPartition(str(topic), shared.int_of(p)) for topic, ps in value.items() for p in ps
    )
