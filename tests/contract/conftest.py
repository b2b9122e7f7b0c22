"""Every adapter of a port runs the same contract: the in-memory fake, moto behind the lock, and
AWS's DynamoDB Local when it is installed. A fake that drifts from the real thing fails here."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from tests.support.resources import new_bucket, new_table

from tidelog.local.stack import aws_client
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore
from tidelog.storage.s3 import S3ObjectStore
from tidelog.storage.shared import SharedGetsStore

_ticks = itertools.count(1_700_000_000_000)


@pytest.fixture(params=["memory", "shared", "moto", "dynamodb-local"])
def meta(request: pytest.FixtureRequest, template: Any) -> Any:
    if request.param == "memory":
        return MemoryMetadataStore()
    if request.param == "shared":  # as the runtime wraps every store
        return SharedGetsStore(MemoryMetadataStore())
    if request.param == "moto":
        client = request.getfixturevalue("dev_client")("dynamodb")
    else:
        server = request.getfixturevalue("dynamodb_local")
        client = aws_client("dynamodb", server.url, "us-east-1")
    return DynamoMetadataStore(client, new_table(client, template))


@pytest.fixture(params=["memory", "moto"])
def objects(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        return MemoryObjectStore(clock_ms=lambda: next(_ticks))
    client = request.getfixturevalue("dev_client")("s3")
    return S3ObjectStore(client, new_bucket(client))
