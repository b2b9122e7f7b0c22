"""Where the client sends requests, and how it signs them.

The endpoint comes from the caller, else ``TIDELOG_URL``, else the named cluster's stack
(``TIDELOG_CLUSTER``: its ``ApiUrl`` output, found through CloudFormation), else the local
``tidelog dev`` (``http://127.0.0.1:$TIDELOG_API_PORT``, 8080 by default). Requests are SigV4
signed for ``execute-api``, as the deployed stack's IAM authorization demands, except to a
loopback address (``tidelog dev``, which takes unsigned requests unless ``--iam-auth``), and
whenever the caller says otherwise.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tidelog.clusters import ClusterNotFoundError

API_URL_OUTPUT = "ApiUrl"
_EXECUTE_API = re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com")


@dataclass(frozen=True)
class Endpoint:
    url: str  # no trailing slash
    sign: bool
    region: str | None  # for the signature; None: the AWS configuration's
    source: str = "argument"  # where the URL came from, for `tidelog doctor`


def resolve(
    url: str | None = None,
    *,
    cluster: str | None = None,
    sign: bool | None = None,
    region: str | None = None,
    environ: Mapping[str, str] = os.environ,
    cloudformation: Callable[[], Any] | None = None,
) -> Endpoint:
    """``cloudformation`` makes a client when a cluster's stack must be read."""
    chosen, source = url, "argument"
    if not chosen and environ.get("TIDELOG_URL"):
        chosen, source = environ["TIDELOG_URL"], "TIDELOG_URL"
    cluster = cluster or environ.get("TIDELOG_CLUSTER")
    if not chosen and cluster:
        chosen = stack_url(cluster, cloudformation or _cloudformation)
        source = f"the ApiUrl output of stack {cluster!r}"
    if not chosen:
        chosen = f"http://127.0.0.1:{environ.get('TIDELOG_API_PORT') or 8080}"
        source = "tidelog dev on this machine (no TIDELOG_URL or TIDELOG_CLUSTER)"
    parts = urlsplit(chosen)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{chosen!r} is not an http(s) URL of a tidelog API")
    if sign is None:
        sign = not _loopback(parts.hostname)
    found = _EXECUTE_API.search(parts.hostname)
    region = region or (found.group(1) if found else None)
    return Endpoint(chosen.rstrip("/"), sign, region, source)


def stack_url(cluster: str, cloudformation: Callable[[], Any]) -> str:
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - AWS edge only

    try:
        stacks = cloudformation().describe_stacks(StackName=cluster)["Stacks"]
    except (ClientError, BotoCoreError) as exc:
        raise ClusterNotFoundError(
            f"no tidelog stack named {cluster!r} ({exc}); give the API's URL (TIDELOG_URL or "
            "--url), or name the stack with TIDELOG_CLUSTER (or --cluster)"
        ) from exc
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
    if API_URL_OUTPUT not in outputs:
        raise ClusterNotFoundError(f"stack {cluster!r} has no {API_URL_OUTPUT} output")
    return str(outputs[API_URL_OUTPUT])


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _cloudformation() -> Any:
    import boto3  # noqa: PLC0415 - only when a stack must be read

    return boto3.session.Session().client("cloudformation")
