"""A gateway that verifies SigV4 as API Gateway does (tidelog.local.sigv4), over real HTTP, in
front of a function that echoes what reached it: for proving that clients sign right."""

from __future__ import annotations

import json
import threading
from typing import Any

from werkzeug.serving import BaseWSGIServer, make_server

from tidelog.local.dev import iam_authorizer
from tidelog.local.gateway import Gateway
from tidelog.local.template import Route, Template

KEY, SECRET = "AKIDCLIENTTEST", "client-secret"
ROUTES = [
    Route("GET", "/v1/topics/{topic}", "Admin"),
    Route("POST", "/v1/topics/{topic}/partitions/{partition}/batches", "Produce"),
]


class Echo:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def invoke(self, event: Any) -> Any:
        self.events.append(event)
        return {"statusCode": 200, "body": json.dumps({"path": event["path"]})}


def signing_gateway(template: Template) -> tuple[BaseWSGIServer, str, Echo]:
    """(the server, its URL, the echo behind it); shut the server down when done."""
    echo = Echo()
    gateway = Gateway(
        ROUTES,
        {"Admin": echo, "Produce": echo},  # type: ignore[dict-item]
        binary_media_types=["application/vnd.kafka.record-batch"],
        stage="live",
        responses=template.gateway_responses(),
        authorizer=iam_authorizer({KEY: SECRET}, "us-east-1"),
    )
    httpd = make_server("127.0.0.1", 0, gateway, threaded=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.port}", echo
