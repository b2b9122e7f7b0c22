"""Who may do what, and how fast: the ACL, SCRAM credential and client-quota APIs.

SCRAM credentials: DescribeUserScramCredentials and AlterUserScramCredentials manage the users
SASL listeners authenticate (tidelog.kafka.scram, tidelog.kafka.sasl).

ACLs: DescribeAcls, CreateAcls and DeleteAcls manage the cluster's ACLs (tidelog.acl_store)
when the agent has an authorizer (``--authorizer acls``); without one they answer
SECURITY_DISABLED, as a Kafka broker without an authorizer does, and the connection goes on.

Client quotas: tidelog does not throttle clients by client id or user. Kafka enforces quotas in
each broker over its own traffic; tidelog's agents are many, stateless and autoscaled, so a
per-agent quota would change meaning with the agent count. DescribeClientQuotas answers that
none is set; AlterClientQuotas refuses each entry with a message that says so (docs/kafka.md).
"""

from __future__ import annotations

from typing import Any, TypeVar

from tidelog import runtime
from tidelog.acls import (
    Acl,
    AclFilter,
    InvalidAclError,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from tidelog.credentials import Credentials
from tidelog.kafka import scram
from tidelog.kafka.authorizer import Authorizer
from tidelog.kafka.codec import NONE, Answer, Request, code, items

NO_AUTHORIZER = "No Authorizer is configured on the broker"
NO_QUOTAS = (
    "tidelog does not enforce client quotas: its agents are many and stateless, so a per-agent "
    "byte rate would change with their number (docs/kafka.md)"
)


def describe_acls(request: Request, authorizer: Authorizer | None) -> Answer:
    if authorizer is None:
        return {**_DISABLED, "throttle_time": 0, "resources": []}
    body = request.body
    try:
        wanted = _filter(body)
    except InvalidAclError as exc:
        return {"throttle_time": 0, **_error(exc), "resources": []}
    resources: dict[tuple[int, str, int], list[Answer]] = {}
    for acl in authorizer.store.all():
        if wanted.matches(acl):
            key = (int(acl.resource_type), acl.name, int(acl.pattern_type))
            resources.setdefault(key, []).append(
                {
                    "principal": acl.principal,
                    "host": acl.host,
                    "operation": int(acl.operation),
                    "permission_type": int(acl.permission),
                }
            )
    return {
        "throttle_time": 0,
        "error_code": NONE,
        "error_message": None,
        "resources": [
            {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
            for (t, n, p), acls in resources.items()
        ],
    }


def create_acls(request: Request, authorizer: Authorizer | None) -> Answer:
    """Each creation on its own: the valid ones are stored, the others refused with Kafka's
    reason (``AclControlManager.validateNewAcl``); an ACL that exists is created again."""
    creations = items(request.body.creations)
    if authorizer is None:
        return {"throttle_time": 0, "results": [_DISABLED for _ in creations]}
    results: list[Answer] = []
    valid: list[Acl] = []
    for creation in creations:
        try:
            acl = Acl(
                _enum(ResourceType, creation.resource_type),
                str(creation.resource_name),
                _enum(PatternType, creation.resource_pattern_type),
                str(creation.principal),
                str(creation.host),
                _enum(Operation, creation.operation),
                _enum(Permission, creation.permission_type),
            )
            acl.validate()
        except InvalidAclError as exc:
            results.append(_error(exc))
            continue
        valid.append(acl)
        results.append({"error_code": NONE, "error_message": None})
    if valid:
        authorizer.store.add(valid)
        authorizer.invalidate()
    return {"throttle_time": 0, "results": results}


def delete_acls(request: Request, authorizer: Authorizer | None) -> Answer:
    """Each filter's matches deleted and listed; one ACL matched by two filters is listed by
    both, as Kafka lists it."""
    filters = items(request.body.filters)
    if authorizer is None:
        return {
            "throttle_time": 0,
            "filter_results": [{**_DISABLED, "matching_acls": []} for _ in filters],
        }
    stored = authorizer.store.all()
    results: list[Answer] = []
    doomed: set[Acl] = set()
    for wanted in filters:
        try:
            acl_filter = _filter(wanted)
        except InvalidAclError as exc:
            results.append({**_error(exc), "matching_acls": []})
            continue
        matching = [acl for acl in stored if acl_filter.matches(acl)]
        doomed.update(matching)
        results.append(
            {
                "error_code": NONE,
                "error_message": None,
                "matching_acls": [
                    {
                        "error_code": NONE,
                        "error_message": None,
                        "resource_type": int(acl.resource_type),
                        "resource_name": acl.name,
                        "pattern_type": int(acl.pattern_type),
                        "principal": acl.principal,
                        "host": acl.host,
                        "operation": int(acl.operation),
                        "permission_type": int(acl.permission),
                    }
                    for acl in matching
                ],
            }
        )
    if doomed:
        authorizer.store.remove(sorted(doomed))
        authorizer.invalidate()
    return {"throttle_time": 0, "filter_results": results}


_E = TypeVar("_E", ResourceType, PatternType, Operation, Permission)
_DISABLED: Answer = {"error_code": code("SECURITY_DISABLED"), "error_message": NO_AUTHORIZER}


def _error(exc: InvalidAclError) -> Answer:
    return {"error_code": code("INVALID_REQUEST"), "error_message": str(exc)}


def _enum(kind: type[_E], value: object) -> _E:
    try:
        return kind(int(str(value)))
    except ValueError:
        raise InvalidAclError(f"Unknown {kind.__name__} {value}") from None


def _filter(body: Any) -> AclFilter:
    """A DescribeAcls or DeleteAcls filter; UNKNOWN anywhere is refused, as Kafka's
    ``AclBindingFilter.findIndefiniteField`` refuses it."""
    acl_filter = AclFilter(
        _enum(ResourceType, body.resource_type_filter),
        None if body.resource_name_filter is None else str(body.resource_name_filter),
        _enum(PatternType, body.pattern_type_filter),
        None if body.principal_filter is None else str(body.principal_filter),
        None if body.host_filter is None else str(body.host_filter),
        _enum(Operation, body.operation),
        _enum(Permission, body.permission_type),
    )
    unknown = [
        name
        for name, value in (
            ("resource type", acl_filter.resource_type),
            ("pattern type", acl_filter.pattern_type),
            ("operation", acl_filter.operation),
            ("permission type", acl_filter.permission),
        )
        if value == 0
    ]
    if unknown:
        raise InvalidAclError(f"The filter has an UNKNOWN {unknown[0]}")
    return acl_filter


def describe_client_quotas(request: Request) -> Answer:
    return {"throttle_time": 0, "error_code": NONE, "error_message": None, "entries": []}


def alter_client_quotas(request: Request) -> Answer:
    entries = [
        {
            "error_code": code("INVALID_REQUEST"),
            "error_message": NO_QUOTAS,
            "entity": [
                {"entity_type": str(e.entity_type), "entity_name": e.entity_name}
                for e in items(entry.entity)
            ],
        }
        for entry in items(request.body.entries)
    ]
    return {"throttle_time": 0, "entries": entries}


def sasl_handshake(request: Request) -> Answer:
    """A SaslHandshake that reached the handlers came on a listener without SASL (a SASL
    listener's are answered by tidelog.kafka.sasl): Kafka answers ILLEGAL_SASL_STATE."""
    return {"error_code": code("ILLEGAL_SASL_STATE"), "mechanisms": []}


def sasl_authenticate(request: Request) -> Answer:
    return {
        "error_code": code("ILLEGAL_SASL_STATE"),
        "error_message": "SaslAuthenticate on a connection that is not authenticating",
        "auth_bytes": b"",
        "session_lifetime": 0,
    }


def describe_user_scram_credentials(request: Request) -> Answer:
    return scram.describe(request, Credentials(runtime.metadata_store()))


def alter_user_scram_credentials(request: Request) -> Answer:
    return scram.alter(request, Credentials(runtime.metadata_store()))
