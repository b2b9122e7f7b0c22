"""Which agents a client is shown, and which of them leads a partition or coordinates a group.

Every agent serves every partition and every group (all state is in DynamoDB and S3), so none
of this is needed for correctness. It is for locality: a rendezvous hash keeps one partition's
produces on one agent, where they share group-commit objects and a warm read cache, and a
client that names its availability zone is shown only the agents in it, so its traffic never
crosses zones (WarpStream and Bufstream read the zone from ``client.id`` the same way). It is
the seed's rack-aware placement, with zones as racks.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

from tidelog.kafka.node import Node

ZONE_TAG = "tidelog_az"
"""``client.id=orders-app,tidelog_az=use1-az1`` places the client in zone ``use1-az1``."""

_ZONE = re.compile(rf"(?:^|[,;\s]){ZONE_TAG}=([A-Za-z0-9._-]+)")


def client_zone(client_id: str | None) -> str | None:
    """The zone a client names in its ``client.id``, or None."""
    found = _ZONE.search(client_id or "")
    return found.group(1) if found else None


def visible(nodes: Iterable[Node], zone: str | None) -> tuple[Node, ...]:
    """The agents a client in ``zone`` is shown, by node id: those in its zone when there are
    any, else all of them (a zone with no agent must still be served)."""
    everyone = tuple(sorted(nodes, key=lambda node: node.node_id))
    local = tuple(node for node in everyone if zone is not None and node.rack == zone)
    return local or everyone


def owner(nodes: Sequence[Node], key: str) -> Node:
    """The agent with the highest rendezvous score for ``key``. When an agent comes or goes,
    only the keys it owns (or comes to own) move; the rest stay where they were."""
    chosen = owner_id([node.node_id for node in nodes], key)
    return next(node for node in nodes if node.node_id == chosen)


def owner_id(node_ids: Sequence[int], key: str) -> int:
    """:func:`owner`, by node id."""
    if not node_ids:
        raise ValueError("rendezvous over no agents")
    return max(node_ids, key=lambda node_id: (_score(node_id, key), node_id))


def partition_key(topic_id: str, partition: int) -> str:
    # The topic's id, not its name: a topic deleted and created again is a new log.
    return f"partition:{topic_id}:{partition}"


def group_key(group: str) -> str:
    return f"group:{group}"


def txn_key(transactional_id: str) -> str:
    return f"txn:{transactional_id}"


def _score(node_id: int, key: str) -> int:
    digest = hashlib.blake2b(f"{node_id}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")
