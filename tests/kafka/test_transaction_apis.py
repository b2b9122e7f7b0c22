"""The transaction APIs over the wire at every version advertised, each answer decoded by
kafka-python's own protocol classes: the happy path and Kafka's errors (a fenced epoch, an
unknown producer, a timeout above transaction.max.timeout.ms, a partition not added, offsets
pending while require_stable asks)."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.admin import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.consumer import OffsetFetchRequest, OffsetFetchResponse
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from tests.functional.test_produce_api import call
from tests.support.kafka_wire import exchange

from tidelog.errors import RetriableError
from tidelog.kafka.transactions import _code
from tidelog.txn.state import ConcurrentTransactionsError, ProducerFencedError

NONE, UNKNOWN_TOPIC = 0, 3
INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING = 47, 48, 49
INVALID_TRANSACTION_TIMEOUT, OPERATION_NOT_ATTEMPTED, UNSTABLE_OFFSET_COMMIT = 50, 55, 88
PRODUCER_FENCED, TRANSACTIONAL_ID_NOT_FOUND = 90, 105


@pytest.fixture
def topic(dev):
    name = f"txa-{uuid.uuid4().hex[:8]}"
    assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": 2})[0] == 201
    return name


def init(dev, tid, version=4, timeout_ms=60_000, producer=(-1, -1)):
    fields = {"transactional_id": tid, "transaction_timeout_ms": timeout_ms}
    if version >= 3:
        fields |= {"producer_id": producer[0], "producer_epoch": producer[1]}
    return exchange(
        dev.bootstrap, InitProducerIdRequest[version](**fields), InitProducerIdResponse, version
    )


def add_partitions(dev, tid, pid, epoch, topics, version=3):
    Topic = AddPartitionsToTxnRequest[version].AddPartitionsToTxnTopic
    wanted = [Topic(name=t, partitions=ps) for t, ps in topics.items()]
    request = AddPartitionsToTxnRequest[version](
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=wanted,
    )
    answer = exchange(dev.bootstrap, request, AddPartitionsToTxnResponse, version)
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in answer.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def end(dev, tid, pid, epoch, commit, version=3):
    request = EndTxnRequest[version](
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit
    )
    return exchange(dev.bootstrap, request, EndTxnResponse, version).error_code


@pytest.mark.parametrize("version", range(5))
def test_init_producer_id_with_a_transactional_id(dev, version):
    tid = f"t-{uuid.uuid4().hex[:8]}"
    first = init(dev, tid, version)
    again = init(dev, tid, version)
    assert (first.error_code, again.error_code) == (NONE, NONE)
    assert (again.producer_id, again.producer_epoch) == (first.producer_id, 1)
    too_long = init(dev, tid, version, timeout_ms=15 * 60 * 1000 + 1)
    assert too_long.error_code == INVALID_TRANSACTION_TIMEOUT


def test_kip_360_a_producer_resumes_with_its_id_and_epoch(dev):
    tid = f"t-{uuid.uuid4().hex[:8]}"
    first = init(dev, tid)
    resumed = init(dev, tid, producer=(first.producer_id, first.producer_epoch))
    assert (resumed.error_code, resumed.producer_epoch) == (NONE, 1)
    stale = init(dev, tid, producer=(first.producer_id, 7))
    assert stale.error_code == PRODUCER_FENCED


@pytest.mark.parametrize("version", range(4))
def test_a_transaction_begins_commits_and_refuses_what_kafka_refuses(dev, topic, version):
    tid = f"t-{uuid.uuid4().hex[:8]}"
    ids = init(dev, tid)
    pid, epoch = ids.producer_id, ids.producer_epoch
    assert add_partitions(dev, tid, pid, epoch, {topic: [0, 1]}, version) == {
        (topic, 0): NONE,
        (topic, 1): NONE,
    }
    unknown = add_partitions(dev, tid, pid, epoch, {topic: [0], "no-such-topic-x": [0]}, version)
    assert unknown == {(topic, 0): OPERATION_NOT_ATTEMPTED, ("no-such-topic-x", 0): UNKNOWN_TOPIC}
    fenced = add_partitions(dev, tid, pid, epoch - 1 if epoch else 5, {topic: [0]}, version)
    assert fenced == {(topic, 0): PRODUCER_FENCED}
    assert add_partitions(dev, tid, pid + 1, epoch, {topic: [0]}, version) == {
        (topic, 0): INVALID_PRODUCER_ID_MAPPING
    }
    request = AddOffsetsToTxnRequest[version](
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id="g-" + tid
    )
    assert exchange(dev.bootstrap, request, AddOffsetsToTxnResponse, version).error_code == NONE
    assert end(dev, tid, pid, epoch, True, version) == NONE
    assert end(dev, tid, pid, epoch, True, version) == NONE  # a retry of what happened
    assert end(dev, tid, pid, epoch, False, version) == INVALID_TXN_STATE


@pytest.mark.parametrize("version", range(4))
def test_offsets_in_a_transaction_are_unstable_until_it_ends(dev, topic, version):
    tid, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    ids = init(dev, tid)
    pid, epoch = ids.producer_id, ids.producer_epoch
    add_partitions(dev, tid, pid, epoch, {topic: [0]})
    exchange(
        dev.bootstrap,
        AddOffsetsToTxnRequest[3](
            transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group
        ),
        AddOffsetsToTxnResponse,
        3,
    )
    Commit = TxnOffsetCommitRequest[version]
    Partition = Commit.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition
    partition = {"partition_index": 0, "committed_offset": 12, "committed_metadata": "m"}
    if version >= 2:
        partition["committed_leader_epoch"] = -1
    fields = {
        "transactional_id": tid,
        "group_id": group,
        "producer_id": pid,
        "producer_epoch": epoch,
        "topics": [
            Commit.TxnOffsetCommitRequestTopic(name=topic, partitions=[Partition(**partition)])
        ],
    }
    if version >= 3:
        fields |= {"generation_id": -1, "member_id": "", "group_instance_id": None}
    answer = exchange(dev.bootstrap, Commit(**fields), TxnOffsetCommitResponse, version)
    assert [p.error_code for t in answer.topics for p in t.partitions] == [NONE]
    assert fetched(dev, group, topic, require_stable=True) == (UNSTABLE_OFFSET_COMMIT, -1)
    assert fetched(dev, group, topic, require_stable=False) == (NONE, -1)
    assert end(dev, tid, pid, epoch, True) == NONE
    assert fetched(dev, group, topic, require_stable=True) == (NONE, 12)


def fetched(dev, group, topic, *, require_stable):
    Fetch = OffsetFetchRequest[7]
    request = Fetch(
        group_id=group,
        topics=[Fetch.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
        require_stable=require_stable,
    )
    answer = exchange(dev.bootstrap, request, OffsetFetchResponse, 7)
    (partition,) = answer.topics[0].partitions
    return partition.error_code, partition.committed_offset


@pytest.mark.parametrize("version", range(2))
def test_transactions_are_listed_and_described(dev, topic, version):
    tid = f"t-{uuid.uuid4().hex[:8]}"
    ids = init(dev, tid)
    add_partitions(dev, tid, ids.producer_id, ids.producer_epoch, {topic: [1]})
    listing = ListTransactionsRequest[version](
        state_filters=["Ongoing", "Nonsense"], producer_id_filters=[ids.producer_id]
    )
    listed = exchange(dev.bootstrap, listing, ListTransactionsResponse, version)
    assert list(listed.unknown_state_filters) == ["Nonsense"]
    assert [(t.transactional_id, t.transaction_state) for t in listed.transaction_states] == [
        (tid, "Ongoing")
    ]
    request = DescribeTransactionsRequest[0](transactional_ids=[tid, "never-seen-" + tid])
    described = exchange(dev.bootstrap, request, DescribeTransactionsResponse, 0)
    found, missing = described.transaction_states
    assert (found.error_code, found.transaction_state, found.producer_id) == (
        NONE,
        "Ongoing",
        ids.producer_id,
    )
    assert [(t.topic, list(t.partitions)) for t in found.topics] == [(topic, [1])]
    assert missing.error_code == TRANSACTIONAL_ID_NOT_FOUND


def test_a_store_failing_is_a_coordinator_not_available_which_clients_retry():
    assert _code(RetriableError("the decision's write timed out")) == 15
    assert _code(ConcurrentTransactionsError("markers in flight")) == 51
    assert _code(ProducerFencedError("old epoch")) == PRODUCER_FENCED
