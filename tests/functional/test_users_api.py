"""Kafka users over the HTTP API: set, listed, deleted, refused when malformed, and the password
set here logs a Kafka client in through a SASL listener (the way in before any Kafka user
exists)."""

from __future__ import annotations

import uuid

import pytest
from tests.functional.test_produce_api import call
from tests.support.agents import AgentProcess
from tests.support.dynamodb_local import free_port

from kafka import KafkaProducer
from tidelog.client import Admin
from tidelog.credentials import SCRAM_PK


def _name():
    return f"user-{uuid.uuid4().hex[:6]}"


def test_a_password_set_is_listed_by_mechanism_and_deleted_one_mechanism_at_a_time(dev):
    name = _name()
    with Admin(dev.api_url) as admin:
        admin.set_password(name, "pencil")
        user = admin.set_password(name, "pencil", mechanism="SCRAM-SHA-256", iterations=4096)
        assert {(c.mechanism, c.iterations) for c in user.credentials} == {
            ("SCRAM-SHA-512", 8192),
            ("SCRAM-SHA-256", 4096),
        }
        assert name in {u.name for u in admin.list_users()}
        left = admin.delete_user(name, "SCRAM-SHA-256")
        assert [c.mechanism for c in left.credentials] == ["SCRAM-SHA-512"]
        assert admin.delete_user(name).credentials == ()
    status, body = call(dev, "DELETE", f"/v1/users/{name}")
    assert (status, body["error"]) == (404, "RESOURCE_NOT_FOUND")


@pytest.mark.parametrize(
    "body",
    [
        {"password": ""},
        {"password": "p", "iterations": 4095},
        {"password": "p", "iterations": 16385},
        {"password": "p", "mechanism": "PLAIN"},
        {"password": "p", "salt": "mine"},
        {},
    ],
)
def test_bad_requests_are_refused_and_change_nothing(dev, body):
    name = _name()
    status, answer = call(dev, "PUT", f"/v1/users/{name}", body)
    assert (status, answer["error"]) == (400, "INVALID_REQUEST")
    assert name not in {u["name"] for u in call(dev, "GET", "/v1/users")[1]["users"]}


def test_only_derived_keys_are_stored(dev, dev_client):
    name = _name()
    with Admin(dev.api_url) as admin:
        admin.set_password(name, "correct horse")
    tables = dev_client("dynamodb").list_tables()["TableNames"]
    table = next(t for t in tables if "Metadata" in t)
    item = dev_client("dynamodb").get_item(
        TableName=table, Key={"pk": {"S": SCRAM_PK}, "sk": {"S": f"SCRAM-SHA-512#{name}"}}
    )["Item"]
    assert "correct horse" not in str(item)
    assert set(item) == {
        "pk", "sk", "user", "mechanism", "salt", "stored_key", "server_key", "iterations"
    }  # fmt: skip


def test_the_password_logs_a_kafka_client_in_through_a_sasl_listener(dev):
    name, port = _name(), free_port()
    with Admin(dev.api_url) as admin:
        admin.set_password(name, "pencil")
    agent = AgentProcess(dev, "--listeners", f"SASL_PLAINTEXT://:{port}")
    try:
        producer = KafkaProducer(
            bootstrap_servers=f"127.0.0.1:{port}",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username=name,
            sasl_plain_password="pencil",
        )
        topic = f"users-{uuid.uuid4().hex[:6]}"
        assert call(dev, "POST", "/v1/topics", {"name": topic})[0] == 201
        assert producer.send(topic, b"in").get(30).offset == 0
        producer.close()
    finally:
        agent.stop()
