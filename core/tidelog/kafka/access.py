"""Who may do what, and how fast: the ACL, SCRAM credential and client-quota APIs.

SCRAM credentials: DescribeUserScramCredentials and AlterUserScramCredentials manage the users
SASL listeners authenticate (tidelog.kafka.scram, tidelog.kafka.sasl).

ACLs: the agent has no authorizer yet (SASL and ACLs are their own work), so DescribeAcls,
CreateAcls and DeleteAcls answer SECURITY_DISABLED, as a Kafka broker without an authorizer
does, and the connection goes on.

Client quotas: tidelog does not throttle clients by client id or user. Kafka enforces quotas in
each broker over its own traffic; tidelog's agents are many, stateless and autoscaled, so a
per-agent quota would change meaning with the agent count. DescribeClientQuotas answers that
none is set; AlterClientQuotas refuses each entry with a message that says so (docs/kafka.md).
"""

from __future__ import annotations

from tidelog import runtime
from tidelog.credentials import Credentials
from tidelog.kafka import scram
from tidelog.kafka.codec import NONE, Answer, Request, code, items

NO_AUTHORIZER = "No Authorizer is configured on the broker"
NO_QUOTAS = (
    "tidelog does not enforce client quotas: its agents are many and stateless, so a per-agent "
    "byte rate would change with their number (docs/kafka.md)"
)


def describe_acls(request: Request) -> Answer:
    return {
        "throttle_time": 0,
        "error_code": code("SECURITY_DISABLED"),
        "error_message": NO_AUTHORIZER,
        "resources": [],
    }


def create_acls(request: Request) -> Answer:
    results = [
        {"error_code": code("SECURITY_DISABLED"), "error_message": NO_AUTHORIZER}
        for _ in items(request.body.creations)
    ]
    return {"throttle_time": 0, "results": results}


def delete_acls(request: Request) -> Answer:
    results = [
        {
            "error_code": code("SECURITY_DISABLED"),
            "error_message": NO_AUTHORIZER,
            "matching_acls": [],
        }
        for _ in items(request.body.filters)
    ]
    return {"throttle_time": 0, "filter_results": results}


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
