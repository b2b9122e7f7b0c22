"""API Gateway's IAM authorization, for `tidelog dev --iam-auth`: every request must be SigV4
signed for ``execute-api`` by a key the gateway knows, as the deployed stack demands.

The signature is recomputed with botocore's own signer over what the request says it signed
(its ``SignedHeaders``, its ``X-Amz-Date``, the body it carries), so a client signing correctly
for AWS passes here and one that does not fails here first. The refusals are API Gateway's,
status, ``x-amzn-ErrorType`` and message alike (AWS's 403 troubleshooting guide lists them), so
``tidelog doctor`` and a user's own tooling see locally what they would see deployed.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest, HTTPHeaders
from botocore.credentials import Credentials

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "execute-api"
MAX_SKEW = datetime.timedelta(minutes=5)
_DATE_FORMAT = "%Y%m%dT%H%M%SZ"
_PART = re.compile(r"(\w+)=([^,\s]*)")


@dataclass(frozen=True)
class Refusal:
    """API Gateway's answer: the response type picks the template's GatewayResponse."""

    response_type: str
    error_type: str
    message: str


MISSING_TOKEN = Refusal(
    "MISSING_AUTHENTICATION_TOKEN",
    "MissingAuthenticationTokenException",
    "Missing Authentication Token",
)
INVALID_TOKEN = Refusal(
    "ACCESS_DENIED",
    "UnrecognizedClientException",
    "The security token included in the request is invalid.",
)
SIGNATURE_MISMATCH = Refusal(
    "INVALID_SIGNATURE",
    "InvalidSignatureException",
    "The request signature we calculated does not match the signature you provided. Check "
    "your AWS Secret Access Key and signing method. Consult the service documentation for "
    "details.",
)


@dataclass(frozen=True)
class SignedRequest:
    method: str
    url: str  # scheme and host, then the path and query exactly as sent (still escaped)
    headers: Mapping[str, str]
    body: bytes


def verify(
    request: SignedRequest,
    secret_for: Callable[[str], str | None],
    region: str,
    now: datetime.datetime,
    *,
    service: str = SERVICE,
) -> Refusal | None:
    """None when ``request`` is signed by a known key; else API Gateway's refusal."""
    headers = {k.lower(): v for k, v in request.headers.items()}
    authorization = headers.get("authorization")
    if not authorization:
        return MISSING_TOKEN
    if not authorization.startswith(ALGORITHM + " "):
        return _incomplete(f"Authorization header requires existence of {ALGORITHM}")
    parts = dict(_PART.findall(authorization[len(ALGORITHM) :]))
    for needed in ("Credential", "SignedHeaders", "Signature"):
        if not parts.get(needed):
            return _incomplete(f"Authorization header requires '{needed}' parameter.")
    amz_date = headers.get("x-amz-date", "")
    try:
        signed_at = datetime.datetime.strptime(amz_date, _DATE_FORMAT).replace(tzinfo=datetime.UTC)
    except ValueError:
        return _incomplete(
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
        )
    scope = parts["Credential"].split("/")
    if len(scope) != 5 or scope[4] != "aws4_request":
        return _incomplete("Credential should be scoped to a valid region.")
    access_key, day, scope_region, scope_service, _ = scope
    secret = secret_for(access_key)
    if secret is None:
        return INVALID_TOKEN
    if day != amz_date[:8] or scope_region != region or scope_service != service:
        return Refusal(
            "INVALID_SIGNATURE",
            "InvalidSignatureException",
            f"Credential should be scoped to correct service: '{service}' and region "
            f"'{region}' on date {amz_date[:8]}.",
        )
    if abs(now - signed_at) > MAX_SKEW:
        return Refusal(
            "INVALID_SIGNATURE",
            "InvalidSignatureException",
            f"Signature expired: {amz_date} is now earlier than "
            f"{(now - MAX_SKEW).strftime(_DATE_FORMAT)} ({now.strftime(_DATE_FORMAT)} - 5 min.)",
        )
    signed_names = parts["SignedHeaders"].split(";")
    if "host" not in signed_names or any(name not in headers for name in signed_names):
        return SIGNATURE_MISMATCH
    expected = _signature(
        request,
        headers,
        signed_names,
        amz_date=amz_date,
        credentials=Credentials(access_key, secret),
        region=region,
        service=service,
    )
    if expected != parts["Signature"]:
        return SIGNATURE_MISMATCH
    return None


def _signature(
    request: SignedRequest,
    headers: Mapping[str, str],
    signed_names: list[str],
    *,
    amz_date: str,
    credentials: Credentials,
    region: str,
    service: str,
) -> str:
    """The signature of exactly the headers the request says it signed, at its date."""
    copy = AWSRequest(method=request.method, url=request.url, data=request.body)
    copy.context["timestamp"] = amz_date
    signer = _Exactly(credentials, service, region, signed_names, headers)
    canonical = signer.canonical_request(copy)
    return str(signer.signature(signer.string_to_sign(copy, canonical), copy))


class _Exactly(SigV4Auth):  # type: ignore[misc]  # botocore ships no types
    """botocore's signer, over the named headers only (its own choice leaves some out)."""

    def __init__(
        self,
        credentials: Credentials,
        service: str,
        region: str,
        names: Sequence[str],
        headers: Mapping[str, str],
    ) -> None:
        super().__init__(credentials, service, region)
        self._chosen = HTTPHeaders()
        for name in names:
            self._chosen[name] = headers[name]

    def headers_to_sign(self, request: AWSRequest) -> HTTPHeaders:
        return self._chosen


def _incomplete(message: str) -> Refusal:
    return Refusal("INVALID_SIGNATURE", "IncompleteSignatureException", message)
