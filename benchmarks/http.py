"""One JSON call to the HTTP API, as the benchmarks of groups make it: the status and the
decoded answer, errors included."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


def call(api: str, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{api}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
