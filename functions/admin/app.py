"""Admin function: topics, Kafka users and ACLs.

POST   /v1/topics                         create       {"name", "partitions", "configs"}
GET    /v1/topics                         list
GET    /v1/topics/{topic}                 describe, with each partition's offsets
                                          (?sizes=true: and its size in bytes; ?create=true:
                                          created first where the cluster auto-creates)
DELETE /v1/topics/{topic}                 delete
PATCH  /v1/topics/{topic}/configs         set configs; null resets one to its default
POST   /v1/topics/{topic}/partitions      grow to {"count"} partitions
POST   /v1/topics/{topic}/delete-records  Kafka's DeleteRecords: each partition named now
                                          starts at its offset (-1: its high watermark)
GET    /v1/users                          Kafka users: each one's SCRAM mechanisms
PUT    /v1/users/{user}                   set a user's password {"password", "mechanism",
                                          "iterations"} (salted here; only keys are stored)
DELETE /v1/users/{user}                   delete a user's credentials (?mechanism=: one)
GET    /v1/acls                           Kafka's ACLs (?principal=, ?resource_type=,
                                          ?resource_name=: those only)
POST   /v1/acls                           add an ACL {"resource_type", "resource_name",
                                          "pattern_type", "principal", "host", "operation",
                                          "permission"}
DELETE /v1/acls                           remove the ACL its query names, field for field
"""

from __future__ import annotations

import secrets
from typing import Annotated, Any, Literal

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from tidelog import api, runtime
from tidelog.acl_store import AclStore
from tidelog.acls import Acl, Operation, PatternType, Permission, ResourceType
from tidelog.credentials import (
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    Credential,
    Credentials,
)
from tidelog.errors import NotFoundError, TidelogError
from tidelog.log import configs as topic_configs
from tidelog.log.head import read_heads, size
from tidelog.log.lifecycle import retention
from tidelog.log.topics import MAX_PARTITIONS, Topic, UnknownTopicError
from tidelog.telemetry import Metrics, MetricUnit

app = api.resolver()
logger = Logger(service="tidelog-admin")
metrics = Metrics(namespace="tidelog", service="admin")

ConfigValue = str | api.Integer


# Kafka's topic configs by name (tidelog.log.configs); a value is checked by the handler.
CONFIG_NAMES = {"propertyNames": {"enum": sorted(topic_configs.CONFIGS)}}


class CreateTopic(api.RequestModel):
    name: api.TopicField
    partitions: Annotated[
        int, Field(ge=1, json_schema_extra={"maximum": MAX_PARTITIONS}), api.INTEGRAL
    ] = 1
    configs: Annotated[dict[str, ConfigValue], Field(json_schema_extra=CONFIG_NAMES)] = Field(
        default_factory=dict
    )


class AlterConfigs(api.RequestModel):
    configs: Annotated[dict[str, ConfigValue | None], Field(json_schema_extra=CONFIG_NAMES)]


class PartitionCount(api.RequestModel):
    # Checked by the handler (INVALID_PARTITIONS); it must also exceed the current count.
    count: Annotated[
        api.Integer, Field(json_schema_extra={"minimum": 1, "maximum": MAX_PARTITIONS})
    ]


class PartitionOffsets(BaseModel):
    partition: int
    log_start_offset: int
    high_watermark: int
    # The first offset of the earliest transaction still open, else the high watermark: where
    # read_committed consumers stop (and what "latest" means to them).
    last_stable_offset: int
    open_transactions: int
    # Only when asked (?sizes=true): kept in the partition's head, but a head written before
    # tidelog kept sizes needs a query of the partition's index.
    size_bytes: int | SkipJsonSchema[None] = Field(
        default=None, description="Stored bytes of the partition's log (DescribeLogDirs' size)"
    )


class RecordDeletion(api.RequestModel):
    partition: Annotated[int, Field(ge=0), api.INTEGRAL]
    offset: Annotated[
        int,
        Field(ge=-1, description="The partition's new log start offset; -1: its high watermark"),
        api.INTEGRAL,
    ]


