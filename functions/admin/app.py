"""Admin function: topics.

POST   /v1/topics                         create       {"name", "partitions", "configs"}
GET    /v1/topics                         list
GET    /v1/topics/{topic}                 describe, with each partition's offsets
DELETE /v1/topics/{topic}                 delete
PATCH  /v1/topics/{topic}/configs         set configs; null resets one to its default
POST   /v1/topics/{topic}/partitions      grow to {"count"} partitions
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, Field, StrictInt

from tidelog import api, runtime
from tidelog.log.head import high_watermark
from tidelog.log.topics import Topic

app = api.resolver()
logger = Logger(service="tidelog-admin")
metrics = Metrics(namespace="tidelog", service="admin")

ConfigValue = str | StrictInt


class CreateTopic(api.RequestModel):
    name: str
    partitions: Annotated[StrictInt, Field(ge=1)] = 1
    configs: dict[str, ConfigValue] = Field(default_factory=dict)


class AlterConfigs(api.RequestModel):
    configs: dict[str, ConfigValue | None]


class PartitionCount(api.RequestModel):
    count: StrictInt


class PartitionOffsets(BaseModel):
    partition: int
    log_start_offset: int
    high_watermark: int


class TopicSummary(BaseModel):
    name: str
    topic_id: str
    partitions: int
    configs: dict[str, str]


class TopicDescription(BaseModel):
    name: str
    topic_id: str
    partitions: list[PartitionOffsets]
    configs: dict[str, str]


class TopicList(BaseModel):
    topics: list[TopicSummary]


def summary(topic: Topic) -> TopicSummary:
    return TopicSummary(
        name=topic.name,
        topic_id=topic.topic_id,
        partitions=topic.partitions,
        configs=topic.effective_configs,
    )


@app.post("/v1/topics", summary="Create a topic")
def create_topic(body: CreateTopic) -> Response[str]:
    topic = runtime.topics().create(body.name, body.partitions, body.configs)
    metrics.add_metric(name="TopicsCreated", unit=MetricUnit.Count, value=1)
    return api.json_response(201, summary(topic).model_dump())


@app.get("/v1/topics", summary="List topics")
def list_topics() -> TopicList:
    return TopicList(topics=[summary(t) for t in runtime.topics().list()])


@app.get("/v1/topics/<topic>", summary="Describe a topic and its partitions' offsets")
def describe_topic(topic: str) -> TopicDescription:
    found = runtime.topics().get(topic)
    meta = runtime.metadata_store()
    partitions = []
    for p in range(found.partitions):
        start, end = high_watermark(meta, found.topic_id, p)
        partitions.append(PartitionOffsets(partition=p, log_start_offset=start, high_watermark=end))
    return TopicDescription(
        name=found.name,
        topic_id=found.topic_id,
        partitions=partitions,
        configs=found.effective_configs,
    )


@app.delete("/v1/topics/<topic>", summary="Delete a topic")
def delete_topic(topic: str) -> TopicSummary:
    return summary(runtime.topics().delete(topic))


@app.patch("/v1/topics/<topic>/configs", summary="Change a topic's configs")
def alter_configs(topic: str, body: AlterConfigs) -> TopicSummary:
    return summary(runtime.topics().alter_configs(topic, body.configs))


@app.post("/v1/topics/<topic>/partitions", summary="Add partitions to a topic")
def add_partitions(topic: str, body: PartitionCount) -> TopicSummary:
    return summary(runtime.topics().add_partitions(topic, body.count))


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
