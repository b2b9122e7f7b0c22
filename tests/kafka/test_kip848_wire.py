"""ConsumerGroupHeartbeat and ConsumerGroupDescribe on the wire, against bytes written here by
hand from Kafka's own message schemas (ConsumerGroupHeartbeatRequest.json and its kin, quoted
field by field): kafka-python, the byte oracle of tests/kafka/test_codec.py, has no classes for
KIP-848's APIs. librdkafka speaks them to the agent in tests/kafka/test_consumer_protocol.py.

Both APIs are flexible from v0: compact strings and arrays (length + 1 as an unsigned varint,
0 for null), a byte before a nullable struct (-1 null, 1 present), and an empty tagged-field
section after every struct.
"""

from __future__ import annotations

import struct
import uuid

import pytest

from tidelog.kafka.apis import ApiKey
from tidelog.kafka.codec import decode_request, encode_response_as

TOPIC = uuid.UUID("6f1e6c4e-5d2b-4c1a-9e0f-2a3b4c5d6e7f")
NO_TAGS = b"\x00"


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def string(text: str | None) -> bytes:
    if text is None:
        return uvarint(0)
    data = text.encode()
    return uvarint(len(data) + 1) + data


def array(entries: list[bytes] | None) -> bytes:
    if entries is None:
        return uvarint(0)
    return uvarint(len(entries) + 1) + b"".join(entries)


def i8(n: int) -> bytes:
    return struct.pack(">b", n)


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def request_header(key: int, version: int, correlation: int) -> bytes:
    # RequestHeader v2: api key, version, correlation id, client id (a nullable *non-compact*
    # string, KIP-482), tagged fields.
    client = b"app"
    return i16(key) + i16(version) + i32(correlation) + i16(len(client)) + client + NO_TAGS


def response_body(frame: bytes, correlation: int) -> bytes:
    # The size prefix, then ResponseHeader v1: correlation id and tagged fields.
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    assert frame[4:8] == i32(correlation)
    assert frame[8:9] == NO_TAGS
    return frame[9:]


@pytest.mark.parametrize("version", [0, 1])
def test_a_heartbeat_request_reads_as_kafkas_schema_writes_it(version):
    body = (
        string("orders")  # GroupId
        + string("m-1")  # MemberId
        + i32(7)  # MemberEpoch
        + string(None)  # InstanceId (nullable)
        + string("use1-az1")  # RackId (nullable)
        + i32(45_000)  # RebalanceTimeoutMs
        + array([string("clicks"), string("views")])  # SubscribedTopicNames (nullable)
        + (string("^cl.*") if version >= 1 else b"")  # SubscribedTopicRegex (v1+)
        + string("uniform")  # ServerAssignor (nullable)
        + array([TOPIC.bytes + array([i32(0), i32(3)]) + NO_TAGS])  # TopicPartitions
        + NO_TAGS
    )
    request = decode_request(request_header(68, version, 5) + body)
    assert (request.api_key, request.api_version, request.correlation_id) == (
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        version,
        5,
    )
    read = request.body
    assert (read.group_id, read.member_id, read.member_epoch) == ("orders", "m-1", 7)
    assert (read.instance_id, read.rack_id) == (None, "use1-az1")
    assert read.rebalance_timeout.total_seconds() == 45
    assert list(read.subscribed_topic_names) == ["clicks", "views"]
    assert getattr(read, "subscribed_topic_regex", None) == ("^cl.*" if version else None)
    assert read.server_assignor == "uniform"
    (owned_topic,) = read.topic_partitions
    assert (owned_topic.topic_id, list(owned_topic.partitions)) == (TOPIC, [0, 3])


@pytest.mark.parametrize("version", [0, 1])
def test_a_heartbeat_answer_is_written_as_kafkas_schema_reads_it(version):
    answer = {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "member_id": "m-1",
        "member_epoch": 8,
        "heartbeat_interval": 5_000,
        "assignment": {"topic_partitions": [{"topic_id": TOPIC, "partitions": [1, 2]}]},
    }
    expected = (
        i32(0)  # ThrottleTimeMs
        + i16(0)  # ErrorCode
        + string(None)  # ErrorMessage
        + string("m-1")  # MemberId
        + i32(8)  # MemberEpoch
        + i32(5_000)  # HeartbeatIntervalMs
        + i8(1)  # Assignment: present
        + array([TOPIC.bytes + array([i32(1), i32(2)]) + NO_TAGS])  # its TopicPartitions
        + NO_TAGS  # Assignment's tags
        + NO_TAGS
    )
    frame = encode_response_as(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, 9, answer)
    assert response_body(frame, 9) == expected
    unchanged = encode_response_as(
        ApiKey.CONSUMER_GROUP_HEARTBEAT, version, 9, {**answer, "assignment": None}
    )
    assert response_body(unchanged, 9).endswith(i32(5_000) + i8(-1) + NO_TAGS)  # null


@pytest.mark.parametrize("version", [0, 1])
def test_a_describe_is_read_and_answered_as_kafkas_schema_has_it(version):
    request = decode_request(
        request_header(69, version, 3) + array([string("orders")]) + b"\x01" + NO_TAGS
    )
    assert list(request.body.group_ids) == ["orders"]
    assert request.body.include_authorized_operations is True
    assigned = {"topic_partitions": [{"topic_id": TOPIC, "topic_name": "t", "partitions": [0]}]}
    answer = {
        "throttle_time": 0,
        "groups": [
            {
                "error_code": 0,
                "error_message": None,
                "group_id": "orders",
                "group_state": "Stable",
                "group_epoch": 4,
                "assignment_epoch": 4,
                "assignor_name": "uniform",
                "members": [
                    {
                        "member_id": "m-1",
                        "instance_id": None,
                        "rack_id": None,
                        "member_epoch": 4,
                        "client_id": "app",
                        "client_host": "/10.0.0.9",
                        "subscribed_topic_names": ["t"],
                        "subscribed_topic_regex": None,
                        "assignment": assigned,
                        "target_assignment": assigned,
                        "member_type": 1,
                    }
                ],
                "authorized_operations": -(2**31),
            }
        ],
    }
    topic_partitions = array([TOPIC.bytes + string("t") + array([i32(0)]) + NO_TAGS])
    assignment = topic_partitions + NO_TAGS  # a non-nullable struct: no marker byte
    member = (
        string("m-1")
        + string(None)  # InstanceId
        + string(None)  # RackId
        + i32(4)  # MemberEpoch
        + string("app")
        + string("/10.0.0.9")
        + array([string("t")])  # SubscribedTopicNames
        + string(None)  # SubscribedTopicRegex
        + assignment  # Assignment
        + assignment  # TargetAssignment
        + (i8(1) if version >= 1 else b"")  # MemberType (v1+)
        + NO_TAGS
    )
    group = (
        i16(0)
        + string(None)
        + string("orders")
        + string("Stable")
        + i32(4)  # GroupEpoch
        + i32(4)  # AssignmentEpoch
        + string("uniform")
        + array([member])
        + i32(-(2**31))  # AuthorizedOperations
        + NO_TAGS
    )
    frame = encode_response_as(ApiKey.CONSUMER_GROUP_DESCRIBE, version, 3, answer)
    assert response_body(frame, 3) == i32(0) + array([group]) + NO_TAGS
