"""Kafka's error table, checked against kafka-python's independent copy."""

from __future__ import annotations

import kafka.errors

from tidelog.errors import (
    KAFKA_ERRORS,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    RetriableError,
    TidelogError,
)

# Java's CorruptRecordException extends RetriableException (the corruption may have happened on
# the wire); kafka-python marks it not retriable. We follow Kafka.
RETRIABLE_IN_JAVA_ONLY = {"CORRUPT_MESSAGE"}


def kafka_python_errors():
    classes = vars(kafka.errors).values()
    return {
        c.errno: c
        for c in classes
        if isinstance(c, type)
        and issubclass(c, kafka.errors.BrokerResponseError)
        and c is not kafka.errors.BrokerResponseError
    }


def test_codes_and_retriability_match_kafka_python():
    theirs = kafka_python_errors()
    for error in KAFKA_ERRORS.values():
        assert error.code in theirs, error.name
        expected = theirs[error.code].retriable or error.name in RETRIABLE_IN_JAVA_ONLY
        assert error.retriable == expected, error.name


def test_names_are_unique_per_code():
    codes = [e.code for e in KAFKA_ERRORS.values()]
    assert len(codes) == len(set(codes))


def test_error_body_names_the_kafka_error():
    error = InvalidRequestError("bad topic", kafka_error="INVALID_TOPIC_EXCEPTION")
    assert error.to_dict() == {
        "error": "INVALID_TOPIC_EXCEPTION",
        "error_code": 17,
        "message": "bad topic",
        "retriable": False,
    }
    assert error.http_status == 400


def test_each_branch_has_its_status_and_default():
    assert (NotFoundError("x").http_status, NotFoundError("x").kafka_error.name) == (
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    )
    assert ConflictError("x").http_status == 409
    assert RetriableError("x").http_status == 503
    assert RetriableError("x").retriable
    assert TidelogError("x").kafka_error.code == -1
