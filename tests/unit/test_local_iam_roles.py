"""Each role as the templates write it (tidelog.local.iam.roles), and the label each AWS call
of ``tidelog dev`` carries (tidelog.aws)."""

from __future__ import annotations

import pytest

from tidelog import aws, principals
from tidelog.local.iam import roles
from tidelog.local.iam.policy import Call
from tidelog.local.paths import template_path
from tidelog.local.template import Template

TEMPLATE = Template(template_path())
TABLE = TEMPLATE.arn("MetadataTable")
BUCKET = TEMPLATE.arn("DataBucket")
POLICIES = roles.policies(TEMPLATE)


def role(logical_id: str):
    return POLICIES[roles.role_arn(TEMPLATE, logical_id)]


def item(action: str, key: str) -> Call:
    return Call(f"dynamodb:{action}", TABLE, {"dynamodb:LeadingKeys": [key]})


def test_every_function_and_the_agents_have_a_role():
    functions = [
        lid for lid, r in TEMPLATE.resources.items() if r["Type"] == "AWS::Serverless::Function"
    ]
    assert len(functions) >= 9
    assert set(POLICIES) == {roles.role_arn(TEMPLATE, f) for f in functions} | {
        roles.agent_role_arn(TEMPLATE)
    }


def test_the_agents_role_comes_from_the_nested_template_with_the_parents_names():
    agents = POLICIES[roles.agent_role_arn(TEMPLATE)]
    assert agents.decide(Call("s3:PutObject", f"{BUCKET}/data/flush/x")).allowed
    assert agents.decide(item("Query", "acl")).allowed
    assert not agents.decide(Call("s3:DeleteObject", f"{BUCKET}/data/flush/x")).allowed
    assert not agents.decide(item("PutItem", "gc")).allowed  # housekeeping's, not an agent's


@pytest.mark.parametrize(
    ("function", "call", "allowed"),
    [
        ("AdminFunction", item("BatchGetItem", "log#t#0"), True),
        ("AdminFunction", item("PutItem", "group#g"), False),
        ("ProduceFunction", Call("s3:PutObject", f"{BUCKET}/data/flush/x"), True),
        ("ProduceFunction", Call("s3:PutObject", f"{BUCKET}/segments/x"), False),
        ("FetchFunction", item("PutItem", "log#t#0"), False),
        ("CollectorFunction", Call("s3:DeleteObject", f"{BUCKET}/segments/x"), True),
        ("MaintenanceFunction", Call("s3:DeleteObject", f"{BUCKET}/segments/x"), False),
        ("CollectorFunction", Call("s3:ListBucket", BUCKET, {"s3:prefix": ["data/"]}), True),
        ("CollectorFunction", Call("s3:ListBucket", BUCKET, {}), False),
        ("ClusterFunction", item("GetItem", "topics"), False),
    ],
)
def test_roles_allow_what_their_statements_say(function, call, allowed):
    assert role(function).decide(call).allowed is allowed


def test_only_the_collector_may_delete_an_object():
    for arn, policy in POLICIES.items():
        deletes = policy.decide(Call("s3:DeleteObject", f"{BUCKET}/data/flush/x")).allowed
        assert deletes is arn.endswith("-CollectorFunctionRole"), arn


class Sent(Exception):
    pass


def label_sent(monkeypatch, setting: str, roles_: frozenset[str]) -> str | None:
    monkeypatch.setenv("TIDELOG_LOCAL_IAM", setting)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    aws.reset()
    client = aws.client("dynamodb")
    seen: list[str | None] = []

    def grab(request, **_):
        seen.append(request.headers.get(aws.PRINCIPAL_HEADER))
        raise Sent

    client.meta.events.register("before-send", grab)
    try:
        with principals.acting_as(roles_), pytest.raises(Sent):
            client.describe_table(TableName="t")
    finally:
        aws.reset()
    return seen[0].decode() if isinstance(seen[0], bytes) else seen[0]


def test_a_call_names_the_roles_it_is_made_for_only_locally(monkeypatch):
    both = frozenset({"arn:b", "arn:a"})
    assert label_sent(monkeypatch, "on", both) == "arn:a,arn:b"
    assert label_sent(monkeypatch, "on", frozenset()) is None
    assert label_sent(monkeypatch, "off", both) is None
