"""The agent's authorizer: Kafka's ACLs (tidelog.acls) over the cluster's stored ones
(tidelog.acl_store), cached.

Every agent reads all of the cluster's ACLs in one query and keeps them for ``cache_s``
(5 s by default); decisions are memoized within one such snapshot. An ACL created or deleted
through this agent applies here at once; through another agent, or the HTTP API, within
``cache_s``. That bound is what a revoked permission waits at most, and it is documented
(docs/security.md). A snapshot that cannot be refreshed when due is not served stale: the
request fails, as a request fails when its table cannot be read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tidelog.acl_store import AclStore
from tidelog.acls import (
    CLUSTER_NAME,
    WILDCARD,
    Acl,
    Operation,
    PatternType,
    ResourceType,
    authorize,
    authorize_by_type,
)
from tidelog.kafka.codec import Request

CACHE_S = 5.0


@dataclass(frozen=True)
class AuthorizerSettings:
    """Kafka's ``super.users`` and ``allow.everyone.if.no.acl.found``, and how long ACLs are
    cached."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False
    cache_s: float = CACHE_S


def parse_super_users(value: str) -> frozenset[str]:
    """Kafka's ``super.users``: principals separated by semicolons, ``User:admin;User:ops``."""
    users = frozenset(u.strip() for u in value.split(";") if u.strip())
    malformed = sorted(u for u in users if ":" not in u)
    if malformed:
        raise ValueError(f"super.users: {', '.join(malformed)} is not a principal (User:name)")
    return users


@dataclass
class Snapshot:
    """The ACLs as read, indexed as Kafka's authorizer indexes them (a decision looks at the
    ACLs of its resource's literal name, the wildcard and the prefixes of its name, not at all
    of them), and the decisions made on them so far."""

    acls: list[Acl]
    taken: float
    settings: AuthorizerSettings
    decisions: dict[tuple[object, ...], bool] = field(default_factory=dict)
    literal: dict[tuple[ResourceType, str], list[Acl]] = field(default_factory=dict)
    prefixed: dict[tuple[ResourceType, str], list[Acl]] = field(default_factory=dict)
    by_type: dict[ResourceType, list[Acl]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for acl in self.acls:
            index = self.prefixed if acl.pattern_type == PatternType.PREFIXED else self.literal
            index.setdefault((acl.resource_type, acl.name), []).append(acl)
            self.by_type.setdefault(acl.resource_type, []).append(acl)

    def covering(self, resource_type: ResourceType, name: str) -> list[Acl]:
        """Every ACL whose pattern covers the resource, whoever it is for."""
        found = [
            *self.literal.get((resource_type, name), ()),
            *self.literal.get((resource_type, WILDCARD), ()),
        ]
        for end in range(1, len(name) + 1):
            found += self.prefixed.get((resource_type, name[:end]), ())
        return found

    def allows(
        self,
        principal: str,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str = CLUSTER_NAME,
    ) -> bool:
        key = (principal, host, operation, resource_type, name)
        decision = self.decisions.get(key)
        if decision is None:
            decision = self.decisions[key] = authorize(
                self.covering(resource_type, name),
                principal=principal,
                host=host,
                operation=operation,
                resource_type=resource_type,
                name=name,
                super_users=self.settings.super_users,
                allow_if_no_acl=self.settings.allow_everyone_if_no_acl_found,
            )
        return decision

    def allows_any(
        self, principal: str, host: str, operation: Operation, resource_type: ResourceType
    ) -> bool:
        return authorize_by_type(
            self.by_type.get(resource_type, []),
            principal=principal,
            host=host,
            operation=operation,
            resource_type=resource_type,
            super_users=self.settings.super_users,
            allow_if_no_acl=self.settings.allow_everyone_if_no_acl_found,
        )


class Authorizer:
    """Decisions for the agent's requests, on a snapshot of the ACLs at most ``cache_s`` old."""

    def __init__(
        self,
        settings: AuthorizerSettings,
        store: AclStore,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.store = store
        self._clock = clock
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None

    def invalidate(self) -> None:
        """Read the ACLs again at the next decision: this agent changed them."""
        with self._lock:
            self._snapshot = None

    def current(self) -> Snapshot:
        """The snapshot decisions are made on now: read again once it is ``cache_s`` old."""
        with self._lock:
            now = self._clock()
            snapshot = self._snapshot
            if snapshot is None or now - snapshot.taken >= self.settings.cache_s:
                snapshot = self._snapshot = Snapshot(self.store.all(), now, self.settings)
            return snapshot


class Access:
    """One request's caller, as the authorizer sees it: its principal, and its address bare
    (Kafka's ACL hosts are addresses, ``10.0.0.7``, not ``/10.0.0.7``). Every decision of one
    request is made on one snapshot, taken at its first."""

    def __init__(self, authorizer: Authorizer, request: Request) -> None:
        self._authorizer = authorizer
        self._snapshot: Snapshot | None = None
        self.principal = request.principal
        self.host = request.client_host.lstrip("/")

    def _acls(self) -> Snapshot:
        if self._snapshot is None:
            self._snapshot = self._authorizer.current()
        return self._snapshot

    def allows(
        self, operation: Operation, resource_type: ResourceType, name: str = CLUSTER_NAME
    ) -> bool:
        return self._acls().allows(self.principal, self.host, operation, resource_type, name)

    def allows_any(self, operation: Operation, resource_type: ResourceType) -> bool:
        return self._acls().allows_any(self.principal, self.host, operation, resource_type)

    def operations(self, resource_type: ResourceType, name: str) -> int:
        """Kafka's authorized-operations bit field for a resource: bit ``op`` set for each
        operation of its type the caller may do."""
        bits = 0
        for operation in SUPPORTED_OPERATIONS[resource_type]:
            if self.allows(operation, resource_type, name):
                bits |= 1 << operation
        return bits


# Each resource type's operations, as Kafka's ``AclEntry.supportedOperations``.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        Operation.READ,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (
        Operation.DESCRIBE,
        Operation.WRITE,
        Operation.TWO_PHASE_COMMIT,
    ),
}
