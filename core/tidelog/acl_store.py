"""Kafka's ACLs, stored in the cluster's table, one item each.

Items::

    ("acl", "<sha256 of the binding>")   resource type, name, pattern type, principal, host,
                                         operation, permission

An ACL's key is a digest of the whole binding, so adding one that exists is a no-op (Kafka's
CreateAcls is idempotent) and any name, however long or whatever it holds, fits DynamoDB's
sort key. All of a cluster's ACLs are one query: an authorizer reads them whole and caches them
(tidelog.kafka.authorizer).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

from tidelog.acls import Acl, Operation, PatternType, Permission, ResourceType
from tidelog.storage import Delete, MetadataStore, Put, Write
from tidelog.storage.metadata import MAX_TRANSACTION_WRITES

ACL_PK = "acl"


def item_sk(acl: Acl) -> str:
    binding = [
        int(acl.resource_type),
        acl.name,
        int(acl.pattern_type),
        acl.principal,
        acl.host,
        int(acl.operation),
        int(acl.permission),
    ]
    return hashlib.sha256(json.dumps(binding).encode()).hexdigest()


class AclStore:
    """The cluster's ACLs, in its table."""

    def __init__(self, meta: MetadataStore) -> None:
        self._meta = meta

    def all(self) -> list[Acl]:
        return sorted(_acl(item) for item in self._meta.query(ACL_PK))

    def exists(self, acl: Acl) -> bool:
        return self._meta.get(ACL_PK, item_sk(acl)) is not None

    def add(self, acls: Iterable[Acl]) -> None:
        self._apply([_put(acl) for acl in dict.fromkeys(acls)])

    def remove(self, acls: Iterable[Acl]) -> None:
        self._apply([Delete(ACL_PK, item_sk(acl)) for acl in dict.fromkeys(acls)])

    def _apply(self, writes: list[Write]) -> None:
        # Each write stands alone (Kafka applies each creation and deletion on its own), so
        # the batches need no atomicity across them: a transaction each keeps the port small.
        for start in range(0, len(writes), MAX_TRANSACTION_WRITES):
            self._meta.transact(writes[start : start + MAX_TRANSACTION_WRITES])


def _put(acl: Acl) -> Put:
    return Put(
        {
            "pk": ACL_PK,
            "sk": item_sk(acl),
            "resource_type": int(acl.resource_type),
            "name": acl.name,
            "pattern_type": int(acl.pattern_type),
            "principal": acl.principal,
            "host": acl.host,
            "operation": int(acl.operation),
            "permission": int(acl.permission),
        }
    )


def _acl(item: Mapping[str, object]) -> Acl:
    return Acl(
        ResourceType(int(str(item["resource_type"]))),
        str(item["name"]),
        PatternType(int(str(item["pattern_type"]))),
        str(item["principal"]),
        str(item["host"]),
        Operation(int(str(item["operation"]))),
        Permission(int(str(item["permission"]))),
    )
