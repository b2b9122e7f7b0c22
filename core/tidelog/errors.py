"""tidelog's errors, named and numbered as Kafka's.

Every error a caller can see is a :class:`TidelogError` carrying a Kafka error (its name, its
protocol number, whether Kafka calls it retriable) and the HTTP status the API answers with. The
tree tells the caller what to do::

    TidelogError
    ├── InvalidRequestError     fix the request; retrying it unchanged fails again (4xx)
    ├── NotFoundError           the named topic, partition, group or member does not exist (404)
    ├── ConflictError           the state moved on: re-read, then decide (409, 412)
    ├── RetriableError          transient; the same request may succeed later (503)
    └── InternalError           a defect or an unexpected failure (500)

Adapters translate foreign errors (botocore, decoding) into this tree in one place each, always
``raise ... from exc``; :mod:`tidelog.api` turns the tree into HTTP responses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True, slots=True)
class KafkaError:
    """One entry of Kafka's error table (``org.apache.kafka.common.protocol.Errors``)."""

    name: str
    code: int
    retriable: bool


def _table(*entries: tuple[str, int, bool]) -> MappingProxyType[str, KafkaError]:
    return MappingProxyType({name: KafkaError(name, code, r) for name, code, r in entries})


# The errors tidelog answers with, by Kafka's name. Numbers and retriability are Kafka's;
# tests/unit/test_errors.py checks them against kafka-python's independent table.
KAFKA_ERRORS = _table(
    ("UNKNOWN_SERVER_ERROR", -1, False),
    ("NONE", 0, False),
    ("OFFSET_OUT_OF_RANGE", 1, False),
    ("CORRUPT_MESSAGE", 2, True),
    ("UNKNOWN_TOPIC_OR_PARTITION", 3, True),
    ("INVALID_FETCH_SIZE", 4, False),
    ("REQUEST_TIMED_OUT", 7, True),
    ("MESSAGE_TOO_LARGE", 10, False),
    ("OFFSET_METADATA_TOO_LARGE", 12, False),
    ("COORDINATOR_NOT_AVAILABLE", 15, True),
    ("INVALID_TOPIC_EXCEPTION", 17, False),
    ("RECORD_LIST_TOO_LARGE", 18, False),
    ("ILLEGAL_GENERATION", 22, False),
    ("INCONSISTENT_GROUP_PROTOCOL", 23, False),
    ("INVALID_GROUP_ID", 24, False),
    ("UNKNOWN_MEMBER_ID", 25, False),
    ("INVALID_SESSION_TIMEOUT", 26, False),
    ("REBALANCE_IN_PROGRESS", 27, False),
    ("INVALID_COMMIT_OFFSET_SIZE", 28, False),
    ("TOPIC_AUTHORIZATION_FAILED", 29, False),
    ("GROUP_AUTHORIZATION_FAILED", 30, False),
    ("CLUSTER_AUTHORIZATION_FAILED", 31, False),
    ("INVALID_TIMESTAMP", 32, False),
    ("UNSUPPORTED_SASL_MECHANISM", 33, False),
    ("ILLEGAL_SASL_STATE", 34, False),
    ("UNSUPPORTED_VERSION", 35, False),
    ("TOPIC_ALREADY_EXISTS", 36, False),
    ("INVALID_PARTITIONS", 37, False),
    ("INVALID_REPLICA_ASSIGNMENT", 39, False),
    ("INVALID_CONFIG", 40, False),
    ("INVALID_REQUEST", 42, False),
    ("POLICY_VIOLATION", 44, False),
    ("OUT_OF_ORDER_SEQUENCE_NUMBER", 45, False),
    ("DUPLICATE_SEQUENCE_NUMBER", 46, False),
    ("INVALID_PRODUCER_EPOCH", 47, False),
    ("INVALID_TXN_STATE", 48, False),
    ("INVALID_PRODUCER_ID_MAPPING", 49, False),
    ("INVALID_TRANSACTION_TIMEOUT", 50, False),
    ("CONCURRENT_TRANSACTIONS", 51, True),
    ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 53, False),
    ("SECURITY_DISABLED", 54, False),
    ("OPERATION_NOT_ATTEMPTED", 55, False),
    ("KAFKA_STORAGE_ERROR", 56, True),
    ("LOG_DIR_NOT_FOUND", 57, False),
    ("SASL_AUTHENTICATION_FAILED", 58, False),
    ("UNKNOWN_PRODUCER_ID", 59, False),
    ("NON_EMPTY_GROUP", 68, False),
    ("GROUP_ID_NOT_FOUND", 69, False),
    ("UNSUPPORTED_COMPRESSION_TYPE", 76, False),
    ("MEMBER_ID_REQUIRED", 79, False),
    ("FENCED_INSTANCE_ID", 82, False),
    ("ELECTION_NOT_NEEDED", 84, True),
    ("NO_REASSIGNMENT_IN_PROGRESS", 85, False),
    ("GROUP_SUBSCRIBED_TO_TOPIC", 86, False),
    ("INVALID_RECORD", 87, False),
    ("UNSTABLE_OFFSET_COMMIT", 88, True),
    ("THROTTLING_QUOTA_EXCEEDED", 89, True),
    ("PRODUCER_FENCED", 90, False),
    ("RESOURCE_NOT_FOUND", 91, False),
    ("DUPLICATE_RESOURCE", 92, False),
    ("UNACCEPTABLE_CREDENTIAL", 93, False),
    ("UNKNOWN_TOPIC_ID", 100, True),
    ("TRANSACTIONAL_ID_NOT_FOUND", 105, False),
    ("FENCED_MEMBER_EPOCH", 110, False),
    ("UNRELEASED_INSTANCE_ID", 111, False),
    ("UNSUPPORTED_ASSIGNOR", 112, False),
    ("STALE_MEMBER_EPOCH", 113, False),
    ("MISMATCHED_ENDPOINT_TYPE", 114, False),
    ("UNSUPPORTED_ENDPOINT_TYPE", 115, False),
)


class TidelogError(Exception):
    """Base of every error tidelog raises on purpose."""

    http_status = 500
    default_kafka_error = "UNKNOWN_SERVER_ERROR"
    details: Mapping[str, Any] = MappingProxyType({})
    """The other fields of the API answer a client read this error from (a rebalance's
    generation, an offset's bounds)."""

    def __init__(self, message: str, *, kafka_error: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kafka_error = KAFKA_ERRORS[kafka_error or self.default_kafka_error]

    @property
    def retriable(self) -> bool:
        return self.kafka_error.retriable

    def to_dict(self) -> dict[str, object]:
        return {
            "error": self.kafka_error.name,
            "error_code": self.kafka_error.code,
            "message": self.message,
            "retriable": self.retriable,
        }


class InvalidRequestError(TidelogError):
    """The request is malformed or asks for something illegal; it changed nothing."""

    http_status = 400
    default_kafka_error = "INVALID_REQUEST"


class NotFoundError(TidelogError):
    """The topic, partition, group or member named by the request does not exist."""

    http_status = 404
    default_kafka_error = "UNKNOWN_TOPIC_OR_PARTITION"


class ConflictError(TidelogError):
    """The state the request depends on has moved on; re-read it before trying again."""

    http_status = 409
    default_kafka_error = "INVALID_REQUEST"


class RetriableError(TidelogError):
    """A transient failure; the same request may succeed if sent again."""

    http_status = 503
    default_kafka_error = "KAFKA_STORAGE_ERROR"


class InternalError(TidelogError):
    """A defect or an unexpected failure of a dependency."""

    http_status = 500
    default_kafka_error = "UNKNOWN_SERVER_ERROR"
