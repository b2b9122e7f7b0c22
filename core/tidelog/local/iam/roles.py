"""Each caller's role, read from the templates as AWS would build it.

- A function's role holds its ``Policies`` (SAM makes one role per function).
- The Kafka agents' task role holds the ``TaskRole`` policies of ``agents.yaml``, with the
  parameters the parent template passes to that nested stack.

Locally a role is named ``<stack>-<logical id>Role``; its ARN labels the calls made in it
(:mod:`tidelog.aws`).
"""

from __future__ import annotations

from typing import Any

from tidelog.local.iam.calls import Account, Table
from tidelog.local.iam.policy import Policy, PolicyError
from tidelog.local.template import ACCOUNT_ID, Template, TemplateError

AGENTS_STACK = "KafkaAgents"  # the parent template's nested stack of the Fargate agents


def role_arn(template: Template, logical_id: str) -> str:
    return f"arn:aws:iam::{ACCOUNT_ID}:role/{template.stack_name}-{logical_id}Role"


def agent_role_arn(template: Template) -> str:
    return role_arn(template, f"{AGENTS_STACK}-Task")


def policies(template: Template) -> dict[str, Policy]:
    """Every role's policy, by role ARN: the functions' and the agents' task role's."""
    found: dict[str, Policy] = {}
    for logical_id, resource in template.resources.items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        documents = template.resolve(resource["Properties"].get("Policies", []))
        found[role_arn(template, logical_id)] = _parse(logical_id, documents)
    if AGENTS_STACK in template.resources:
        found[agent_role_arn(template)] = _agent_policy(template)
    return found


def account(template: Template) -> Account:
    """The names the emulator's requests use for the template's tables and buckets."""
    tables = {}
    for table in template.tables():
        properties = table.properties
        indexes = {
            index["IndexName"]: _partition_key(index["KeySchema"])
            for index in [
                *properties.get("GlobalSecondaryIndexes", []),
                *properties.get("LocalSecondaryIndexes", []),
            ]
        }
        tables[table.name] = Table(
            template.arn(table.logical_id), _partition_key(properties["KeySchema"]), indexes
        )
    return Account(ACCOUNT_ID, template.region, tables, frozenset(template.buckets()))


def _partition_key(schema: list[dict[str, str]]) -> str:
    return next(k["AttributeName"] for k in schema if k["KeyType"] == "HASH")


def _parse(owner: str, documents: Any) -> Policy:
    if not isinstance(documents, list) or not all(
        isinstance(d, dict) and "Statement" in d for d in documents
    ):
        raise TemplateError(
            f"{owner}: the local stack enforces inline policy documents only, not {documents!r}"
        )
    try:
        return Policy.parse(documents)
    except PolicyError as exc:
        raise TemplateError(f"{owner}: {exc}") from exc


def _agent_policy(template: Template) -> Policy:
    nested = template.resources[AGENTS_STACK]["Properties"]
    parameters = {
        name: str(template.resolve(value)) for name, value in nested["Parameters"].items()
    }
    agents = Template(
        template.path.parent / nested["TemplateURL"],
        stack_name=template.stack_name,
        region=template.region,
        parameters=parameters,
    )
    role = agents.resources["TaskRole"]["Properties"]
    documents = [p["PolicyDocument"] for p in agents.resolve(role.get("Policies", []))]
    return _parse(f"{AGENTS_STACK}.TaskRole", documents)
