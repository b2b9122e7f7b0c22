"""SigV4 for httpx2 requests, through botocore's signer (never a hand-rolled one).

Credentials come from botocore's chain (environment, profile, SSO, container or instance role)
and are frozen for each request, so a refresh between reading the key and the token never
mixes them. The body is hashed as sent, binary bodies included.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import httpx2
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

SERVICE = "execute-api"
_UNSIGNED = frozenset({"connection", "user-agent", "expect", "accept-encoding", "content-length"})


class NoCredentialsError(RuntimeError):
    """No AWS credentials were found: the message says where they are looked for."""


class SigV4(httpx2.Auth):
    requires_request_body = True

    def __init__(self, session: Any, region: str | None) -> None:
        """``session``: a botocore session (its credential chain and region)."""
        self._session = session
        self.region = region or session.get_config_variable("region") or "us-east-1"

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response]:
        credentials = self._session.get_credentials()
        if credentials is None:
            raise NoCredentialsError(
                "no AWS credentials found (environment, ~/.aws profile, SSO, or a role); the "
                "deployed API takes only SigV4-signed requests"
            )
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _UNSIGNED}
        signed = AWSRequest(
            method=request.method, url=str(request.url), data=request.content, headers=headers
        )
        SigV4Auth(credentials.get_frozen_credentials(), SERVICE, self.region).add_auth(signed)
        for name, value in signed.headers.items():
            request.headers[name] = value
        yield request