class DeleteRecords(api.RequestModel):
    partitions: Annotated[list[RecordDeletion], Field(min_length=1)]


class RecordsDeleted(BaseModel):
    partition: int
    log_start_offset: int | SkipJsonSchema[None] = Field(
        default=None, description="Where the partition's log now starts (Kafka's low watermark)"
    )
    error: str | SkipJsonSchema[None] = None
    error_code: int | SkipJsonSchema[None] = None
    message: str | SkipJsonSchema[None] = None


class DeleteRecordsResult(BaseModel):
    partitions: list[RecordsDeleted]


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


@app.post(
    "/v1/topics",
    summary="Create a topic",
    responses={
        201: {
            "description": "The topic, created",
            "content": {"application/json": {"model": TopicSummary}},
        }
    },
)
def create_topic(body: CreateTopic) -> Response[str]:
    topic = runtime.topics().create(body.name, body.partitions, body.configs)
    metrics.add_metric(name="TopicsCreated", unit=MetricUnit.Count, value=1)
    return api.json_response(201, summary(topic).model_dump())


@app.get("/v1/topics", summary="List topics")
def list_topics() -> TopicList:
    return TopicList(topics=[summary(t) for t in runtime.topics().list()])


@app.get(
    "/v1/topics/<topic>",
    summary="Describe a topic and its partitions' offsets",
    responses={
        200: {
            "description": "The topic, its partitions' offsets, and with sizes=true their sizes",
            "content": {"application/json": {"model": TopicDescription}},
        }
    },
)
def describe_topic(
    topic: api.TopicName,
    sizes: Annotated[bool, Query()] = False,
    create: Annotated[
        bool,
        Query(
            description="Create the topic if it does not exist and the cluster auto-creates "
            "topics (Kafka's Metadata with allow_auto_topic_creation): what a producer asks"
        ),
    ] = False,
) -> Response[str]:
    try:
        found = runtime.topics().get(topic)
    except UnknownTopicError:
        if not create:
            raise
        found = runtime.topic_or_create(topic)
    meta = runtime.metadata_store()
    heads = read_heads(meta, [(found.topic_id, p) for p in range(found.partitions)])
    partitions = [
        PartitionOffsets(
            partition=key[1],
            log_start_offset=head.log_start_offset,
            high_watermark=head.next_offset,
            last_stable_offset=head.last_stable_offset,
            open_transactions=len(head.open_txns),
            size_bytes=size(meta, key, head) if sizes else None,
        )
        for key, head in heads.items()
    ]
    description = TopicDescription(
        name=found.name,
        topic_id=found.topic_id,
        partitions=partitions,
        configs=found.effective_configs,
    )
    return api.json_response(200, description.model_dump(exclude_none=True))


@app.delete("/v1/topics/<topic>", summary="Delete a topic")
def delete_topic(topic: api.TopicName) -> TopicSummary:
    return summary(runtime.topics().delete(topic))


@app.patch("/v1/topics/<topic>/configs", summary="Change a topic's configs")
def alter_configs(topic: api.TopicName, body: AlterConfigs) -> TopicSummary:
    return summary(runtime.topics().alter_configs(topic, body.configs))


@app.post("/v1/topics/<topic>/partitions", summary="Add partitions to a topic")
def add_partitions(topic: api.TopicName, body: PartitionCount) -> TopicSummary:
    return summary(runtime.topics().add_partitions(topic, body.count))


