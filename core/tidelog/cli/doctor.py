"""`tidelog doctor`: can this machine reach and use a tidelog API? Each check says what it found,
and a failure says its cause and the fix. Exit 0 when every check passes, 1 otherwise."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from tidelog.cli import topics

# API Gateway's refusals (its x-amzn-ErrorType), each with its cause and fix.
_REFUSALS = {
    "MissingAuthenticationTokenException": (
        "API Gateway saw no signature, or the path is no route of the API",
        "check the URL includes the stage (…/live); the client signs everywhere but loopback",
    ),
    "UnrecognizedClientException": (
        "the access key is unknown to the API's account",
        "use credentials of the account the stack is deployed in (AWS_PROFILE, or the keys)",
    ),
    "AccessDeniedException": (
        "the key is valid but may not call this API",
        "grant execute-api:Invoke on the API to this identity",
    ),
    "IncompleteSignatureException": (
        "the Authorization header is malformed",
        "let the client sign (tidelog.client), or fix the signer",
    ),
}
_EXPIRED = (
    "this machine's clock is more than 5 minutes off",
    "synchronise the clock (NTP), then try again",
)
_MISMATCH = (
    "the signature does not match: a wrong secret key, or signed for another region",
    "check the secret key, and that the region ({region}) is the API's",
)


@dataclass
class Check:
    name: str
    ok: bool
    found: str
    fix: str = ""


def add_command(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor", help="check the endpoint, credentials, signature and health of a tidelog API"
    )
    topics.connection_options(doctor)


def run(args: argparse.Namespace, out: Any = None) -> int:
    out = out or sys.stdout
    try:
        checks = diagnose(args.url, args.cluster, sign=args.sign)
    except ImportError as exc:
        print(
            f"tidelog doctor needs the client extra: pip install 'tidelog[client]' ({exc})",
            file=sys.stderr,
        )
        return 2
    for check in checks:
        mark = "ok  " if check.ok else "FAIL"
        print(f"{mark} {check.name:<12} {check.found}", file=out)
        if check.fix:
            print(f"     {'':<12} fix: {check.fix}", file=out)
    return 0 if all(c.ok for c in checks) else 1


def diagnose(url: str | None, cluster: str | None, *, sign: bool | None = None) -> list[Check]:
    """Every check, in order; one that fails stops the ones that depend on it."""
    import httpx2  # noqa: PLC0415 - the client extra, on demand

    from tidelog.client import errors  # noqa: PLC0415
    from tidelog.client.http import Http  # noqa: PLC0415

    checks: list[Check] = []
    try:
        http = Http(url, cluster=cluster, sign=sign)
    except (LookupError, ValueError) as exc:
        return [Check("endpoint", False, str(exc), "give --url, or TIDELOG_URL / TIDELOG_CLUSTER")]
    endpoint = http.endpoint
    signing = f"signed for region {http.region}" if endpoint.sign else "unsigned (loopback)"
    checks.append(Check("endpoint", True, f"{endpoint.url} from {endpoint.source}; {signing}"))
    with http:
        try:
            raw = httpx2.get(f"{endpoint.url}/v1/health", timeout=10)
        except httpx2.HTTPError as exc:
            checks.append(
                Check(
                    "reachable",
                    False,
                    f"{type(exc).__name__}: {exc}",
                    "is the API running (tidelog dev, or the stack deployed)? is the URL right?",
                )
            )
            return checks
        checks.append(Check("reachable", True, f"HTTP {raw.status_code} from {endpoint.url}"))
        if endpoint.sign:
            found = _credentials()
            checks.append(found)
            if not found.ok:
                return checks
        try:
            health = http.get("/v1/health")
            cluster_info = http.get("/v1/cluster")
        except errors.AuthorizationError as exc:
            checks.append(_refused(exc, http.region))
            return checks
        except Exception as exc:  # noqa: BLE001 - any other answer is the finding itself
            checks.append(
                Check(
                    "health",
                    False,
                    f"{type(exc).__name__}: {exc}",
                    "see the API's logs (CloudWatch, or tidelog dev's console)",
                )
            )
            return checks
    if endpoint.sign:
        checks.append(Check("signature", True, "accepted"))
    checks.append(
        Check(
            "health",
            health.get("status") == "ok",
            f"{health.get('status')}, tidelog {health.get('version')}; cluster "
            f"{cluster_info.get('cluster_id')}",
        )
    )
    return checks


def _credentials() -> Check:
    import botocore.session  # noqa: PLC0415 - AWS edge only

    credentials = botocore.session.get_session().get_credentials()
    if credentials is None:
        return Check(
            "credentials",
            False,
            "no AWS credentials found",
            "set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or sign in "
            "with `aws sso login`",
        )
    key = credentials.get_frozen_credentials().access_key
    return Check("credentials", True, f"{key[:4]}…{key[-4:]} from {credentials.method}")


def _refused(exc: Any, region: str | None) -> Check:
    cause, fix = _REFUSALS.get(exc.error_type, _MISMATCH)
    if exc.error_type == "InvalidSignatureException" and "expired" in exc.message.lower():
        cause, fix = _EXPIRED
    found = f"refused: {exc.error_type or exc.http_status} ({exc.message}); {cause}"
    return Check("signature", False, found, fix.format(region=region))
