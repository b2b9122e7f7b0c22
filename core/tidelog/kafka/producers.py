"""Producers as partitions see them: DescribeProducers (KIP-664) shows the state each
partition keeps of them (tidelog.log.write.producers), as Kafka's
ProducerStateManager shows its own."""

from __future__ import annotations

from tidelog import runtime
from tidelog.errors import TidelogError
from tidelog.kafka.codec import NONE, Answer, Request, items
from tidelog.log import keys
from tidelog.log.head import read_head
from tidelog.log.topics import Topic
from tidelog.log.write.producers import ProducerState


def describe_producers(request: Request) -> Answer:
    topics = []
    for wanted in items(request.body.topics):
        name = str(wanted.name)
        partitions = []
        for index in items(wanted.partition_indexes):
            answer: Answer = {"partition_index": int(index), "error_code": NONE}
            try:
                topic = runtime.topic_cache().get(name, int(index))
                topic.check_partition(int(index))
                states = producer_states(topic, int(index))
                open_txns = read_head(
                    runtime.metadata_store(), topic.topic_id, int(index)
                ).open_txns
                answer.update(
                    error_message=None,
                    active_producers=[_state(s, open_txns.get(s.producer_id, -1)) for s in states],
                )
            except TidelogError as exc:
                answer.update(
                    error_code=exc.kafka_error.code, error_message=exc.message, active_producers=[]
                )
            partitions.append(answer)
        topics.append({"name": name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}


def producer_states(topic: Topic, partition: int) -> list[ProducerState]:
    pk = keys.log_pk(topic.topic_id, partition)
    return [
        ProducerState.from_attributes(int(str(item["sk"])[len(keys.PRODUCER_PREFIX) :]), dict(item))
        for item in runtime.metadata_store().query(pk, prefix=keys.PRODUCER_PREFIX)
    ]


def _state(state: ProducerState, txn_start_offset: int) -> Answer:
    last = state.batches[-1] if state.batches else None
    return {
        "producer_id": state.producer_id,
        "producer_epoch": state.epoch,
        "last_sequence": state.last_sequence,
        "last_timestamp": -1 if last is None else last.max_timestamp,
        "coordinator_epoch": -1,
        "current_txn_start_offset": txn_start_offset,
    }
