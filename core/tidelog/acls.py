"""Kafka's ACLs, pure: the model, what CreateAcls accepts, which ACLs a DescribeAcls or
DeleteAcls filter matches, and the authorizer's decision, each as Kafka's own code has it
(``AclControlManager.validateNewAcl``, ``ResourcePatternFilter`` and
``AccessControlEntryFilter``, ``StandardAuthorizerData``).

The decision, for a principal on a host wanting an operation on a named resource:

- a super user may do anything;
- the ACLs that apply are those of the resource's type whose pattern matches its name (a
  literal of that name, the literal ``*``, or a prefix of it) and whose principal is the
  caller's or ``User:*`` and host the caller's or ``*``;
- any DENY that applies wins; an ALLOW that applies allows. An ALLOW of READ, WRITE, DELETE or
  ALTER implies DESCRIBE, and of ALTER_CONFIGS implies DESCRIBE_CONFIGS; a DENY implies
  nothing but itself (and ALL, everything);
- with no ACL on the resource at all, ``allow.everyone.if.no.acl.found`` decides (false by
  default); with ACLs on it but none allowing, the answer is no.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from tidelog.errors import InvalidRequestError

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# What the HTTP API and ``tidelog acl`` take, in lower case: every operation an ACL on a topic,
# group, transactional id or the cluster may name (delegation tokens' are not served).
OPERATION_NAMES = (
    "all",
    "read",
    "write",
    "create",
    "delete",
    "alter",
    "describe",
    "cluster_action",
    "describe_configs",
    "alter_configs",
    "idempotent_write",
)
RESOURCE_TYPE_NAMES = ("topic", "group", "cluster", "transactional_id")

IMPLIES_DESCRIBE = frozenset(
    {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
)
IMPLIES_DESCRIBE_CONFIGS = frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS})


class InvalidAclError(InvalidRequestError):
    """An ACL CreateAcls refuses, with Kafka's reason."""


@dataclass(frozen=True, order=True)
class Acl:
    """Kafka's AclBinding: a resource pattern and an access control entry."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def validate(self) -> None:
        """What CreateAcls checks (``AclApis`` and ``AclControlManager.validateNewAcl``)."""
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise InvalidAclError(f"Invalid resourceType {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAclError(f"Invalid patternType {self.pattern_type.name}")
        if self.operation in (Operation.UNKNOWN, Operation.ANY):
            raise InvalidAclError(f"Invalid operation {self.operation.name}")
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            raise InvalidAclError(f"Invalid permissionType {self.permission.name}")
        if self.resource_type == ResourceType.CLUSTER and self.name != CLUSTER_NAME:
            raise InvalidAclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        if not self.name:
            raise InvalidAclError("Invalid empty resource name")
        if ":" not in self.principal:
            raise InvalidAclError(
                f"Could not parse principal from `{self.principal}` (no colon is present "
                "separating the principal type from the principal name)"
            )

    def covers(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this ACL's pattern applies to the named resource."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)


@dataclass(frozen=True)
class AclFilter:
    """Kafka's AclBindingFilter: None matches anything, as do ANY and (for patterns) MATCH."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY

    def matches(self, acl: Acl) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: Acl) -> bool:
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return self.name == acl.name
        # MATCH: the ACLs that would apply to a resource of this name.
        if acl.pattern_type == PatternType.LITERAL:
            return acl.name in (self.name, WILDCARD)
        return self.name.startswith(acl.name)

    def _matches_entry(self, acl: Acl) -> bool:
        return (
            self.principal in (None, acl.principal)
            and self.host in (None, acl.host)
            and self.operation in (Operation.ANY, acl.operation)
            and self.permission in (Permission.ANY, acl.permission)
        )


def authorize(
    acls: Iterable[Acl],
    *,
    principal: str,
    host: str,
    operation: Operation,
    resource_type: ResourceType,
    name: str,
    super_users: Collection[str] = (),
    allow_if_no_acl: bool = False,
) -> bool:
    """Kafka's decision (``StandardAuthorizerData.authorize``) for one literal resource."""
    if principal in super_users:
        return True
    principals = (principal, WILDCARD_PRINCIPAL)
    on_resource = allowed = False
    for acl in acls:
        if not acl.covers(resource_type, name):
            continue
        on_resource = True
        if acl.principal not in principals or acl.host not in (WILDCARD, host):
            continue
        if not _grants(acl, operation):
            continue
        if acl.permission == Permission.DENY:
            return False
        allowed = True
    return allowed if on_resource else allow_if_no_acl


def _grants(acl: Acl, wanted: Operation) -> bool:
    """Whether the ACL speaks to ``wanted``: ALL always; an ALLOW also through Kafka's
    implications; a DENY only of its own operation."""
    if acl.operation in (Operation.ALL, wanted):
        return True
    if acl.permission != Permission.ALLOW:
        return False
    if wanted == Operation.DESCRIBE:
        return acl.operation in IMPLIES_DESCRIBE
    if wanted == Operation.DESCRIBE_CONFIGS:
        return acl.operation in IMPLIES_DESCRIBE_CONFIGS
    return False


def authorize_by_type(
    acls: Iterable[Acl],
    *,
    principal: str,
    host: str,
    operation: Operation,
    resource_type: ResourceType,
    super_users: Collection[str] = (),
    allow_if_no_acl: bool = False,
) -> bool:
    """Whether some resource of the type allows ``operation`` (Kafka's
    ``Authorizer.authorizeByResourceType``): what lets a producer with WRITE on any topic be
    idempotent without IDEMPOTENT_WRITE on the cluster (KIP-679)."""
    acls = list(acls)
    if authorize(
        acls,
        principal=principal,
        host=host,
        operation=operation,
        resource_type=resource_type,
        name="hardcode",  # Kafka's: super users and allow_if_no_acl answer for any name
        super_users=super_users,
        allow_if_no_acl=allow_if_no_acl,
    ):
        return True
    applying = [
        acl
        for acl in acls
        if acl.resource_type == resource_type
        and acl.host in (WILDCARD, host)
        and acl.principal in (principal, WILDCARD_PRINCIPAL)
        and acl.operation in (operation, Operation.ALL)
    ]
    if any(_everything(acl, Permission.DENY) for acl in applying):
        return False
    if any(_everything(acl, Permission.ALLOW) for acl in applying):
        return True
    denied = {(acl.pattern_type, acl.name) for acl in applying if acl.permission == Permission.DENY}
    for acl in applying:
        if acl.permission != Permission.ALLOW:
            continue
        if acl.pattern_type == PatternType.LITERAL and (PatternType.LITERAL, acl.name) in denied:
            continue
        prefixes = (acl.name[:end] for end in range(1, len(acl.name) + 1))
        if not any((PatternType.PREFIXED, prefix) in denied for prefix in prefixes):
            return True
    return False


def _everything(acl: Acl, permission: Permission) -> bool:
    """A literal ``*`` of this permission: Kafka's wildcard, which settles the question."""
    return (
        acl.permission == permission
        and acl.pattern_type == PatternType.LITERAL
        and acl.name == WILDCARD
    )
