"""Creates the template's resources on an emulator, through the AWS APIs, as a deploy would."""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import ClientError

from tidelog.local import iam
from tidelog.local.iam import roles
from tidelog.local.lambdas import FunctionRuntime, install_moto_invoke_hook
from tidelog.local.template import Template, TemplateError

# Credentials for the emulator: any non-empty values do, and they keep boto3 from looking for
# real ones.
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
_TABLE_PROPERTIES = (
    "AttributeDefinitions",
    "KeySchema",
    "BillingMode",
    "GlobalSecondaryIndexes",
    "LocalSecondaryIndexes",
    "StreamSpecification",
)


@dataclass
class Stack:
    template: Template
    runtimes: dict[str, FunctionRuntime]
    """Functions' execution environments, by logical id."""
    environment: dict[str, str]
    """What the functions find in their environment."""
    enforcer: iam.Enforcer
    """The roles' policies, as the emulator enforces them (tidelog.local.iam)."""
    agent_role: str
    """The Kafka agents' task role's ARN ("" when the template deploys no agents)."""

    @property
    def bucket(self) -> str:
        return self.environment["TIDELOG_BUCKET"]

    @property
    def table(self) -> str:
        return self.environment["TIDELOG_TABLE"]


def aws_client(service: str, endpoint: str, region: str) -> Any:
    return boto3.session.Session().client(
        service,
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )


def deploy(template: Template, endpoint: str, overrides: Mapping[str, str] | None = None) -> Stack:
    """Create every bucket, table, function and state machine of ``template`` at ``endpoint``,
    and point this process's environment (and so the functions') at them; ``overrides`` are
    settings of the local host that the template leaves to the platform."""
    region = template.region
    s3 = aws_client("s3", endpoint, region)
    for bucket in template.buckets():
        try:
            s3.create_bucket(Bucket=bucket)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "BucketAlreadyOwnedByYou":
                raise
    ddb = aws_client("dynamodb", endpoint, region)
    for table in template.tables():
        create_table(ddb, table.name, table.properties)

    functions = template.functions()
    environment = {**function_environment(functions, endpoint, region), **(overrides or {})}
    os.environ.update(environment)
    policies = roles.policies(template)
    role = _lambda_role(aws_client("iam", endpoint, region))
    lam = aws_client("lambda", endpoint, region)
    runtimes: dict[str, FunctionRuntime] = {}
    for fn in functions:
        _create_function(lam, fn.name, fn.handler, role, fn.environment)
        principal = roles.role_arn(template, fn.logical_id)
        runtimes[fn.logical_id] = FunctionRuntime(
            fn, template.arn(fn.logical_id), principal=principal
        )
    install_moto_invoke_hook({rt.spec.name: rt for rt in runtimes.values()})

    sfn = aws_client("stepfunctions", endpoint, region)
    for machine in template.state_machines():
        sfn.create_state_machine(
            name=machine.name, definition=machine.definition, roleArn=role, type=machine.type
        )
    enforcer = iam.Enforcer(roles.account(template), policies)
    agent_role = roles.agent_role_arn(template)
    return Stack(
        template, runtimes, environment, enforcer, agent_role if agent_role in policies else ""
    )


def create_table(ddb: Any, name: str, properties: Mapping[str, Any]) -> None:
    """CloudFormation's table properties, as the CreateTable API spells them (encryption and
    recovery settings mean nothing to an in-memory emulator and are left out)."""
    request = {k: properties[k] for k in _TABLE_PROPERTIES if k in properties}
    if "StreamSpecification" in request:
        request["StreamSpecification"] = {"StreamEnabled": True, **request["StreamSpecification"]}
    try:
        ddb.create_table(TableName=name, **request)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceInUseException":
            raise
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1})


def function_environment(functions: list[Any], endpoint: str, region: str) -> dict[str, str]:
    """One process hosts every function, so their variables must agree where they overlap."""
    merged: dict[str, str] = {}
    for fn in functions:
        for name, value in fn.environment.items():
            if merged.setdefault(name, value) != value:
                raise TemplateError(f"functions disagree on {name}; the local stack shares one")
    return {
        **merged,
        **LOCAL_CREDENTIALS,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
    }


def _lambda_role(iam: Any) -> str:
    name = "tidelog-local-execution"
    try:
        return str(iam.get_role(RoleName=name)["Role"]["Arn"])
    except ClientError:
        trust = (
            '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":'
            '{"Service":["lambda.amazonaws.com","states.amazonaws.com"]},'
            '"Action":"sts:AssumeRole"}]}'
        )
        return str(iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust)["Role"]["Arn"])


def _create_function(
    lam: Any, name: str, handler: str, role: str, environment: Mapping[str, str]
) -> None:
    """Register the function with moto; its code runs in-process (tidelog.local.lambdas)."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("README", "tidelog runs this function in-process; see tidelog.local.")
    try:
        lam.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=role,
            Handler=handler,
            Code={"ZipFile": archive.getvalue()},
            Environment={"Variables": dict(environment)},
        )
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceConflictException":
            raise
