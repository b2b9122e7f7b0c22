"""The local IAM evaluation (tidelog.local.iam.policy): IAM's documented rules, checked case by
case, and its matching of actions and resources against moto's own policy engine."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moto.iam.access_control import IAMPolicy, PermissionResult

from tidelog.local.iam.policy import Call, Condition, Policy, PolicyError

TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/tidelog-MetadataTable"
LEADING = "dynamodb:LeadingKeys"


def policy(*statements: dict) -> Policy:
    return Policy.parse([{"Version": "2012-10-17", "Statement": list(statements)}])


def allow(action, resource=TABLE, **condition) -> dict:
    statement = {"Effect": "Allow", "Action": action, "Resource": resource}
    if condition:
        statement["Condition"] = condition
    return statement


def leading(*keys: str) -> dict:
    return {LEADING: list(keys)}


ADMIN = policy(
    allow(
        ["dynamodb:GetItem", "dynamodb:Query"],
        **{"ForAllValues:StringLike": {LEADING: ["topics", "log#*"]}},
    )
)


def test_an_action_the_policy_names_on_a_leading_key_it_names_is_allowed():
    assert ADMIN.decide(Call("dynamodb:GetItem", TABLE, leading("topics"))).allowed
    assert ADMIN.decide(Call("dynamodb:Query", TABLE, leading("log#t1#0"))).allowed


def test_an_action_the_policy_does_not_name_is_refused_and_the_reason_names_it():
    decision = ADMIN.decide(Call("dynamodb:BatchGetItem", TABLE, leading("topics")))
    assert not decision.allowed
    assert decision.reason == (
        "because no identity-based policy allows the dynamodb:BatchGetItem action"
    )


def test_every_leading_key_must_match_for_all_values():
    assert not ADMIN.decide(Call("dynamodb:GetItem", TABLE, leading("groups"))).allowed
    assert not ADMIN.decide(Call("dynamodb:GetItem", TABLE, leading("topics", "groups"))).allowed
    assert ADMIN.decide(Call("dynamodb:GetItem", TABLE, leading("topics", "log#x"))).allowed


def test_for_all_values_holds_for_a_request_without_the_key_as_iam_documents():
    # IAM: "ForAllValues ... returns true if there are no context keys in the request", which
    # is why a LeadingKeys policy alone does not restrict a Scan.
    assert ADMIN.decide(Call("dynamodb:GetItem", TABLE)).allowed
    assert ADMIN.decide(Call("dynamodb:GetItem", TABLE, leading())).allowed


def test_for_any_value_fails_for_a_request_without_the_key():
    any_value = policy(allow("dynamodb:GetItem", **{"ForAnyValue:StringEquals": leading("a")}))
    assert not any_value.decide(Call("dynamodb:GetItem", TABLE)).allowed
    assert any_value.decide(Call("dynamodb:GetItem", TABLE, leading("b", "a"))).allowed


def test_a_single_valued_operator_fails_without_its_key_unless_negated_or_if_exists():
    def decide(operator: str, context: dict) -> bool:
        chosen = policy(allow("s3:ListBucket", "*", **{operator: {"s3:prefix": "data/*"}}))
        return chosen.decide(Call("s3:ListBucket", "arn:aws:s3:::b", context)).allowed

    assert not decide("StringLike", {})
    assert decide("StringLike", {"s3:prefix": ["data/x"]})
    assert not decide("StringLike", {"s3:prefix": ["segments/x"]})
    assert decide("StringNotLike", {})
    assert not decide("StringNotLike", {"s3:prefix": ["data/x"]})
    assert decide("StringLikeIfExists", {})


def test_actions_match_without_case_resources_with_it():
    chosen = policy(allow("S3:getobject", "arn:aws:s3:::Bucket/data/*"))
    assert chosen.decide(Call("s3:GetObject", "arn:aws:s3:::Bucket/data/k")).allowed
    assert not chosen.decide(Call("s3:GetObject", "arn:aws:s3:::bucket/data/k")).allowed


def test_wildcards_are_iams_and_nothing_else_is_special():
    chosen = policy(allow("s3:Get*", "arn:aws:s3:::b/data/?.log"))
    assert chosen.decide(Call("s3:GetObjectTagging", "arn:aws:s3:::b/data/1.log")).allowed
    assert not chosen.decide(Call("s3:GetObject", "arn:aws:s3:::b/data/12.log")).allowed
    assert not chosen.decide(Call("s3:GetObject", "arn:aws:s3:::b/data/1xlog")).allowed
    assert not chosen.decide(Call("s3:PutObject", "arn:aws:s3:::b/data/1.log")).allowed


def test_an_explicit_deny_wins_over_any_allow():
    chosen = policy(
        allow("s3:*", "*"),
        {"Effect": "Deny", "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::b/segments/*"},
    )
    assert chosen.decide(Call("s3:DeleteObject", "arn:aws:s3:::b/data/x")).allowed
    refused = chosen.decide(Call("s3:DeleteObject", "arn:aws:s3:::b/segments/x"))
    assert not refused.allowed
    assert refused.reason == "with an explicit deny in an identity-based policy"


def test_every_condition_of_a_statement_must_hold():
    chosen = policy(
        allow(
            "s3:ListBucket",
            "*",
            StringLike={"s3:prefix": ["data/*"]},
            StringEquals={"s3:delimiter": "/"},
        )
    )
    assert chosen.decide(
        Call("s3:ListBucket", "b", {"s3:prefix": ["data/"], "s3:delimiter": ["/"]})
    ).allowed
    assert not chosen.decide(Call("s3:ListBucket", "b", {"s3:prefix": ["data/"]})).allowed


@pytest.mark.parametrize(
    "statement",
    [
        {"Effect": "Allow", "NotAction": "s3:*", "Resource": "*"},
        {"Effect": "Allow", "Action": "s3:*", "NotResource": "*"},
        {"Effect": "Maybe", "Action": "s3:*", "Resource": "*"},
        {"Effect": "Allow", "Action": [], "Resource": "*"},
        allow("s3:*", "*", NumericLessThan={"s3:max-keys": "10"}),
        allow("s3:*", "*", **{"ForEveryValue:StringLike": {"k": "v"}}),
    ],
)
def test_what_the_evaluation_does_not_know_is_refused_when_read(statement):
    with pytest.raises(PolicyError):
        policy(statement)


def test_condition_parsing_keeps_qualifier_operator_and_if_exists():
    parsed = Condition.parse("ForAllValues:StringLikeIfExists", LEADING, "topics")
    assert (parsed.qualifier, parsed.operator, parsed.if_exists) == (
        "ForAllValues",
        "StringLike",
        True,
    )
    assert parsed.expected == ("topics",)


# -- against moto's engine -----------------------------------------------------------------
# moto matches by turning "*" into ".*" in a regular expression, case-sensitively: the two agree
# on patterns of letters, ":", "/", "-" and "*" over lower-case names, which is what is drawn.

_names = st.text(alphabet="ab:/-", min_size=1, max_size=6)
_patterns = st.text(alphabet="ab:/-*", min_size=1, max_size=6)
_statements = st.fixed_dictionaries(
    {
        "Effect": st.sampled_from(["Allow", "Deny"]),
        "Action": st.lists(_patterns, min_size=1, max_size=3),
        "Resource": st.lists(_patterns, min_size=1, max_size=3),
    }
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_statements, min_size=1, max_size=4), _names, _names)
def test_matching_agrees_with_motos_engine(statements, action, resource):
    document = {"Version": "2012-10-17", "Statement": statements}
    ours = Policy.parse([document]).decide(Call(action, resource))
    moto = IAMPolicy(json.dumps(document)).is_action_permitted(action, resource)
    assert ours.allowed == (moto == PermissionResult.PERMITTED)
