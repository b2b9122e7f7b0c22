"""Where a named tidelog cluster keeps its log: one default that serves everywhere.

A cluster is a stack, named by the caller, else by ``TIDELOG_CLUSTER``, else ``tidelog``: the
name ``tidelog dev`` gives its stack and the name the README deploys under. Against AWS the
bucket and table are the stack's CloudFormation outputs (CloudFormation chooses their names).
Against an endpoint (``AWS_ENDPOINT_URL``: ``tidelog dev``, LocalStack) the outputs are used if
the emulator knows the stack, and otherwise the names ``tidelog dev`` gives its resources,
``<cluster>-databucket`` and ``<cluster>-MetadataTable``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_CLUSTER = "tidelog"
BUCKET_OUTPUT = "DataBucketName"
TABLE_OUTPUT = "MetadataTableName"


class ClusterNotFoundError(LookupError):
    """No stack of that name: the message says how to name the right one."""


@dataclass(frozen=True)
class Location:
    bucket: str
    table: str


def cluster_name(given: str | None = None, environ: Mapping[str, str] = os.environ) -> str:
    return given or environ.get("TIDELOG_CLUSTER") or DEFAULT_CLUSTER


def dev_location(cluster: str) -> Location:
    """The names ``tidelog dev`` gives a stack's bucket and table (tidelog.local.template)."""
    return Location(f"{cluster.lower()}-databucket", f"{cluster}-MetadataTable")


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
    return Location(outputs[BUCKET_OUTPUT], outputs[TABLE_OUTPUT])
