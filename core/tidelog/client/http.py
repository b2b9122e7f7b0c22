"""One connection to a tidelog API: the endpoint, its signing, JSON in and out, and errors as
tidelog's tree (a Kafka name on each)."""

from __future__ import annotations

from typing import Any

import httpx2

from tidelog import __version__
from tidelog.client import errors
from tidelog.client.endpoint import Endpoint, resolve
from tidelog.client.signing import SigV4

DEFAULT_TIMEOUT_S = 30.0


class Http:
    def __init__(
        self,
        url: str | None = None,
        *,
        cluster: str | None = None,
        sign: bool | None = None,
        region: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        """Arguments override ``TIDELOG_URL`` / ``TIDELOG_CLUSTER`` (see tidelog.client.endpoint).
        ``transport``: httpx2's, for tests."""
        self.endpoint: Endpoint = resolve(url, cluster=cluster, sign=sign, region=region)
        auth = None
        self.region = self.endpoint.region
        if self.endpoint.sign:
            import botocore.session  # noqa: PLC0415 - only a signing client needs it

            auth = SigV4(botocore.session.get_session(), self.endpoint.region)
            self.region = auth.region
        self._client = httpx2.Client(
            base_url=self.endpoint.url,
            auth=auth,
            timeout=timeout_s,
            headers={"User-Agent": f"tidelog-client/{__version__}"},
            transport=transport,
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx2.Response:
        """The answer, when it is a success; else the error it stands for, raised."""
        response = self.send(
            method, path, json=json, params=params, content=content, headers=headers
        )
        if response.status_code >= 400:
            raise errors.from_response(
                response.status_code,
                response.content,
                {k.lower(): v for k, v in response.headers.items()},
            )
        return response

    def send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx2.Response:
        """The answer, whatever its status (signed as the endpoint needs): for a caller that
        passes answers on, as the console's proxy does."""
        return self._client.request(
            method, path, json=json, params=params, content=content, headers=headers
        )

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None).json()

    def post(self, path: str, body: Any = None) -> Any:
        return self.request("POST", path, json=body).json()

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Http:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