@app.post(
    "/v1/topics/<topic>/delete-records",
    summary="Delete records before an offset (Kafka's DeleteRecords)",
    responses={
        200: {
            "description": "Each partition's new log start offset, or its error, in request order",
            "content": {"application/json": {"model": DeleteRecordsResult}},
        }
    },
)
def delete_records(topic: api.TopicName, body: DeleteRecords) -> Response[str]:
    found = runtime.topics().get(topic)
    outcomes = retention.delete_records_many(
        runtime.metadata_store(),
        [(found, w.partition, w.offset) for w in body.partitions],
        now_ms=runtime.clock_ms(),
    )
    results = []
    for w, outcome in zip(body.partitions, outcomes, strict=True):
        if isinstance(outcome, TidelogError):
            results.append(
                RecordsDeleted(
                    partition=w.partition,
                    error=outcome.kafka_error.name,
                    error_code=outcome.kafka_error.code,
                    message=outcome.message,
                )
            )
        else:
            results.append(RecordsDeleted(partition=w.partition, log_start_offset=outcome))
    metrics.add_metric(name="RecordDeletions", unit=MetricUnit.Count, value=len(results))
    return api.json_response(
        200, DeleteRecordsResult(partitions=results).model_dump(exclude_none=True)
    )


# -- Kafka users (SCRAM credentials, docs/security.md) ----------------------------------------

Mechanism = Literal["SCRAM-SHA-256", "SCRAM-SHA-512"]
SALT_BYTES = 16


class SetPassword(api.RequestModel):
    password: Annotated[str, Field(min_length=1, max_length=1024)]
    mechanism: Mechanism = "SCRAM-SHA-512"
    iterations: Annotated[int, Field(ge=MIN_ITERATIONS, le=MAX_ITERATIONS), api.INTEGRAL] = (
        DEFAULT_ITERATIONS
    )


class UserCredential(BaseModel):
    mechanism: str
    iterations: int


class KafkaUser(BaseModel):
    name: str
    credentials: list[UserCredential]


class UserList(BaseModel):
    users: list[KafkaUser]


class UnknownUserError(NotFoundError):
    default_kafka_error = "RESOURCE_NOT_FOUND"


def _user(name: str, listed: dict[str, list[tuple[str, int]]]) -> KafkaUser:
    return KafkaUser(
        name=name,
        credentials=[UserCredential(mechanism=m, iterations=i) for m, i in listed.get(name, [])],
    )


@app.get("/v1/users", summary="List Kafka users and their SCRAM mechanisms")
def list_users() -> UserList:
    listed = Credentials(runtime.metadata_store()).listed()
    return UserList(users=[_user(name, listed) for name in sorted(listed)])


@app.put("/v1/users/<user>", summary="Set a Kafka user's SCRAM password")
def set_password(user: api.UserName, body: SetPassword) -> KafkaUser:
    """The password is salted here, as a Kafka admin client salts it before
    AlterUserScramCredentials; only the keys derived from it are stored."""
    credentials = Credentials(runtime.metadata_store())
    salt = secrets.token_bytes(SALT_BYTES)
    derived = Credential.from_password(body.mechanism, body.password, salt, body.iterations)
    credentials.apply([credentials.put(body.mechanism, user, derived)])
    return _user(user, credentials.listed())


@app.delete("/v1/users/<user>", summary="Delete a Kafka user's SCRAM credentials")
def delete_user(
    user: api.UserName,
    mechanism: Annotated[Mechanism | None, Query(description="only this one")] = None,
) -> KafkaUser:
    credentials = Credentials(runtime.metadata_store())
    held = [m for m, _ in credentials.listed().get(user, []) if mechanism in (None, m)]
    if not held:
        raise UnknownUserError(f"user {user!r} has no {mechanism or 'SCRAM'} credential")
    credentials.apply([credentials.delete(m, user) for m in held])
    return _user(user, credentials.listed())


# -- Kafka's ACLs (docs/security.md) ------------------------------------------------------------

# Spelled out for the OpenAPI document and for mypy; tests/functional/test_acls_api.py keeps
# them equal to tidelog.acls' names, which `tidelog acl` offers.
ResourceName = Literal["topic", "group", "cluster", "transactional_id"]
PatternName = Literal["literal", "prefixed"]
OperationName = Literal[
    "all",
    "read",
    "write",
    "create",
    "delete",
    "alter",
    "describe",
    "cluster_action",
    "describe_configs",
    "alter_configs",
    "idempotent_write",
]
PermissionName = Literal["allow", "deny"]
Principal = Annotated[str, Field(pattern=r"^[^:]+:.+$", max_length=1024)]
Host = Annotated[str, Field(min_length=1, max_length=255)]


