"""The cluster's identity, as Kafka keeps it.

Kafka gives every cluster an immutable id of at most 22 characters from ``[a-zA-Z0-9_-]``: a
random (version 4) UUID in URL-safe base64 without padding, generated when the cluster first
starts and stored (in ZooKeeper's ``/cluster/id``, here in DynamoDB) by whichever broker gets
there first. Every later start reads it back.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from tidelog import __version__
from tidelog.storage import ConditionFailedError, ItemAbsent, MetadataStore, Put

CLUSTER_KEY = ("cluster", "identity")


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    cluster_id: str
    created_ms: int
    version: str = __version__


def new_cluster_id(random_bytes: Callable[[int], bytes]) -> str:
    """Kafka's ``Uuid.randomUuid().toString()``: 22 characters of URL-safe base64.

    Like Kafka, it draws again when the id would start with '-' (it reads as a command-line
    flag) or would be the all-zero id.
    """
    while True:
        raw = uuid.UUID(bytes=random_bytes(16), version=4).bytes
        text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        if not text.startswith("-") and raw != bytes(16):
            return text


def describe_cluster(
    meta: MetadataStore, *, clock_ms: Callable[[], int], random_bytes: Callable[[int], bytes]
) -> ClusterInfo:
    """The cluster's id, created on first call; concurrent first calls agree on one id."""
    pk, sk = CLUSTER_KEY
    item = meta.get(pk, sk)
    if item is None:
        item = {
            "pk": pk,
            "sk": sk,
            "cluster_id": new_cluster_id(random_bytes),
            "created_ms": clock_ms(),
        }
        try:
            meta.write(Put(item, ItemAbsent()))
        except ConditionFailedError as lost:
            winner = lost.current.get(0) or meta.get(pk, sk)
            if winner is None:
                raise
            item = winner
    return ClusterInfo(str(item["cluster_id"]), int(str(item["created_ms"])))
