"""A group as stored, whichever its protocol: classic (JoinGroup and SyncGroup) or consumer
(KIP-848's ConsumerGroupHeartbeat). Both live under the group's key; the meta item's ``type``
tells them apart. Offsets, listing and deletion serve both; membership is each protocol's own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from tidelog.groups import items
from tidelog.groups.consumer import items as consumer_items
from tidelog.groups.consumer.heartbeat import Config, expire
from tidelog.groups.consumer.model import (
    ConsumerGroup,
)
from tidelog.groups.model import Group, InconsistentProtocolError
from tidelog.storage import ConditionFailedError, Delete, Item, MetadataStore

AnyGroup = Group | ConsumerGroup


class ConsumerProtocolGroupError(InconsistentProtocolError):
    """A classic request for a group of consumer-protocol members."""


def load_classic(meta: MetadataStore, name: str) -> Group:
    return _classic(name, list(meta.query(items.group_pk(name))))


def load_meta(meta: MetadataStore, name: str) -> Group:
    """The classic group as far as its meta item says: no members, no assignment."""
    key = (items.group_pk(name), items.META_SK)
    head = meta.get_many([key]).get(key)  # shared with a wave's other reads (storage.shared)
    return _classic(name, [] if head is None else [head])


def _classic(name: str, found: list[Item]) -> Group:
    if consumer_items.is_consumer(found):
        raise not_classic(name)
    return items.group_from_items(name, found)


def not_classic(name: str) -> ConsumerProtocolGroupError:
    return ConsumerProtocolGroupError(
        f"group {name} uses the consumer protocol (KIP-848): its members join with "
        "ConsumerGroupHeartbeat (group.protocol=consumer)"
    )


def load_any(
    meta: MetadataStore,
    name: str,
    now_ms: int,
    expire_classic: Callable[[Group], Group],
    config: Config | None = None,
) -> AnyGroup:
    """The group as it is now, sessions that ran out removed (not written)."""
    found = list(meta.query(items.group_pk(name)))
    if consumer_items.is_consumer(found):
        return expire(consumer_items.group_from_items(name, found), config or Config(), now_ms)
    return expire_classic(items.group_from_items(name, found))


def release_consumer(meta: MetadataStore, name: str) -> None:
    """An empty consumer group gives its name back, its offsets kept, for a classic member to
    create the group anew (Kafka converts an empty group to the protocol of who joins). A group
    with consumer members refuses the classic member."""
    head = meta.get(items.group_pk(name), items.META_SK)  # one item, not the whole group
    if head is None or not consumer_items.is_consumer([head]):
        return
    found = list(meta.query(items.group_pk(name)))
    if not consumer_items.is_consumer(found):
        return
    group = consumer_items.group_from_items(name, found)
    if group.members:
        raise ConsumerProtocolGroupError(
            f"group {name} has members of the consumer protocol (KIP-848); a classic member "
            "cannot join it"
        )
    gone = [Delete(str(i["pk"]), str(i["sk"])) for i in found if i["sk"] != items.META_SK]
    meta_item = Delete(items.group_pk(name), items.META_SK, consumer_items.version_is(group))
    # A consumer member joining meanwhile fails this; the classic load that follows finds it.
    with contextlib.suppress(ConditionFailedError):
        meta.transact([*gone, meta_item])


def check_fetch(group: AnyGroup, member_id: str | None, epoch: int) -> None:
    """Kafka's validateOffsetFetch, for an OffsetFetch (v9) naming a member: in a consumer group
    the member must be one, at its epoch. A classic group checks nothing."""
    if isinstance(group, ConsumerGroup):
        group.member_at(member_id, epoch)
