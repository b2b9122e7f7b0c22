"""The group coordinator's items, and turning groups into writes and back.

Items (one table, ``pk``/``sk``)::

    ("groups", <group>)                         the registry, for listing
    ("group#<group>", "meta")                   state, generation, protocol, version (CAS),
                                                the assignors every member supports, the
                                                protocol type and leader where a member assigns
    ("group#<group>", "member#<member id>")     a member: subscription, timeouts, last heartbeat,
                                                its assignors' metadata where a member assigns
    ("group#<group>", "fenced#<member id>")     a static member's old id, replaced by a rejoin
    ("group#<group>", "pending#<member id>")    an id handed out for a member's first join
    ("group#<group>", "assignment")             the last completed generation's assignment: each
                                                member's partitions, {topic: "0,1,5"}, and
                                                what the leader sent, where a member assigns
    ("offsets#<group>", "<topic>#<partition>")  a committed offset
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Protocol, TypeVar

from tidelog.assignors import TopicPartition
from tidelog.groups.model import (
    CONSUMER_PROTOCOL_TYPE,
    Assignment,
    Committed,
    Group,
    Member,
    State,
    empty_group,
)
from tidelog.storage import (
    Check,
    Compare,
    Condition,
    Delete,
    Item,
    ItemAbsent,
    ItemExists,
    MetadataStore,
    Put,
    Write,
    all_of,
)

GROUPS_PK = "groups"
META_SK = "meta"
ASSIGNMENT_SK = "assignment"
MEMBER_PREFIX = "member#"
FENCED_PREFIX = "fenced#"
PENDING_PREFIX = "pending#"
# Offsets held in an open transaction, under the group's offsets key (tidelog.transactions):
# a topic's name never holds "~", so they sort after the group's own offsets.
TXN_OFFSET_PREFIX = "~txn#"
ABSENT = ItemAbsent()


def group_pk(group: str) -> str:
    return f"group#{group}"


def offsets_pk(group: str) -> str:
    return f"offsets#{group}"


def int_of(value: object) -> int:
    return int(str(value))


def strings(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def offset_sk(topic: str, partition: int) -> str:
    return f"{topic}#{partition:010d}"


class Versioned(Protocol):
    """A group of either protocol, as far as its meta item's compare-and-set goes."""

    @property
    def exists(self) -> bool: ...

    @property
    def version(self) -> int: ...


def meta_condition(group: Versioned) -> Condition:
    return ItemAbsent() if not group.exists else Compare("version", "=", group.version)


def meta_check(name: str, group: Versioned) -> Write:
    return Check(group_pk(name), META_SK, meta_condition(group))


def member_from_item(item: Mapping[str, object]) -> Member:
    return Member(
        member_id=str(item["member_id"]),
        topics=strings(item.get("topics")),
        topic_pattern=None if item.get("topic_pattern") is None else str(item["topic_pattern"]),
        assignors=strings(item.get("assignors")),
        session_timeout_ms=int_of(item["session_timeout_ms"]),
        rebalance_timeout_ms=int_of(item["rebalance_timeout_ms"]),
        heartbeat_ms=int_of(item["heartbeat_ms"]),
        group_instance_id=(
            None if item.get("group_instance_id") is None else str(item["group_instance_id"])
        ),
        joined_generation=int_of(item.get("joined_generation", 0)),
        client_id=str(item.get("client_id", "")),
        client_host=str(item.get("client_host", "")),
        metadata=_blobs(item.get("metadata")),
    )


def _blobs(value: object) -> tuple[bytes, ...]:
    return tuple(bytes(v) for v in value) if isinstance(value, list | tuple) else ()


def member_item(name: str, member: Member) -> Item:
    item: dict[str, object] = {
        "pk": group_pk(name),
        "sk": MEMBER_PREFIX + member.member_id,
        "member_id": member.member_id,
        "topics": list(member.topics),
        "assignors": list(member.assignors),
        "session_timeout_ms": member.session_timeout_ms,
        "rebalance_timeout_ms": member.rebalance_timeout_ms,
        "heartbeat_ms": member.heartbeat_ms,
        "joined_generation": member.joined_generation,
    }
    if member.topic_pattern is not None:
        item["topic_pattern"] = member.topic_pattern
    if member.group_instance_id is not None:
        item["group_instance_id"] = member.group_instance_id
    if member.client_id:
        item["client_id"] = member.client_id
    if member.client_host:
        item["client_host"] = member.client_host
    if member.metadata:
        item["metadata"] = list(member.metadata)
    return item


