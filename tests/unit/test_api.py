"""The shared resolver: one error shape, Kafka's names, validation as INVALID_REQUEST."""

from __future__ import annotations

import json

import pytest

from tidelog import api
from tidelog.errors import InternalError, InvalidRequestError, NotFoundError, RetriableError


def event(path, method="GET", query=None):
    return {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": {},
        "multiValueHeaders": {},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: [v] for k, v in (query or {}).items()} or None,
        "pathParameters": None,
        "requestContext": {"stage": "live", "requestId": "r"},
        "body": None,
        "isBase64Encoded": False,
    }


app = api.resolver()


@app.get("/invalid")
def invalid() -> dict:
    raise InvalidRequestError("name too long", kafka_error="INVALID_TOPIC_EXCEPTION")


@app.get("/missing")
def missing() -> dict:
    raise NotFoundError("no topic t")


@app.get("/busy")
def busy() -> dict:
    raise RetriableError("throttled")


@app.get("/broken")
def broken() -> dict:
    raise InternalError("bug")


@app.get("/typed")
def typed(count: int) -> dict:
    return {"count": count}


@pytest.mark.parametrize(
    ("path", "status", "name", "code", "retriable"),
    [
        ("/invalid", 400, "INVALID_TOPIC_EXCEPTION", 17, False),
        ("/missing", 404, "UNKNOWN_TOPIC_OR_PARTITION", 3, True),
        ("/busy", 503, "KAFKA_STORAGE_ERROR", 56, True),
        ("/broken", 500, "UNKNOWN_SERVER_ERROR", -1, False),
    ],
)
def test_errors_become_kafka_named_responses(path, status, name, code, retriable):
    response = app.resolve(event(path), None)
    assert response["statusCode"] == status
    body = json.loads(response["body"])
    assert (body["error"], body["error_code"], body["retriable"]) == (name, code, retriable)
    assert body["message"]


def test_validation_failures_are_invalid_request():
    response = app.resolve(event("/typed", query={"count": "many"}), None)
    assert response["statusCode"] == 400
    body = json.loads(response["body"])
    assert body["error"] == "INVALID_REQUEST"
    assert "count" in body["message"]
    ok = app.resolve(event("/typed", query={"count": "3"}), None)
    assert json.loads(ok["body"]) == {"count": 3}


def test_a_request_bodys_repr_names_its_fields_and_holds_no_data():
    """Powertools formats every route's arguments into a debug message at any log level: a
    body's repr must not walk its records, nor carry what users sent."""

    class Item(api.RequestModel):
        value: str

    class Body(api.RequestModel):
        items: list[Item]
        note: str = ""

    body = Body(items=[Item(value=f"secret {i}") for i in range(10_000)], note="private")
    assert repr(body) == "Body(items, note)"
    assert str(body) == f"{body}" == "Body(items, note)"
