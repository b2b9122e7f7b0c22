"""Kafka's wire format as the agent reads and writes it (tidelog.kafka.codec over kio), checked
against kafka-python's protocol classes: an independent implementation of the same schemas.

- Every request and response of every advertised API and version round-trips between the two:
  kio's bytes, decoded by kafka-python and encoded again, are the same bytes.
- A version-free answer encodes at every version a client may ask for.
- Frames that are not what they claim to be are refused, never half-read.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.old import produce as old_produce
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.static.primitive import Records

from tidelog.kafka.apis import API_VERSIONS, LEGACY_PRODUCE, ApiKey
from tidelog.kafka.codec import (
    MAX_FRAME_BYTES,
    SPLICE_FROM,
    FrameError,
    KeyedPartitions,
    UnsupportedVersionError,
    decode_request,
    encode_response_as,
    frame_size,
)
from tidelog.kafka.handlers import Handlers, api_versions_answer
from tidelog.kafka.node import Node
from tidelog.kafka.registry import Solo

st.register_type_strategy(Records, st.binary(max_size=64))


def _kafka_python_classes() -> dict[tuple[int, bool], type[ApiMessage]]:
    found: dict[tuple[int, bool], type[ApiMessage]] = {}
    pending = list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", 0) is None:
            found[(cls.API_KEY, cls.is_request())] = cls
    return found


KAFKA_PYTHON = _kafka_python_classes()
# kafka-python has no classes for KIP-848's APIs: tests/kafka/test_kip848_wire.py holds them to
# bytes written from Kafka's schemas, and librdkafka speaks them in test_consumer_protocol.py.
WITHOUT_ORACLE = {ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE}
CASES = [
    pytest.param(key, version, is_request, id=f"{key.name}-v{version}-{kind}")
    for key, (low, high) in API_VERSIONS.items()
    if key not in WITHOUT_ORACLE
    for version in range(low, high + 1)
    if not (key == ApiKey.PRODUCE and version in LEGACY_PRODUCE)  # below: kio has no schema
    for is_request, kind in ((True, "request"), (False, "response"))
]


@pytest.mark.parametrize(("key", "version", "is_request"), CASES)
def test_kio_and_kafka_python_agree_on_every_byte(key, version, is_request):
    schema = (load_request_schema if is_request else load_response_schema)(key, version)
    oracle = KAFKA_PYTHON[(int(key), is_request)][version]
    entities = st.from_type(schema)
    if key == ApiKey.API_VERSIONS and not is_request:
        # Kafka's clients read an ApiVersions error at v0 whatever was asked (KIP-511): the
        # agent answers its errors at v0 (test_an_unknown_api_versions_version_...).
        entities = entities.map(lambda e: dataclasses.replace(e, error_code=ErrorCode.none))

    @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
    @given(entities)
    def round_trip(entity):
        out = io.BytesIO()
        entity_writer(schema)(out, entity)
        ours = out.getvalue()
        theirs = oracle.decode(ours, version=version)
        theirs._header = None  # a decoded body has none; encode looks for one
        assert bytes(theirs.encode(version=version)) == ours

    round_trip()


def test_every_advertised_api_has_a_handler_and_no_other_is_served():
    assert Handlers(Solo(Node(1, "h", 9092))).apis == set(API_VERSIONS)


def _metadata_answer() -> dict:
    topic_id = uuid.UUID("5f2b1c1e-0d6b-4f38-9a3e-2d7e0c7a9b11")
    return {
        "throttle_time": 0,
        "error_code": 0,
        "brokers": [{"node_id": 7, "host": "agent.local", "port": 9092, "rack": "use1-az1"}],
        "cluster_id": "tidelog-cluster-id-0001",
        "controller_id": 7,
        "topics": [
            {
                "error_code": 0,
                "name": "clicks",
                "topic_id": topic_id,
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": p,
                        "leader_id": 7,
                        "leader_epoch": 0,
                        "replica_nodes": [7],
                        "isr_nodes": [7],
                        "offline_replicas": [],
                    }
                    for p in range(3)
                ],
            }
        ],
        "cluster_authorized_operations": -(2**31),
    }


@pytest.mark.parametrize("version", range(API_VERSIONS[ApiKey.METADATA][1] + 1))
def test_one_answer_encodes_at_every_version_a_client_may_ask_for(version):
    frame = encode_response_as(ApiKey.METADATA, version, 41, _metadata_answer())
    assert frame_size(frame[:4]) == len(frame) - 4
    decoded = MetadataResponse.decode(frame[4:], version=version, header=True)
    assert decoded._header.correlation_id == 41
    (broker,) = decoded.brokers
    assert (broker.node_id, broker.host, broker.port) == (7, "agent.local", 9092)
    (topic,) = decoded.topics
    assert topic.name == "clicks"
    assert [(p.partition_index, p.leader_id) for p in topic.partitions] == [(0, 7), (1, 7), (2, 7)]
    if version >= 2:
        assert decoded.cluster_id == "tidelog-cluster-id-0001"


def _request(message: ApiMessage, correlation_id: int = 5) -> bytes:
    message.with_header(correlation_id=correlation_id, client_id="tests")
    return bytes(message.encode(header=True, framed=False))


def test_a_request_reads_as_its_version_with_its_header():
    frame = _request(
        MetadataRequest[9](
            topics=[MetadataRequest.MetadataRequestTopic(name="clicks")],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
        correlation_id=77,
    )
    request = decode_request(frame)
    assert (request.api_key, request.api_version, request.correlation_id) == (
        ApiKey.METADATA,
        9,
        77,
    )
    assert request.client_id == "tests"
    assert [t.name for t in request.body.topics] == ["clicks"]
    assert request.body.allow_auto_topic_creation is False


def test_an_unadvertised_version_is_refused_with_what_is_needed_to_answer():
    newer = API_VERSIONS[ApiKey.API_VERSIONS][1] + 1  # a client from the future: unknown body
    frame = struct.pack(">hhih", ApiKey.API_VERSIONS, newer, 5, -1) + b"\x00\x01\x02"
    with pytest.raises(UnsupportedVersionError) as refused:
        decode_request(frame)
    assert (refused.value.api_key, refused.value.api_version) == (ApiKey.API_VERSIONS, newer)
    assert refused.value.correlation_id == 5


def test_an_unknown_api_versions_version_is_answered_at_v0_as_clients_read_it():
    answer = api_versions_answer(35)
    frame = encode_response_as(ApiKey.API_VERSIONS, 0, 9, answer)
    decoded = ApiVersionsResponse.decode(frame[4:], version=3, header=True)
    assert decoded.error_code == 35
    advertised = {k.api_key: (k.min_version, k.max_version) for k in decoded.api_keys}
    assert advertised == {int(k): v for k, v in API_VERSIONS.items()}


@pytest.mark.parametrize("version", LEGACY_PRODUCE)
def test_an_old_produce_is_read_and_each_partition_answered_unsupported_version(version):
    """Produce v0-2, advertised for librdkafka's sake (KAFKA-18659), written and read back by
    kafka-python's classes of those versions."""
    request = getattr(old_produce, f"ProduceRequest_v{version}")(
        required_acks=-1,
        timeout=1000,
        topics=[("clicks", [(0, b"old-format"), (2, b"")]), ("views", [(1, b"x")])],
    )
    decoded = decode_request(_request(request, correlation_id=77))
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id) == (0, version, 77)
    assert decoded.client_id == "tests"
    assert decoded.body.transactional_id is None
    assert int(decoded.body.acks) == -1
    assert [
        (t.name, [(int(p.index), p.records) for p in t.partition_data])
        for t in decoded.body.topic_data
    ] == [
        ("clicks", [(0, b"old-format"), (2, b"")]),
        ("views", [(1, b"x")]),
    ]
    answer = Handlers(Solo(Node(1, "h", 9092))).produce(decoded)
    frame = encode_response_as(ApiKey.PRODUCE, version, 77, answer)
    assert frame_size(frame[:4]) == len(frame) - 4
    theirs = getattr(old_produce, f"ProduceResponse_v{version}").decode(frame[8:])
    assert int.from_bytes(frame[4:8], "big") == 77
    unsupported = 35
    assert [(t[0], [tuple(p[:3]) for p in t[1]]) for t in theirs.topics] == [
        ("clicks", [(0, unsupported, -1), (2, unsupported, -1)]),
        ("views", [(1, unsupported, -1)]),
    ]
    if version >= 1:
        assert theirs.throttle_time_ms == 0


