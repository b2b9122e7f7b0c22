"""The versions raised for Kafka 4.1's and librdkafka's clients, each request written and each
answer read by kafka-python's protocol classes (an implementation independent of kio) against
`tidelog dev`: topics by id (KIP-516), ListOffsets' special timestamps, DescribeTopicPartitions
(KIP-966), and the group APIs' new fields."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.admin import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from kafka.protocol.metadata import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.record.default_records import DefaultRecordBatchBuilder
from tests.functional.test_produce_api import call, kafka_python_batch
from tests.support.kafka_wire import exchange

from tidelog.kafka.apis import API_VERSIONS, ApiKey

UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION, INVALID_REQUEST = 3, 35, 42
GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_ID = 69, 100
FETCH_IDS = range(13, API_VERSIONS[ApiKey.FETCH][1] + 1)


def _topic(dev, partitions: int = 1) -> tuple[str, uuid.UUID]:
    name = f"ver-{uuid.uuid4().hex[:8]}"
    status, body = call(dev, "POST", "/v1/topics", {"name": name, "partitions": partitions})
    assert status == 201
    return name, uuid.UUID(body["topic_id"])


def _produce_by_id(dev, topic_id: uuid.UUID, records: bytes):
    request = ProduceRequest[13](
        transactional_id=None,
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                topic_id=topic_id,
                partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)
                ],
            )
        ],
    )
    (answer,) = exchange(dev.bootstrap, request, ProduceResponse, 13).responses
    return answer


def _fetch_by_id(dev, topic_id: uuid.UUID, version: int):
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, fetch_offset=0, partition_max_bytes=1 << 20
    )
    request = FetchRequest[version](
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[FetchRequest.FetchTopic(topic_id=topic_id, partitions=[partition])],
    )
    (answer,) = exchange(dev.bootstrap, request, FetchResponse, version).responses
    return answer


@pytest.mark.parametrize("version", FETCH_IDS)
def test_a_topic_named_by_id_is_produced_to_and_fetched_from(dev, version):
    _, topic_id = _topic(dev)
    produced = _produce_by_id(dev, topic_id, kafka_python_batch(3))
    assert produced.topic_id == topic_id
    assert [(p.error_code, p.base_offset) for p in produced.partition_responses] == [(0, 0)]
    fetched = _fetch_by_id(dev, topic_id, version)
    assert fetched.topic_id == topic_id
    (partition,) = fetched.partitions
    assert (partition.error_code, partition.high_watermark) == (0, 3)
    assert bytes(partition.records)  # the batch, as stored


def test_an_unknown_topic_id_is_unknown_topic_id_to_produce_fetch_and_metadata(dev):
    nobody = uuid.uuid4()
    produced = _produce_by_id(dev, nobody, kafka_python_batch(1))
    assert (produced.topic_id, produced.partition_responses[0].error_code) == (
        nobody,
        UNKNOWN_TOPIC_ID,
    )
    fetched = _fetch_by_id(dev, nobody, FETCH_IDS[-1])
    assert (fetched.topic_id, fetched.partitions[0].error_code) == (nobody, UNKNOWN_TOPIC_ID)
    wanted = [MetadataRequest.MetadataRequestTopic(topic_id=nobody, name=None)]
    answer = exchange(dev.bootstrap, MetadataRequest[12](topics=wanted), MetadataResponse, 12)
    (topic,) = answer.topics
    assert (topic.error_code, topic.name, topic.topic_id) == (UNKNOWN_TOPIC_ID, None, nobody)


@pytest.mark.parametrize("version", [12, 13])
def test_metadata_looks_a_topic_up_by_id(dev, version):
    name, topic_id = _topic(dev, partitions=2)
    wanted = [MetadataRequest.MetadataRequestTopic(topic_id=topic_id, name=None)]
    answer = exchange(
        dev.bootstrap, MetadataRequest[version](topics=wanted), MetadataResponse, version
    )
    (topic,) = answer.topics
    assert (topic.error_code, topic.name, topic.topic_id) == (0, name, topic_id)
    assert [p.partition_index for p in topic.partitions] == [0, 1]
    if version >= 13:
        assert answer.error_code == 0


def test_metadata_before_v12_refuses_a_topic_without_a_name(dev):
    wanted = [MetadataRequest.MetadataRequestTopic(topic_id=uuid.uuid4(), name=None)]
    answer = exchange(dev.bootstrap, MetadataRequest[11](topics=wanted), MetadataResponse, 11)
    (topic,) = answer.topics
    assert (topic.error_code, topic.name) == (INVALID_REQUEST, "")


def _list_offsets(dev, topic: str, timestamp: int, version: int):
    partition = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
        partition_index=0, timestamp=timestamp
    )
    request = ListOffsetsRequest[version](
        replica_id=-1,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[partition])],
    )
    (topic_answer,) = exchange(dev.bootstrap, request, ListOffsetsResponse, version).topics
    (answer,) = topic_answer.partitions
    return answer


def _batch(timestamps: list[int]) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 10**7)
    for i, at in enumerate(timestamps):
        builder.append(i, at, None, b"v%d" % i, [])
    return bytes(builder.build())


@pytest.mark.parametrize("version", range(7, API_VERSIONS[ApiKey.LIST_OFFSETS][1] + 1))
def test_list_offsets_max_timestamp_is_the_first_record_with_the_newest_time(dev, version):
    name, topic_id = _topic(dev)
    assert (_list_offsets(dev, name, -3, version).offset) == -1  # an empty log
    base = 1_700_000_000_000
    for timestamps in ([base + 5, base + 9, base + 2], [base + 9, base + 1]):
        assert (
            _produce_by_id(dev, topic_id, _batch(timestamps)).partition_responses[0].error_code == 0
        )
    answer = _list_offsets(dev, name, -3, version)
    assert (answer.error_code, answer.offset, answer.timestamp) == (0, 1, base + 9)


@pytest.mark.parametrize("version", range(8, API_VERSIONS[ApiKey.LIST_OFFSETS][1] + 1))
def test_list_offsets_earliest_local_is_the_log_start_and_nothing_is_tiered(dev, version):
    name, topic_id = _topic(dev)
    _produce_by_id(dev, topic_id, _batch([1_700_000_000_000]))
    local = _list_offsets(dev, name, -4, version)
    assert (local.error_code, local.offset, local.timestamp) == (0, 0, -1)
    if version >= 9:
        tiered = _list_offsets(dev, name, -5, version)
        assert (tiered.error_code, tiered.offset, tiered.leader_epoch) == (0, -1, -1)


@pytest.mark.parametrize(("timestamp", "since"), [(-3, 7), (-4, 8), (-5, 9), (-6, 11)])
def test_a_special_timestamp_older_than_its_version_is_unsupported_version(dev, timestamp, since):
    name, _ = _topic(dev)
    version = min(since - 1, API_VERSIONS[ApiKey.LIST_OFFSETS][1])
    assert _list_offsets(dev, name, timestamp, version).error_code == UNSUPPORTED_VERSION


def _describe_partitions(dev, topics: list[str], limit: int, cursor=None):
    request = DescribeTopicPartitionsRequest[0](
        topics=[DescribeTopicPartitionsRequest.TopicRequest(name=t) for t in topics],
        response_partition_limit=limit,
        cursor=cursor,
    )
    return exchange(dev.bootstrap, request, DescribeTopicPartitionsResponse, 0)


def test_describe_topic_partitions_pages_through_topics_by_name(dev):
    first, first_id = _topic(dev, partitions=3)
    second, _ = _topic(dev, partitions=2)
    missing = f"ver-{uuid.uuid4().hex[:8]}"
    names = sorted([first, second, missing])
    seen: list[tuple[str, int]] = []
    errors: dict[str, int] = {}
    cursor = None
    pages = 0
    while True:
        answer = _describe_partitions(dev, names, 2, cursor)
        pages += 1
        for topic in answer.topics:
            if topic.error_code:
                errors[topic.name] = topic.error_code
            seen += [(topic.name, p.partition_index) for p in topic.partitions]
            if topic.name == first:
                assert topic.topic_id == first_id
        if answer.next_cursor is None:
            break
        cursor = DescribeTopicPartitionsRequest.Cursor(
            topic_name=answer.next_cursor.topic_name,
            partition_index=answer.next_cursor.partition_index,
        )
    expected = sorted([(first, p) for p in range(3)] + [(second, p) for p in range(2)])
    assert sorted(seen) == expected
    assert len(seen) == len(set(seen))
    assert errors == {missing: UNKNOWN_TOPIC_OR_PARTITION}
    assert pages >= 3  # two partitions a page


def test_describe_topic_partitions_refuses_a_cursor_outside_the_topics_named(dev):
    name, _ = _topic(dev)
    cursor = DescribeTopicPartitionsRequest.Cursor(topic_name="elsewhere", partition_index=0)
    answer = _describe_partitions(dev, [name], 10, cursor)
    assert [(t.name, t.error_code) for t in answer.topics] == [(name, INVALID_REQUEST)]


def test_find_coordinator_for_a_share_group_is_an_invalid_request(dev):
    request = FindCoordinatorRequest[6](key_type=2, coordinator_keys=["shared"])
    (found,) = exchange(dev.bootstrap, request, FindCoordinatorResponse, 6).coordinators
    assert (found.key, found.error_code, found.node_id) == ("shared", INVALID_REQUEST, -1)