def assignment_from_item(item: Mapping[str, object]) -> Assignment:
    members = item.get("members") or {}
    sizes = item.get("partitions") or {}
    sent = item.get("sent") or {}
    assert isinstance(members, Mapping)
    assert isinstance(sizes, Mapping)
    assert isinstance(sent, Mapping)
    return Assignment(
        generation=int_of(item["generation"]),
        protocol=None if item.get("protocol") is None else str(item["protocol"]),
        members={str(m): _assigned(tps) for m, tps in members.items()},
        partitions={str(t): int_of(n) for t, n in sizes.items()},
        sent={str(m): bytes(blob) for m, blob in sent.items()},
    )


def _assigned(stored: object) -> tuple[TopicPartition, ...]:
    """A member's partitions as its assignment item holds them: ``{topic: "0,1,5"}``, or, as
    items written before that, ``[[topic, partition], ...]``."""
    if isinstance(stored, Mapping):
        return tuple(
            sorted(
                TopicPartition(str(t), int(p))
                for t, listed in stored.items()
                for p in str(listed).split(",")
            )
        )
    assert isinstance(stored, list)
    return tuple(TopicPartition(str(t), int_of(p)) for t, p in stored)


def _stored(partitions: Iterable[TopicPartition]) -> dict[str, str]:
    """``{topic: "0,1,5"}``: a partition a few bytes, where a ``[topic, partition]`` pair cost
    a list of two (a 100-member group's item over 600 partitions was twice the read units, and
    ten times botocore's parsing: docs/decisions.md)."""
    by_topic: dict[str, list[str]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(str(partition))
    return {topic: ",".join(listed) for topic, listed in by_topic.items()}


def assignment_item(name: str, assignment: Assignment | None) -> Item:
    assert assignment is not None
    item: dict[str, object] = {
        "pk": group_pk(name),
        "sk": ASSIGNMENT_SK,
        "generation": assignment.generation,
        "members": {m: _stored(tps) for m, tps in assignment.members.items()},
        "partitions": dict(assignment.partitions),
    }
    if assignment.protocol is not None:
        item["protocol"] = assignment.protocol
    if assignment.sent:
        item["sent"] = dict(assignment.sent)
    return item


def fence(name: str, previous: Member) -> Write:
    return Put(
        {
            "pk": group_pk(name),
            "sk": FENCED_PREFIX + previous.member_id,
            "group_instance_id": previous.group_instance_id,
        }
    )


def renewal(name: str, member: Member, now_ms: int) -> Put:
    """The member's session renewed: its item as read, with a new heartbeat, if still so (a
    rebalance carrying it to the next generation rewrites it with the same heartbeat)."""
    renewed = member_item(name, replace(member, heartbeat_ms=now_ms))
    return Put(
        renewed,
        all_of(
            Compare("heartbeat_ms", "=", member.heartbeat_ms),
            Compare("joined_generation", "=", member.joined_generation),
        ),
    )


def diff(name: str, old: Group, new: Group) -> list[Write]:
    """The writes that turn ``old`` into ``new``; the meta item compare-and-set first."""
    writes = member_writes(name, old.members, new.members, member_item)
    for member_id in old.pending.keys() - new.pending.keys():
        writes.append(Delete(group_pk(name), PENDING_PREFIX + member_id))
    for member_id in new.pending.keys() - old.pending.keys():
        key = {"pk": group_pk(name), "sk": PENDING_PREFIX + member_id}
        writes.append(Put({**key, "expires_ms": new.pending[member_id]}, ItemAbsent()))
    meta_changed = _meta_of(new) != _meta_of(old)
    if meta_changed or (writes and not new.exists):
        writes[:0] = _meta_writes(name, old, new)
    elif writes:
        writes.insert(0, meta_check(name, old))
    return writes


def _meta_of(group: Group) -> tuple[object, ...]:
    """What the meta item holds of a group but its version."""
    return (
        group.state,
        group.generation,
        group.protocol,
        group.assignors,
        group.protocol_type,
        group.leader,
        group.gone_since_ms,
    )


class Beating(Protocol):
    """A member of either protocol, as far as its item's compare-and-set goes."""

    @property
    def heartbeat_ms(self) -> int: ...


_M = TypeVar("_M", bound=Beating)


def member_writes(
    name: str,
    old: Mapping[str, _M],
    new: Mapping[str, _M],
    item_of: Callable[[str, _M], Item],
    *,
    vacant: Condition = ABSENT,
) -> list[Write]:
    """Members put or deleted, each conditional on the heartbeat it was read with: a member
    changed by anyone else meanwhile makes the change computed again. A new member's key must
    be ``vacant``."""
    writes: list[Write] = []
    for member_id, member in old.items():
        if member_id not in new:
            writes.append(
                Delete(
                    group_pk(name),
                    MEMBER_PREFIX + member_id,
                    Compare("heartbeat_ms", "=", member.heartbeat_ms),
                )
            )
    for member_id, member in new.items():
        before = old.get(member_id)
        if before == member:
            continue
        condition = (
            vacant
            if before is None
            else all_of(ItemExists(), Compare("heartbeat_ms", "=", before.heartbeat_ms))
        )
        writes.append(Put(item_of(name, member), condition))
    return writes


def member_checks(
    name: str, group: Group, member: Member, *, renew_ms: int | None = None
) -> list[Write]:
    """What keeps a write conditional on one member's view of ``group`` (its meta item is
    ``guard``'s): the member still one (or, given ``renew_ms``, still as read, its session
    renewed then), and the last assignment as read."""
    assignment = Check(
        group_pk(name),
        ASSIGNMENT_SK,
        ItemAbsent()
        if group.assignment is None
        else Compare("generation", "=", group.assignment.generation),
    )
    if renew_ms is not None:
        return [renewal(name, member, renew_ms), assignment]
    return [Check(group_pk(name), MEMBER_PREFIX + member.member_id, ItemExists()), assignment]


def guard(name: str, group: Versioned) -> list[Write]:
    """What keeps a write of offsets conditional on ``group`` as read: a check of its meta
    item, or for a group that does not exist yet its creation, Empty (Kafka's coordinator
    creates a group on the first offsets committed to it, so it is listed and described)."""
    if group.exists:
        return [meta_check(name, group)]
    assert isinstance(group, Group)  # a consumer group exists once read as one
    return _meta_writes(name, group, group)


def _meta_writes(name: str, old: Group, new: Group) -> list[Write]:
    item: dict[str, object] = {
        "pk": group_pk(name),
        "sk": META_SK,
        "state": new.state.value,
        "generation": new.generation,
        "version": old.version + 1,
        "rebalance_ms": new.rebalance_ms,
        "stable_ms": new.stable_ms,
    }
    if new.incarnation:
        item["incarnation"] = new.incarnation
    if new.protocol is not None:
        item["protocol"] = new.protocol
    if new.assignors:
        item["assignors"] = sorted(new.assignors)
    if new.protocol_type != CONSUMER_PROTOCOL_TYPE:
        item["protocol_type"] = new.protocol_type
    if new.leader is not None:
        item["leader"] = new.leader
    if new.gone_since_ms:
        item["gone_since_ms"] = new.gone_since_ms
    writes: list[Write] = [Put(item, meta_condition(old))]
    if not old.exists:
        writes.append(Put({"pk": GROUPS_PK, "sk": name}))
    return writes


def group_from_items(name: str, found: Iterable[Mapping[str, object]]) -> Group:
    group = empty_group(name)
    members: dict[str, Member] = {}
    fenced: dict[str, str] = {}
    pending: dict[str, int] = {}
    for item in found:
        sk = str(item["sk"])
        if sk == META_SK:
            group = replace(
                group,
                state=State(str(item["state"])),
                generation=int_of(item["generation"]),
                protocol=None if item.get("protocol") is None else str(item["protocol"]),
                version=int_of(item["version"]),
                rebalance_ms=int_of(item.get("rebalance_ms", 0)),
                stable_ms=int_of(item.get("stable_ms", 0)),
                incarnation=str(item.get("incarnation", "")),
                assignors=frozenset(strings(item.get("assignors"))),
                protocol_type=str(item.get("protocol_type", CONSUMER_PROTOCOL_TYPE)),
                leader=None if item.get("leader") is None else str(item["leader"]),
                gone_since_ms=int_of(item.get("gone_since_ms", 0)),
            )
        elif sk.startswith(MEMBER_PREFIX):
            member = member_from_item(item)
            members[member.member_id] = member
        elif sk.startswith(FENCED_PREFIX):
            fenced[sk[len(FENCED_PREFIX) :]] = str(item["group_instance_id"])
        elif sk.startswith(PENDING_PREFIX):
            pending[sk[len(PENDING_PREFIX) :]] = int_of(item["expires_ms"])
        elif sk == ASSIGNMENT_SK:
            group = replace(group, assignment=assignment_from_item(item))
    return replace(group, members=members, fenced=fenced, pending=pending)


def offset_item(name: str, committed: Committed, *, generation: int, member_id: str) -> Item:
    epoch = {"leader_epoch": committed.leader_epoch} if committed.leader_epoch >= 0 else {}
    return {
        **epoch,
        "pk": offsets_pk(name),
        "sk": offset_sk(committed.topic, committed.partition),
        "topic": committed.topic,
        "partition": committed.partition,
        "offset": committed.offset,
        "metadata": committed.metadata,
        "commit_ms": committed.commit_ms,
        "generation": generation,
        "member_id": member_id,
    }


def load_group(meta: MetadataStore, name: str) -> Group:
    """The group as its items hold it (sessions that ran out not yet removed), read only."""
    return group_from_items(name, meta.query(group_pk(name)))