def test_produce_is_advertised_from_v0_so_old_librdkafka_compresses():
    """librdkafka before 2.11.1 compresses only if ApiVersions lists Produce v0 (issue 4956)."""
    assert API_VERSIONS[ApiKey.PRODUCE][0] == 0


def test_an_api_we_do_not_serve_is_unsupported():
    frame = (32).to_bytes(2, "big") + (0).to_bytes(2, "big") + (3).to_bytes(4, "big") + b"\0\0"
    with pytest.raises(UnsupportedVersionError):
        decode_request(frame)


@pytest.mark.parametrize("cut", [8, 12, -1])
def test_a_truncated_request_is_a_frame_error(cut):
    frame = _request(MetadataRequest[1](topics=[MetadataRequest.MetadataRequestTopic(name="t")]))
    with pytest.raises(FrameError):
        decode_request(frame[:cut])


def test_bytes_after_a_request_are_ignored_as_kafka_ignores_them():
    # librdkafka's Metadata for all topics at v9+ writes a 4-byte placeholder where the compact
    # array's count goes, and leaves it: Kafka reads the request and ignores the rest.
    header = bytes.fromhex("0003000b00000009") + b"\x00\x07rdkafka\x00"
    request = decode_request(header + bytes.fromhex("00000000010000"))
    assert request.body.topics is None
    assert request.client_id == "rdkafka"


