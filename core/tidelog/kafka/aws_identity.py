"""AWS identities at the Kafka port: a SASL/OAUTHBEARER token that is a presigned STS
GetCallerIdentity request, which the agent sends to STS to learn who signed it. The same IAM
principals that call the HTTP API then log in to the Kafka port, with no password to keep.

EKS's aws-iam-authenticator and Vault's AWS auth method work this way. The token is
``tidelog-aws-v1.`` and the request's URL, base64url-encoded. The client signs the request with
a header, ``x-tidelog-cluster``, naming the cluster it is for; the agent sends the request with
its own cluster's id in that header, so a token made for another cluster fails STS's signature
check (audience binding). What the agent checks before it sends anything:

- the URL is STS's: https, a host ``sts.amazonaws.com`` or ``sts.<region>.amazonaws.com`` (or
  the China partition's), or the endpoint the agent itself was given (``tidelog dev``'s
  emulator); nothing else is ever fetched, so a token cannot make the agent call anywhere else;
- the request is GetCallerIdentity and nothing more, signed with SigV4 in the query, the
  cluster header among the signed headers;
- it is not expired: signed at most 15 minutes before (X-Amz-Expires, at most 900 s) and not
  dated in the future beyond clock skew. STS checks the signature and the expiry again.

A token can be replayed by whoever holds it, until it expires, against the cluster it names, as
any bearer token can: it travels over TLS, and expires in minutes (the session it opens must
re-authenticate before then, KIP-368).

The principal is ``User:`` and the caller's ARN, with an assumed role named by its role:
``arn:aws:sts::123456789012:assumed-role/app/i-0abc`` logs in as
``User:arn:aws:iam::123456789012:role/app`` (the role's path is not in STS's answer, so ACLs
name a role without it).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import re
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.kafka.scram import LoginError

TOKEN_PREFIX = "tidelog-aws-v1."  # noqa: S105 - a format's name, not a secret
CLUSTER_HEADER = "x-tidelog-cluster"
MAX_EXPIRES_S = 900  # STS's presigned requests are good for 15 minutes at most
CLOCK_SKEW_S = 300
FETCH_TIMEOUT_S = 5.0
MAX_ANSWER_BYTES = 64 * 1024
_STS_HOST = re.compile(r"^sts(\.[a-z0-9-]+)?\.amazonaws\.com(\.cn)?$")
_ASSUMED_ROLE = re.compile(r"^arn:([^:]+):sts::(\d{12}):assumed-role/([^/]+)/.+$")

# (url, headers) -> (HTTP status, body): how the verifier sends the request.
Fetch = Callable[[str, dict[str, str]], tuple[int, bytes]]


@dataclass(frozen=True)
class Identity:
    principal: str  # the name of User:<name>, an ARN
    expires_at: datetime.datetime  # when the token stops being good


class IdentityVerifier:
    """Checks tokens for the cluster ``cluster_id``; ``endpoint`` is an STS endpoint the agent
    was given besides AWS's own (the emulator's, in ``tidelog dev``)."""

    def __init__(
        self,
        cluster_id: Callable[[], str],
        fetch: Fetch,
        *,
        endpoint: str | None = None,
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self._cluster_id = cluster_id
        self._fetch = fetch
        self._clock = clock
        parsed = urllib.parse.urlsplit(endpoint) if endpoint else None
        self._endpoint = (parsed.scheme, parsed.netloc) if parsed else None

    def verify(self, token: str) -> Identity:
        url, expires_at = self._request_of(token)
        status, body = self._fetch(
            url, {CLUSTER_HEADER: self._cluster_id(), "Accept": "application/json"}
        )
        if status != 200:
            raise LoginError(f"STS refused the token ({status}): {body[:200]!r}")
        return Identity(_principal(_arn(body)), expires_at)

    def _request_of(self, token: str) -> tuple[str, datetime.datetime]:
        if not token.startswith(TOKEN_PREFIX):
            raise LoginError(f"not a tidelog AWS token (it starts {TOKEN_PREFIX!r})")
        encoded = token.removeprefix(TOKEN_PREFIX)
        try:
            url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise LoginError("a token that is not base64url") from exc
        parts = urllib.parse.urlsplit(url)
        if not self._is_sts(parts.scheme, parts.netloc) or parts.path not in ("", "/"):
            raise LoginError(f"a token for {parts.scheme}://{parts.netloc}{parts.path}, not STS")
        query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
        if any(len(values) != 1 for values in query.values()):
            raise LoginError("a token with a repeated query parameter")
        one = {name: values[0] for name, values in query.items()}
        if one.get("Action") != "GetCallerIdentity" or one.get("Version") != "2011-06-15":
            raise LoginError("a token that is not STS GetCallerIdentity")
        if one.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" or "X-Amz-Signature" not in one:
            raise LoginError("a token that is not signed with SigV4 in its query")
        if CLUSTER_HEADER not in one.get("X-Amz-SignedHeaders", "").split(";"):
            raise LoginError(f"a token that does not sign {CLUSTER_HEADER}")
        return url, self._expiry(one)

    def _is_sts(self, scheme: str, netloc: str) -> bool:
        if self._endpoint is not None and (scheme, netloc) == self._endpoint:
            return True
        return scheme == "https" and bool(_STS_HOST.match(netloc))

    def _expiry(self, query: dict[str, str]) -> datetime.datetime:
        try:
            signed = datetime.datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(
                tzinfo=datetime.UTC
            )
            lasts = int(query["X-Amz-Expires"])
        except (KeyError, ValueError) as exc:
            raise LoginError("a token without its signing time or lifetime") from exc
        if not 0 < lasts <= MAX_EXPIRES_S:
            raise LoginError(f"a token that lasts {lasts} s (1 to {MAX_EXPIRES_S})")
        now = self._clock()
        if signed - now > datetime.timedelta(seconds=CLOCK_SKEW_S):
            raise LoginError(f"a token signed in the future ({signed:%Y-%m-%dT%H:%M:%SZ})")
        expires_at = signed + datetime.timedelta(seconds=lasts)
        if expires_at <= now:
            raise LoginError(f"a token that expired at {expires_at:%Y-%m-%dT%H:%M:%SZ}")
        return expires_at


def https_fetch(url: str, headers: dict[str, str]) -> tuple[int, bytes]:
    """Send the token's request (only ever to an STS endpoint: IdentityVerifier checks first)."""
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - checked to be STS's
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as answer:  # noqa: S310
            return answer.status, answer.read(MAX_ANSWER_BYTES)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(MAX_ANSWER_BYTES)
    except OSError as exc:
        raise LoginError(f"STS could not be reached: {exc}") from exc


def _arn(body: bytes) -> str:
    """The caller's ARN, from STS's JSON answer or its XML one."""
    try:
        answer = json.loads(body)
        arn = answer["GetCallerIdentityResponse"]["GetCallerIdentityResult"]["Arn"]
    except (ValueError, KeyError, TypeError):
        try:
            root = ET.fromstring(body)  # noqa: S314 - STS's answer
        except ET.ParseError as exc:
            raise LoginError("STS answered what is neither JSON nor XML") from exc
        found = next((e.text for e in root.iter() if e.tag.rsplit("}", 1)[-1] == "Arn"), None)
        if not found:
            raise LoginError("STS answered no ARN") from None
        arn = found
    return str(arn)


def _principal(arn: str) -> str:
    assumed = _ASSUMED_ROLE.match(arn)
    if assumed is None:
        return arn
    partition, account, role = assumed.groups()
    return f"arn:{partition}:iam::{account}:role/{role}"
