"""The local API Gateway answers as API Gateway's REST API does."""

from __future__ import annotations

import base64
import json

import pytest
from werkzeug.test import Client

from tidelog.local.gateway import Gateway, Router
from tidelog.local.template import Route

ROUTES = [
    Route("GET", "/v1/topics", "Admin"),
    Route("GET", "/v1/topics/{topic}", "Admin"),
    Route("GET", "/v1/topics/special", "Special"),
    Route("POST", "/v1/topics/{topic}/partitions/{p}/batches", "Produce"),
    Route("ANY", "/v1/files/{proxy+}", "Files"),
]


class Echo:
    """A function that answers with the event it got (or a canned result)."""

    def __init__(self, result=None, error=None):
        self.result, self.error, self.events = result, error, []

    def invoke(self, event):
        self.events.append(event)
        if self.error:
            raise self.error
        if self.result is not None:
            return self.result
        return {"statusCode": 200, "body": json.dumps(event)}


def gateway(**functions):
    runtimes = {
        name: functions.get(name, Echo()) for name in ("Admin", "Special", "Produce", "Files")
    }
    app = Gateway(
        ROUTES,
        runtimes,
        binary_media_types=["application/vnd.kafka.record-batch", "image/*"],
        stage="live",
    )
    return Client(app), runtimes


@pytest.mark.parametrize(
    ("method", "path", "function", "parameters"),
    [
        ("GET", "/v1/topics", "Admin", None),
        ("GET", "/v1/topics/orders", "Admin", {"topic": "orders"}),
        ("GET", "/v1/topics/special", "Special", None),  # a literal beats a parameter
        ("POST", "/v1/topics/t/partitions/3/batches", "Produce", {"topic": "t", "p": "3"}),
        ("DELETE", "/v1/files/a/b/c", "Files", {"proxy": "a/b/c"}),
    ],
)
def test_routing(method, path, function, parameters):
    match = Router(ROUTES).match(method, path)
    assert match.route.function == function
    assert (match.path_parameters or None) == parameters


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/topics"),
        ("GET", "/v1/nope"),
        ("GET", "/v1/topics/a/b"),
        ("GET", "/v1/files"),
    ],
)
def test_unknown_routes_get_api_gateways_403(method, path):
    client, _ = gateway()
    response = client.open(path, method=method)
    assert response.status_code == 403
    assert response.json == {"message": "Missing Authentication Token"}


def test_proxy_event_shape():
    client, runtimes = gateway()
    response = client.get("/v1/topics/orders?x=1&x=2&y=", headers={"X-Trace": "abc"})
    assert response.status_code == 200
    event = runtimes["Admin"].events[0]
    assert event["resource"] == "/v1/topics/{topic}"
    assert event["path"] == "/v1/topics/orders"
    assert event["httpMethod"] == "GET"
    assert event["pathParameters"] == {"topic": "orders"}
    assert event["queryStringParameters"] == {"x": "2", "y": ""}
    assert event["multiValueQueryStringParameters"] == {"x": ["1", "2"], "y": [""]}
    assert event["headers"]["X-Trace"] == "abc"
    assert event["multiValueHeaders"]["X-Trace"] == ["abc"]
    assert event["body"] is None
    assert event["isBase64Encoded"] is False
    context = event["requestContext"]
    assert context["stage"] == "live"
    assert context["path"] == "/live/v1/topics/orders"
    assert context["resourcePath"] == "/v1/topics/{topic}"


def test_binary_media_types_arrive_base64_encoded():
    client, runtimes = gateway()
    payload = bytes(range(256))
    client.post(
        "/v1/topics/t/partitions/0/batches",
        data=payload,
        content_type="application/vnd.kafka.record-batch",
    )
    event = runtimes["Produce"].events[0]
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == payload


def test_text_bodies_arrive_as_text_and_bad_utf8_is_refused():
    client, runtimes = gateway()
    client.post(
        "/v1/topics/t/partitions/0/batches", data='{"a": "é"}', content_type="application/json"
    )
    assert runtimes["Produce"].events[0]["body"] == '{"a": "é"}'
    response = client.post(
        "/v1/topics/t/partitions/0/batches", data=b"\xff\xfe", content_type="application/json"
    )
    assert response.status_code == 400
    assert len(runtimes["Produce"].events) == 1


def test_payload_limits():
    client, runtimes = gateway()
    over_api_gateway = b"x" * (10 * 1024 * 1024 + 1)
    response = client.post(
        "/v1/topics/t/partitions/0/batches",
        data=over_api_gateway,
        content_type="application/octet-stream",
    )
    assert (response.status_code, response.json) == (413, {"message": "Request Too Long"})
    # 4.8 MB of binary becomes 6.4 MB of base64: over Lambda's 6 MB event.
    over_lambda = b"x" * (4_800_000)
    response = client.post(
        "/v1/topics/t/partitions/0/batches",
        data=over_lambda,
        content_type="application/vnd.kafka.record-batch",
    )
    assert response.status_code == 413
    assert runtimes["Produce"].events == []


@pytest.mark.parametrize(
    "result",
    [
        None,
        {"body": "no status"},
        {"statusCode": "200"},
        {"statusCode": 200, "body": "x" * 7_000_000},
    ],
)
def test_malformed_or_oversized_results_are_502(result):
    client, _ = gateway(Admin=Echo(result=result if result is not None else ["not a dict"]))
    response = client.get("/v1/topics")
    assert (response.status_code, response.json) == (502, {"message": "Internal server error"})


def test_a_handler_that_raises_is_502():
    client, _ = gateway(Admin=Echo(error=RuntimeError("boom")))
    response = client.get("/v1/topics")
    assert (response.status_code, response.json) == (502, {"message": "Internal server error"})


def test_response_status_headers_and_multi_value_headers():
    result = {
        "statusCode": 201,
        "headers": {"X-One": "1", "Content-Type": "text/plain"},
        "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]},
        "body": "made",
    }
    client, _ = gateway(Admin=Echo(result=result))
    response = client.get("/v1/topics")
    assert response.status_code == 201
    assert response.headers["X-One"] == "1"
    assert response.headers.getlist("Set-Cookie") == ["a=1", "b=2"]
    assert response.get_data() == b"made"
    assert response.content_type == "text/plain"


def test_base64_responses_are_decoded_only_for_a_binary_accept():
    raw = bytes(range(10))
    result = {
        "statusCode": 200,
        "isBase64Encoded": True,
        "body": base64.b64encode(raw).decode(),
        "headers": {"Content-Type": "application/vnd.kafka.record-batch"},
    }
    client, _ = gateway(Admin=Echo(result=result))
    binary = client.get("/v1/topics", headers={"Accept": "application/vnd.kafka.record-batch"})
    assert binary.get_data() == raw
    text = client.get("/v1/topics", headers={"Accept": "application/json"})
    assert text.get_data() == base64.b64encode(raw)