@pytest.mark.parametrize("size", [-1, 0, 7, MAX_FRAME_BYTES + 1])
def test_a_frame_size_out_of_bounds_closes_the_connection(size):
    with pytest.raises(FrameError):
        frame_size(size.to_bytes(4, "big", signed=True))


@pytest.mark.parametrize(
    "version", range(API_VERSIONS[ApiKey.FETCH][0], API_VERSIONS[ApiKey.FETCH][1] + 1)
)
def test_an_errored_fetch_partition_reads_as_empty_records_in_every_client(version):
    # Kafka's log read answers an error with empty records; null made librdkafka 2.0 throw the
    # whole response away (a consumer out of range never reset). Read here by kafka-python's
    # and aiokafka's parsers (librdkafka's: tests/kafka/test_kcat.py, test_clients.py).
    from aiokafka.protocol import fetch as aiokafka_fetch
    from kafka.protocol.consumer import FetchResponse

    from tidelog.kafka.fetch import fetch_error as _fetch_error
    from tidelog.log.head import OffsetOutOfRangeError

    error = OffsetOutOfRangeError(1000, log_start_offset=0, high_watermark=5)
    answer = {
        "throttle_time": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {"topic": "clicks", "topic_id": uuid.uuid4(), "partitions": [_fetch_error(3, error)]}
        ],
    }
    frame = encode_response_as(ApiKey.FETCH, version, 8, answer)
    (partition,) = (
        FetchResponse.decode(frame[4:], version=version, header=True).responses[0].partitions
    )
    assert (partition.error_code, partition.high_watermark, partition.records) == (1, 5, b"")
    aiokafka_class = getattr(aiokafka_fetch, f"FetchResponse_v{version}", None)
    if aiokafka_class is not None:  # aiokafka's classes stop at v11
        body = aiokafka_class.decode(io.BytesIO(frame[8:]))
        (topic,) = body.topics
        (read,) = topic[1]
        assert read[0:2] == (3, 1)
        assert read[-1] == b""


def _topic_answer(topic_id: str, partitions: int, leaders: tuple[int, ...], keyed: bool):
    entries = [
        {
            "error_code": 0,
            "partition_index": p,
            "leader_id": leaders[p % len(leaders)],
            "leader_epoch": 0,
            "replica_nodes": [leaders[p % len(leaders)]],
            "isr_nodes": [leaders[p % len(leaders)]],
            "offline_replicas": [],
        }
        for p in range(partitions)
    ]
    return {
        "error_code": 0,
        "name": f"t-{topic_id[:4]}",
        "topic_id": uuid.UUID(topic_id),
        "is_internal": False,
        "topic_authorized_operations": 8,
        "partitions": KeyedPartitions(
            (topic_id, partitions, leaders), len(entries), entries.__getitem__
        )
        if keyed
        else entries,
    }


@settings(max_examples=60, deadline=None)
@given(
    api=st.sampled_from([ApiKey.METADATA, ApiKey.DESCRIBE_TOPIC_PARTITIONS]),
    data=st.data(),
    sizes=st.lists(st.sampled_from([0, 3, SPLICE_FROM, 150]), min_size=1, max_size=4),
    leaders=st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple),
)
def test_a_big_topic_s_entry_encoded_once_is_the_same_bytes_each_time(api, data, sizes, leaders):
    """Big keyed topic entries are encoded once and spliced into later answers: every such
    answer, first or cached, is byte for byte what encoding it whole gives."""
    low, high = API_VERSIONS[api]
    version = data.draw(st.integers(low, high))
    ids = [str(uuid.UUID(int=data.draw(st.integers(0, 3)) + 1)) for _ in sizes]
    keyed = [_topic_answer(i, n, leaders, keyed=True) for i, n in zip(ids, sizes, strict=True)]
    plain = [_topic_answer(i, n, leaders, keyed=False) for i, n in zip(ids, sizes, strict=True)]
    answer = {
        "throttle_time": 0,
        "error_code": 0,
        "brokers": [{"node_id": 0, "host": "h", "port": 9092, "rack": None}],
        "cluster_id": "c",
        "controller_id": 0,
        "cluster_authorized_operations": -(2**31),
        "next_cursor": None,
    }
    expected = encode_response_as(api, version, 7, {**answer, "topics": plain})
    for _ in range(2):  # the first encodes and keeps, the second splices what was kept
        assert encode_response_as(api, version, 7, {**answer, "topics": keyed}) == expected


def test_keyed_partitions_read_as_the_sequence_they_stand_for():
    made = []

    def entry(i):
        made.append(i)
        return {"partition_index": i}

    partitions = KeyedPartitions("k", 3, entry)
    assert made == []  # nothing is made until read
    assert len(partitions) == 3
    assert list(partitions) == [{"partition_index": i} for i in range(3)]
    assert partitions[-1] == {"partition_index": 2}
    assert partitions[1:] == [{"partition_index": 1}, {"partition_index": 2}]
    assert partitions == KeyedPartitions("other key", 3, entry)  # by what they hold
    assert partitions != [{"partition_index": 0}]
    with pytest.raises(IndexError):
        partitions[3]
