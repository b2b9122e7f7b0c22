"""Kafka's admin APIs over tidelog's topics: CreateTopics, DeleteTopics, CreatePartitions and
DeleteRecords. Answers are version-free (see tidelog.kafka.codec).

Kafka's tools send what a replicated broker needs: a replication factor, replica assignments,
configs such as ``min.insync.replicas``. tidelog's copies are S3's, so it accepts them and ignores
them rather than refusing the tools; a config name Kafka does not know is still INVALID_CONFIG.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from tidelog import runtime
from tidelog.errors import InvalidRequestError, TidelogError
from tidelog.kafka.codec import Answer, field, items
from tidelog.kafka.configs import IGNORED_TOPIC_CONFIGS, topic_config
from tidelog.log import configs as topic_configs
from tidelog.log.lifecycle import retention
from tidelog.log.topics import Topic, TopicExistsError, validate_name, validate_partitions


def create_topics(body: Any) -> Answer:
    names = Counter(str(t.name) for t in items(body.topics))
    validate_only = bool(field(body, "validate_only", False))
    answers = []
    for request in items(body.topics):
        name = str(request.name)
        if names[name] > 1:
            error: TidelogError | None = InvalidRequestError(
                f"Create topics request from client contains multiple entries for topic {name}"
            )
            answers.append(_created(name, None, error, request))
            continue
        try:
            topic = _create(request, validate_only)
            answers.append(_created(name, topic, None, request))
        except TidelogError as exc:
            answers.append(_created(name, None, exc, request))
    return {"throttle_time": 0, "topics": answers}


def _create(request: Any, validate_only: bool) -> Topic:
    assignments = items(request.assignments)
    count = len(assignments) if assignments else int(request.num_partitions)
    count = runtime.settings().num_partitions if count == -1 else count
    wanted = {
        str(c.name): c.value
        for c in items(request.configs)
        if str(c.name) not in IGNORED_TOPIC_CONFIGS and c.value is not None
    }
    if not validate_only:
        return runtime.topics().create(str(request.name), count, wanted)
    topic = Topic(
        name=validate_name(str(request.name)),
        topic_id=str(uuid.UUID(int=0)),
        partitions=validate_partitions(count),
        configs=topic_configs.validate_configs(wanted),
    )
    try:
        runtime.topics().get(topic.name)
    except TidelogError:
        return topic
    raise TopicExistsError(f"Topic '{topic.name}' already exists.")


def _created(name: str, topic: Topic | None, error: TidelogError | None, request: Any) -> Answer:
    if topic is None:
        assert error is not None
        return {
            "name": name,
            "topic_id": uuid.UUID(int=0),
            "error_code": error.kafka_error.code,
            "error_message": error.message,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],  # Kafka's controller leaves them empty, never null
        }
    factor = int(request.replication_factor)
    return {
        "name": name,
        "topic_id": uuid.UUID(topic.topic_id),
        "error_code": 0,
        "error_message": None,
        "num_partitions": topic.partitions,
        "replication_factor": 1 if factor == -1 else factor,
        "configs": [
            topic_config(topic, config_name) for config_name in sorted(topic_configs.CONFIGS)
        ],
    }


def delete_topics(body: Any) -> Answer:
    answers = []
    for request in _deletions(body):
        name, topic_id = request
        try:
            if name is None:  # by id: that topic, not one that took its name since
                deleted = runtime.topics().delete_id(str(topic_id))
                name = deleted.name
            else:
                deleted = runtime.topics().delete(name)
            runtime.topic_cache().forget(name)
            answers.append(_deleted(name, uuid.UUID(deleted.topic_id), None))
        except TidelogError as exc:
            answers.append(_deleted(name, topic_id, exc))
    return {"throttle_time": 0, "responses": answers}


def _deletions(body: Any) -> list[tuple[str | None, uuid.UUID]]:
    if hasattr(body, "topic_names"):  # v0-5 name topics (null: none); v6 names or ids each
        return [(str(n), uuid.UUID(int=0)) for n in items(body.topic_names)]
    return [
        (None if t.name is None else str(t.name), t.topic_id or uuid.UUID(int=0))
        for t in items(body.topics)
    ]


def _deleted(name: str | None, topic_id: uuid.UUID, error: TidelogError | None) -> Answer:
    return {
        "name": name,
        "topic_id": topic_id,
        "error_code": 0 if error is None else error.kafka_error.code,
        "error_message": None if error is None else error.message,
    }


def create_partitions(body: Any) -> Answer:
    validate_only = bool(body.validate_only)
    results = []
    for request in items(body.topics):
        name = str(request.name)
        error: TidelogError | None = None
        try:
            if validate_only:
                topic = runtime.topics().get(name)
                validate_partitions(int(request.count))
                if int(request.count) <= topic.partitions:
                    raise InvalidRequestError(
                        f"Topic currently has {topic.partitions} partitions, which is higher "
                        f"than or equal to the requested {request.count}.",
                        kafka_error="INVALID_PARTITIONS",
                    )
            else:
                runtime.topics().add_partitions(name, int(request.count))
                runtime.topic_cache().forget(name)
        except TidelogError as exc:
            error = exc
        results.append(
            {
                "name": name,
                "error_code": 0 if error is None else error.kafka_error.code,
                "error_message": None if error is None else error.message,
            }
        )
    return {"throttle_time": 0, "results": results}


def delete_records(body: Any) -> Answer:
    """Each partition's log now starts at the offset given (-1: its high watermark); the
    answer's low watermark is the new log start. Errors are per partition, as on Kafka."""
    named: list[tuple[str, Topic | TidelogError, list[tuple[int, int]]]] = []
    for request in items(body.topics):
        name = str(request.name)
        wanted = [(int(p.partition_index), int(p.offset)) for p in items(request.partitions)]
        try:
            named.append((name, runtime.topics().get(name), wanted))
        except TidelogError as exc:
            named.append((name, exc, wanted))
    outcomes = iter(
        retention.delete_records_many(
            runtime.metadata_store(),
            [(t, p, o) for _, t, wanted in named if isinstance(t, Topic) for p, o in wanted],
            now_ms=runtime.clock_ms(),
        )
    )
    topics = []
    for name, topic, wanted in named:
        partitions = []
        for index, _ in wanted:
            outcome = next(outcomes) if isinstance(topic, Topic) else topic
            if isinstance(outcome, TidelogError):
                low, error = -1, outcome.kafka_error.code
            else:
                low, error = outcome, 0
            partitions.append({"partition_index": index, "low_watermark": low, "error_code": error})
        topics.append({"name": name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}
