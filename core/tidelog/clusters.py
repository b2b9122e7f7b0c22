"""Where a named tidelog cluster keeps its log: one default that serves everywhere.

A cluster is a stack, named by the caller, else by ``TIDELOG_CLUSTER``, else ``tidelog``: the
name ``tidelog dev`` gives its stack and the name the README deploys under. Against AWS the
bucket and table are the stack's CloudFormation outputs (CloudFormation chooses their names).
Against an endpoint (``AWS_ENDPOINT_URL``: ``tidelog dev``, LocalStack) the outputs are used if
the emulator knows the stack, and otherwise the names ``tidelog dev`` gives its resources,
``<cluster>-databucket``, ``<cluster>-MetadataTable`` and ``<cluster>-AssignmentStateMachine``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_CLUSTER = "tidelog"
BUCKET_OUTPUT = "DataBucketName"
TABLE_OUTPUT = "MetadataTableName"
STATE_MACHINE_OUTPUT = "AssignmentStateMachineArn"
DEV_ACCOUNT = "123456789012"  # the emulator's account, where tidelog dev's stack lives


class ClusterNotFoundError(LookupError):
    """No stack of that name: the message says how to name the right one."""


@dataclass(frozen=True)
class Location:
    bucket: str
    table: str
    state_machine: str | None = None
    """The assignment state machine's ARN: consumer groups need it, reading the log does not."""


def cluster_name(given: str | None = None, environ: Mapping[str, str] = os.environ) -> str:
    return given or environ.get("TIDELOG_CLUSTER") or DEFAULT_CLUSTER


def dev_location(cluster: str, environ: Mapping[str, str] = os.environ) -> Location:
    """The names ``tidelog dev`` gives a stack's resources (tidelog.local.template)."""
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    return Location(
        f"{cluster.lower()}-databucket",
        f"{cluster}-MetadataTable",
        f"arn:aws:states:{region}:{DEV_ACCOUNT}:stateMachine:{cluster}-AssignmentStateMachine",
    )


def locate(
    cluster: str,
    *,
    endpoint: str | None,
    cloudformation: Callable[[], Any],
) -> Location:
    """The bucket and table of ``cluster``; ``cloudformation`` makes a client when one is
    needed."""
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - AWS edge only

    try:
        stacks = cloudformation().describe_stacks(StackName=cluster)["Stacks"]
    except (ClientError, BotoCoreError) as exc:
        if endpoint:
            return dev_location(cluster)
        raise ClusterNotFoundError(
            f"no tidelog stack named {cluster!r} ({exc}); deploy one, or name it with "
            "TIDELOG_CLUSTER (or the cluster option), or give bucket and table"
        ) from exc
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
    if BUCKET_OUTPUT not in outputs or TABLE_OUTPUT not in outputs:
        raise ClusterNotFoundError(
            f"stack {cluster!r} has no {BUCKET_OUTPUT} and {TABLE_OUTPUT} outputs: is it a "
            "tidelog stack?"
        )
    return Location(
        outputs[BUCKET_OUTPUT], outputs[TABLE_OUTPUT], outputs.get(STATE_MACHINE_OUTPUT)
    )
