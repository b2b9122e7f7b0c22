"""How the adapters translate AWS's failures, driven by botocore's Stubber."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError
from botocore.stub import Stubber

from tidelog.errors import InternalError
from tidelog.storage import (
    ConditionFailedError,
    InvalidStorageRequestError,
    ItemAbsent,
    ObjectExistsError,
    ObjectNotFoundError,
    Put,
    StorageUnavailableError,
)
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.s3 import S3ObjectStore


@pytest.fixture
def s3():
    client = boto3.client("s3", region_name="us-east-1")
    with Stubber(client) as stub:
        yield S3ObjectStore(client, "bucket"), stub


@pytest.fixture
def ddb():
    client = boto3.client("dynamodb", region_name="us-east-1")
    with Stubber(client) as stub:
        yield DynamoMetadataStore(client, "table"), stub


def test_s3_precondition_failed_is_object_exists(s3):
    store, stub = s3
    stub.add_client_error("put_object", "PreconditionFailed", http_status_code=412)
    with pytest.raises(ObjectExistsError):
        store.put("k", b"v")


@pytest.mark.parametrize(
    ("code", "status"), [("SlowDown", 503), ("InternalError", 500), ("ServiceUnavailable", 503)]
)
def test_s3_throttling_and_5xx_are_retriable(s3, code, status):
    store, stub = s3
    stub.add_client_error("put_object", code, http_status_code=status)
    with pytest.raises(StorageUnavailableError) as failure:
        store.put("k", b"v")
    assert failure.value.retriable
    assert not failure.value.ambiguous


def test_s3_missing_key_and_unsatisfiable_range(s3):
    store, stub = s3
    stub.add_client_error("get_object", "NoSuchKey", http_status_code=404)
    with pytest.raises(ObjectNotFoundError):
        store.get("k")
    stub.add_client_error("get_object", "InvalidRange", http_status_code=416)
    assert store.get("k", 100) == b""


def test_s3_access_denied_is_not_retriable(s3):
    store, stub = s3
    stub.add_client_error("get_object", "AccessDenied", http_status_code=403)
    with pytest.raises(InternalError, match="AccessDenied"):
        store.get("k")


def test_dynamodb_throttling_is_retriable(ddb):
    store, stub = ddb
    stub.add_client_error(
        "get_item", "ProvisionedThroughputExceededException", http_status_code=400
    )
    with pytest.raises(StorageUnavailableError):
        store.get("p", "s")


def test_dynamodb_validation_is_an_invalid_request(ddb):
    store, stub = ddb
    stub.add_client_error("put_item", "ValidationException", http_status_code=400)
    with pytest.raises(InvalidStorageRequestError):
        store.write(Put({"pk": "p", "sk": "s"}))


def test_a_transaction_cancelled_by_a_conflict_is_retriable_not_a_failed_condition(ddb):
    store, stub = ddb
    stub.add_client_error(
        "transact_write_items",
        "TransactionCanceledException",
        http_status_code=400,
        response_meta={},
        modeled_fields={"CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}]},
    )
    with pytest.raises(StorageUnavailableError, match="TransactionConflict"):
        store.transact([Put({"pk": "p", "sk": "a"}), Put({"pk": "p", "sk": "b"})])


def test_a_cancelled_transaction_names_the_failed_condition(ddb):
    store, stub = ddb
    stub.add_client_error(
        "transact_write_items",
        "TransactionCanceledException",
        http_status_code=400,
        modeled_fields={
            "CancellationReasons": [
                {"Code": "None"},
                {
                    "Code": "ConditionalCheckFailed",
                    "Item": {"pk": {"S": "p"}, "sk": {"S": "b"}, "n": {"N": "7"}},
                },
            ]
        },
    )
    with pytest.raises(ConditionFailedError) as failure:
        store.transact([Put({"pk": "p", "sk": "a"}), Put({"pk": "p", "sk": "b"}, ItemAbsent())])
    assert failure.value.failed == (1,)
    assert failure.value.current == {1: {"pk": "p", "sk": "b", "n": 7}}


class Unreachable:
    """A client whose calls fail in transport, before or after the request was sent."""

    def __init__(self, error):
        self.error = error

    def __getattr__(self, name):
        def call(**kwargs):
            raise self.error

        return call


def test_a_timeout_after_sending_is_ambiguous():
    store = DynamoMetadataStore(Unreachable(ReadTimeoutError(endpoint_url="http://x")), "t")
    with pytest.raises(StorageUnavailableError) as failure:
        store.write(Put({"pk": "p", "sk": "s"}, ItemAbsent()))
    assert failure.value.ambiguous


def test_a_connection_failure_is_not_ambiguous():
    store = S3ObjectStore(Unreachable(EndpointConnectionError(endpoint_url="http://x")), "b")
    with pytest.raises(StorageUnavailableError) as failure:
        store.put("k", b"v")
    assert not failure.value.ambiguous