class KafkaAcl(api.RequestModel):
    resource_type: ResourceName
    resource_name: Annotated[str, Field(min_length=1, max_length=1024)]
    pattern_type: PatternName = "literal"
    principal: Annotated[Principal, Field(description="User:alice, or User:* for everyone")]
    host: Annotated[Host, Field(description="a client address, or * for any")] = "*"
    operation: OperationName
    permission: PermissionName = "allow"

    def acl(self) -> Acl:
        acl = Acl(
            ResourceType[self.resource_type.upper()],
            self.resource_name,
            PatternType[self.pattern_type.upper()],
            self.principal,
            self.host,
            Operation[self.operation.upper()],
            Permission[self.permission.upper()],
        )
        acl.validate()  # Kafka's rules: the cluster is "kafka-cluster", and so on
        return acl

    @classmethod
    def of(cls, acl: Acl) -> KafkaAcl:
        return cls(
            resource_type=acl.resource_type.name.lower(),  # type: ignore[arg-type]
            resource_name=acl.name,
            pattern_type=acl.pattern_type.name.lower(),  # type: ignore[arg-type]
            principal=acl.principal,
            host=acl.host,
            operation=acl.operation.name.lower(),  # type: ignore[arg-type]
            permission=acl.permission.name.lower(),  # type: ignore[arg-type]
        )


class AclList(BaseModel):
    acls: list[KafkaAcl]


class UnknownAclError(NotFoundError):
    default_kafka_error = "RESOURCE_NOT_FOUND"


def _acls() -> AclStore:
    return AclStore(runtime.metadata_store())


@app.get("/v1/acls", summary="List Kafka's ACLs")
def list_acls(
    principal: Annotated[Principal | None, Query(description="only this principal's")] = None,
    resource_type: Annotated[ResourceName | None, Query(description="only on this type")] = None,
    resource_name: Annotated[str | None, Query(description="only with this name")] = None,
) -> AclList:
    listed = [KafkaAcl.of(acl) for acl in _acls().all()]
    return AclList(
        acls=[
            a
            for a in listed
            if principal in (None, a.principal)
            and resource_type in (None, a.resource_type)
            and resource_name in (None, a.resource_name)
        ]
    )


@app.post(
    "/v1/acls",
    summary="Add an ACL (agents apply it within 5 seconds)",
    responses={
        201: {
            "description": "The ACL, stored (adding one that exists changes nothing)",
            "content": {"application/json": {"model": KafkaAcl}},
        }
    },
)
def add_acl(body: KafkaAcl) -> Response[str]:
    _acls().add([body.acl()])
    return api.json_response(201, body.model_dump())


@app.delete("/v1/acls", summary="Remove an ACL (agents stop applying it within 5 seconds)")
def remove_acl(
    *,
    resource_type: Annotated[ResourceName, Query()],
    resource_name: Annotated[str, Query(min_length=1, max_length=1024)],
    principal: Annotated[Principal, Query()],
    operation: Annotated[OperationName, Query()],
    pattern_type: Annotated[PatternName, Query()] = "literal",
    host: Annotated[Host, Query()] = "*",
    permission: Annotated[PermissionName, Query()] = "allow",
) -> KafkaAcl:
    named = KafkaAcl(
        resource_type=resource_type,
        resource_name=resource_name,
        pattern_type=pattern_type,
        principal=principal,
        host=host,
        operation=operation,
        permission=permission,
    )
    acl = named.acl()
    store = _acls()
    if not store.exists(acl):
        raise UnknownAclError(f"no such ACL: {named.model_dump()}")
    store.remove([acl])
    return named


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
