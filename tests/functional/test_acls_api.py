"""Kafka's ACLs over the HTTP API: added, listed and filtered, removed field for field, and bad
ones refused with Kafka's reasons while nothing changes."""

from __future__ import annotations

import uuid
from typing import get_args

import pytest
from tests.functional.test_produce_api import call
from tests.support.functions import function_module

from tidelog.acls import OPERATION_NAMES, RESOURCE_TYPE_NAMES, Operation
from tidelog.client import Admin, KafkaAcl
from tidelog.errors import NotFoundError


def _principal():
    return f"User:acl-{uuid.uuid4().hex[:6]}"


def test_an_acl_is_added_once_listed_by_principal_and_resource_and_removed(dev):
    who = _principal()
    reads = KafkaAcl("topic", "clicks", who, "read")
    writes = KafkaAcl("topic", "clicks-", who, "write", pattern_type="prefixed", host="10.0.0.7")
    with Admin(dev.api_url) as admin:
        assert admin.add_acl(reads) == reads
        admin.add_acl(reads)  # again: still one
        admin.add_acl(writes)
        assert sorted(admin.list_acls(principal=who), key=str) == sorted([reads, writes], key=str)
        listed = admin.list_acls(resource_type="topic", resource_name="clicks-")
        assert writes in listed
        assert reads not in listed
        assert admin.remove_acl(reads) == reads
        assert admin.list_acls(principal=who) == [writes]
        with pytest.raises(NotFoundError) as missing:
            admin.remove_acl(reads)
        assert missing.value.kafka_error.name == "RESOURCE_NOT_FOUND"
        admin.remove_acl(writes)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"resource_type": "cluster", "resource_name": "mine"}, "kafka-cluster"),
        ({"principal": "alice"}, "principal"),
        ({"operation": "eat"}, "operation"),
        ({"resource_type": "any"}, "resource_type"),
        ({"pattern_type": "match"}, "pattern_type"),
        ({"resource_name": ""}, "resource_name"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_a_bad_acl_is_refused_with_its_reason_and_nothing_is_stored(dev, body, reason):
    who = _principal()
    acl = {
        "resource_type": "topic",
        "resource_name": "clicks",
        "principal": who,
        "operation": "read",
        **body,
    }
    status, answer = call(dev, "POST", "/v1/acls", acl)
    assert (status, answer["error"]) == (400, "INVALID_REQUEST")
    assert reason in answer["message"]
    assert call(dev, "GET", f"/v1/acls?principal={who}")[1]["acls"] == []


def test_the_api_takes_the_names_the_cli_offers():
    app = function_module("admin")
    assert get_args(app.OperationName) == OPERATION_NAMES
    assert get_args(app.ResourceName) == RESOURCE_TYPE_NAMES
    assert {name.upper() for name in OPERATION_NAMES} <= set(Operation.__members__)
