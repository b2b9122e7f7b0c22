"""Groups function: consumer group membership and committed offsets.

POST   /v1/groups/{group}/members                      join
POST   /v1/groups/{group}/members/{member}/heartbeat   heartbeat (and the assignment)
DELETE /v1/groups/{group}/members/{member}             leave
POST   /v1/groups/{group}/heartbeat                    KIP-848's consumer protocol: join,
                                                       reconcile, leave
POST   /v1/groups/{group}/offsets                      commit, fenced by generation
GET    /v1/groups/{group}/offsets                      committed offsets and lag
POST   /v1/groups/{group}/offsets/reset                move offsets, only while the group is empty
GET    /v1/groups                                      list
GET    /v1/groups/{group}                              describe
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from aws_lambda_powertools import Logger
from pydantic import BaseModel, ConfigDict, Field

from tidelog import api, runtime, snapstart
from tidelog.assignors import ASSIGNORS, TopicPartition
from tidelog.errors import InvalidRequestError
from tidelog.groups import lag
from tidelog.groups.consumer.heartbeat import Heartbeat, owned_partitions
from tidelog.groups.consumer.model import JOIN_EPOCH, ConsumerGroup, MemberState
from tidelog.groups.consumer.target import DEFAULT_ASSIGNOR
from tidelog.groups.model import JoinRequest, group_partitions
from tidelog.groups.offsets import OffsetCommit
from tidelog.groups.stored import ConsumerProtocolGroupError
from tidelog.telemetry import Metrics, MetricUnit

app = api.resolver()
logger = Logger(service="tidelog-groups")
metrics = Metrics(namespace="tidelog", service="groups")


# Exactly one of topics and topic_pattern (the handler says which is wrong, if not).
ONE_SUBSCRIPTION: dict[str, Any] = {
    "oneOf": [
        {
            "required": ["topics"],
            "properties": {"topics": {"minItems": 1}, "topic_pattern": {"type": "null"}},
        },
        {
            "required": ["topic_pattern"],
            "properties": {"topic_pattern": {"type": "string"}, "topics": {"maxItems": 0}},
        },
    ]
}
DEFAULT_REBALANCE_TIMEOUT_MS = 300_000  # Kafka's max.poll.interval.ms default
# Unknown assignors are Kafka's INCONSISTENT_GROUP_PROTOCOL, answered by the handler.
KNOWN_ASSIGNORS: dict[str, Any] = {"items": {"enum": list(ASSIGNORS)}}


class Join(api.RequestModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=ONE_SUBSCRIPTION)

    topics: list[api.TopicField] = Field(default_factory=list)
    topic_pattern: Annotated[str | None, Field(json_schema_extra={"format": "regex"})] = None
    assignors: Annotated[list[str], Field(min_length=1, json_schema_extra=KNOWN_ASSIGNORS)] = Field(
        default_factory=lambda: ["range"]
    )
    session_timeout_ms: api.Integer = 45_000
    rebalance_timeout_ms: api.Integer = DEFAULT_REBALANCE_TIMEOUT_MS
    # The member id starts with it, and a member id travels in paths.
    group_instance_id: Annotated[str, Field(pattern=api.ID_PATTERN, max_length=200)] | None = None


class Joined(BaseModel):
    member_id: str
    generation_id: int
    state: str


class HeartbeatBody(api.RequestModel):
    generation_id: api.Integer


class TopicPartitions(BaseModel):
    topic: str
    partitions: list[int]


class HeartbeatAnswer(BaseModel):
    state: str
    generation_id: int
    assignment: list[TopicPartitions]


class OwnedPartitions(api.RequestModel):
    topic: str  # a topic that no longer exists is simply not owned
    partitions: list[Annotated[int, Field(ge=0), api.INTEGRAL]]


class ConsumerHeartbeat(api.RequestModel):
    """KIP-848's ConsumerGroupHeartbeat, by topic name (docs/groups.md)."""

    model_config = ConfigDict(extra="forbid")

    # Named by the member (Kafka's v1); the first heartbeat may leave it to the coordinator.
    member_id: Annotated[str, Field(pattern=api.ID_PATTERN, max_length=200)] | None = None
    member_epoch: Annotated[int, Field(ge=-2), api.INTEGRAL]
    topics: list[api.TopicField] | None = None  # null: unchanged since the last heartbeat
    topic_pattern: Annotated[str | None, Field(json_schema_extra={"format": "regex"})] = None
    owned: list[OwnedPartitions] | None = None  # null: unchanged; [] when joining
    # Kafka requires it when joining; over HTTP a join without it takes the classic default.
    rebalance_timeout_ms: Annotated[int, Field(gt=0), api.INTEGRAL] | None = None
    group_instance_id: Annotated[str, Field(pattern=api.ID_PATTERN, max_length=200)] | None = None
    assignor: Literal["uniform", "range"] | None = None


ReconcilingState = Literal[
    "assigning", "stable", "unrevoked_partitions", "unreleased_partitions", "left"
]
_STATES: dict[MemberState, ReconcilingState] = {
    MemberState.STABLE: "stable",
    MemberState.UNREVOKED_PARTITIONS: "unrevoked_partitions",
    MemberState.UNRELEASED_PARTITIONS: "unreleased_partitions",
}


class ConsumerHeartbeatAnswer(BaseModel):
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: list[TopicPartitions] | None  # null: unchanged
    # Beyond Kafka's answer: where the member is in reconciling, and "assigning" while the
    # state machine computes the target of the epoch it joined at (Kafka computes it in the
    # heartbeat, so a Kafka member never sees that).
    state: Literal["assigning", "stable", "unrevoked_partitions", "unreleased_partitions", "left"]


class CommitOffset(api.RequestModel):
    topic: str  # any string: a bad name is that partition's error, as in Kafka
    partition: Annotated[int, Field(ge=0), api.INTEGRAL]
    offset: Annotated[int, Field(ge=0), api.INTEGRAL]
    metadata: str = ""


class Commit(api.RequestModel):
    member_id: str = ""
    generation_id: api.Integer = -1
    offsets: Annotated[list[CommitOffset], Field(min_length=1, max_length=10_000)]


class CommitAnswer(BaseModel):
    topic: str
    partition: int
    offset: int | None = None
    error: str | None = None
    error_code: int | None = None
    message: str | None = None


class Commits(BaseModel):
    offsets: list[CommitAnswer]


class Reset(api.RequestModel):
    to: Literal["earliest", "latest", "timestamp", "offset"]
    timestamp: Annotated[int, Field(ge=0), api.INTEGRAL] | None = None
    offset: Annotated[int, Field(ge=0), api.INTEGRAL] | None = None
    topics: list[api.TopicField] = Field(default_factory=list)


class CommittedOffset(BaseModel):
    topic: str
    partition: int
    offset: int
    metadata: str
    commit_ms: int
    high_watermark: int
    lag: int
    lag_ms: int


class Offsets(BaseModel):
    group: str
    offsets: list[CommittedOffset]


class MemberView(BaseModel):
    member_id: str
    group_instance_id: str | None
    topics: list[str]
    topic_pattern: str | None
    assignors: list[str]
    session_timeout_ms: int
    assignment: list[TopicPartitions]
    # A consumer group's (KIP-848): the member's epoch, its target, and its protocol.
    member_epoch: int | None = None
    target: list[TopicPartitions] | None = None
    member_type: Literal["classic", "consumer"] = "classic"


class GroupView(BaseModel):
    group: str
    type: Literal["classic", "consumer"] = "classic"
    state: str
    protocol: str | None  # the assignor: chosen among the members' (classic), or the group's
    generation_id: int  # a consumer group's group epoch
    members: list[MemberView]


class GroupSummary(BaseModel):
    group: str
    state: str
    members: int


class GroupList(BaseModel):
    groups: list[GroupSummary]


@app.post("/v1/groups/<group>/members", summary="Join a consumer group")
def join(group: api.GroupId, body: Join) -> Joined:
    # Kafka lets a member subscribe to nothing; over HTTP that is a mistake worth a clear 400.
    if not body.topics and body.topic_pattern is None:
        raise InvalidRequestError("give either topics or topic_pattern")
    joined = runtime.coordinator().join(
        group,
        JoinRequest(
            topics=body.topics,
            topic_pattern=body.topic_pattern,
            assignors=body.assignors,
            session_timeout_ms=body.session_timeout_ms,
            rebalance_timeout_ms=body.rebalance_timeout_ms,
            group_instance_id=body.group_instance_id,
        ),
    )
    metrics.add_metric(name="Joins", unit=MetricUnit.Count, value=1)
    return Joined(
        member_id=joined.member_id, generation_id=joined.generation, state=joined.state.value
    )


@app.post(
    "/v1/groups/<group>/members/<member>/heartbeat",
    summary="Heartbeat: keep the session, learn the generation and the assignment",
)
def heartbeat(group: api.GroupId, member: api.MemberId, body: HeartbeatBody) -> HeartbeatAnswer:
    beat = runtime.coordinator().heartbeat(group, member, body.generation_id)
    return HeartbeatAnswer(
        state=beat.state.value,
        generation_id=beat.generation,
        assignment=[TopicPartitions.model_validate(p) for p in group_partitions(beat.assignment)],
    )


@app.post(
    "/v1/groups/<group>/heartbeat",
    summary="Heartbeat of KIP-848's consumer protocol: join, reconcile to the target, leave",
)
def consumer_heartbeat(group: api.GroupId, body: ConsumerHeartbeat) -> ConsumerHeartbeatAnswer:
    coordinator = runtime.consumer_groups()
    known = coordinator.topic_map()
    owned = None
    if body.owned is not None:
        owned = owned_partitions(
            [(known[o.topic][0], o.partitions) for o in body.owned if o.topic in known]
        )
    elif body.member_epoch == JOIN_EPOCH:
        owned = frozenset()  # joining owns nothing; over HTTP it need not say so
    outcome = coordinator.heartbeat(
        group,
        Heartbeat(
            member_id=body.member_id or (str(uuid.uuid4()) if body.member_epoch == 0 else ""),
            epoch=body.member_epoch,
            instance_id=body.group_instance_id,
            rebalance_timeout_ms=body.rebalance_timeout_ms
            or (DEFAULT_REBALANCE_TIMEOUT_MS if body.member_epoch == JOIN_EPOCH else -1),
            topics=None if body.topics is None else tuple(body.topics),
            pattern=body.topic_pattern,
            assignor=body.assignor,
            owned=owned,
        ),
    )
    names = {topic_id: name for name, (topic_id, _) in known.items()}
    member = outcome.group.members.get(outcome.member_id)
    state: ReconcilingState = "left"
    if member is not None and outcome.epoch >= 0:
        assigning = outcome.group.target.epoch < member.epoch
        state = "assigning" if assigning else _STATES[member.state]
    return ConsumerHeartbeatAnswer(
        member_id=outcome.member_id,
        member_epoch=outcome.epoch,
        heartbeat_interval_ms=coordinator.config_of(group).heartbeat_interval_ms,
        assignment=None if outcome.assignment is None else _by_name(outcome.assignment, names),
        state=state,
    )


def _by_name(
    partitions: Iterable[TopicPartition], names: Mapping[str, str]
) -> list[TopicPartitions]:
    """Partitions by topic id, as topic names (a topic deleted meanwhile is left out)."""
    named = [TopicPartition(names[t], p) for t, p in partitions if t in names]
    return [TopicPartitions.model_validate(p) for p in group_partitions(named)]


@app.delete("/v1/groups/<group>/members/<member>", summary="Leave a consumer group")
def leave(group: api.GroupId, member: api.MemberId) -> Joined:
    left = runtime.coordinator().leave(group, member)
    return Joined(member_id=member, generation_id=left.generation, state=left.state)


@app.post("/v1/groups/<group>/offsets", summary="Commit offsets, fenced by generation")
def commit(group: api.GroupId, body: Commit) -> Commits:
    results = runtime.coordinator().commit(
        group,
        body.member_id,
        body.generation_id,
        [OffsetCommit(o.topic, o.partition, o.offset, o.metadata) for o in body.offsets],
    )
    answers = []
    for result in results:
        if result.error is None:
            answers.append(
                CommitAnswer(topic=result.topic, partition=result.partition, offset=result.offset)
            )
        else:
            answers.append(
                CommitAnswer(
                    topic=result.topic,
                    partition=result.partition,
                    error=result.error.kafka_error.name,
                    error_code=result.error.kafka_error.code,
                    message=result.error.message,
                )
            )
    return Commits(offsets=answers)


@app.get("/v1/groups/<group>/offsets", summary="Committed offsets, with lag in records and time")
def offsets(group: api.GroupId) -> Offsets:
    rows = lag.committed_with_lag(
        runtime.coordinator(), runtime.topics(), runtime.log_reader(), group, runtime.clock_ms()
    )
    return Offsets(group=group, offsets=[CommittedOffset.model_validate(r) for r in rows])


@app.post("/v1/groups/<group>/offsets/reset", summary="Reset offsets while the group is empty")
def reset(group: api.GroupId, body: Reset) -> Offsets:
    runtime.coordinator().reset(
        group, body.to, topics=body.topics, timestamp=body.timestamp, offset=body.offset
    )
    return offsets(group)


@app.get("/v1/groups", summary="List consumer groups")
def list_groups() -> GroupList:
    return GroupList(
        groups=[
            GroupSummary(group=g.name, state=g.state.value, members=len(g.members))
            for g in runtime.coordinator().groups()
        ]
    )


@app.get("/v1/groups/<group>", summary="Describe a consumer group, of either protocol")
def describe(group: api.GroupId) -> GroupView:
    try:
        found = runtime.coordinator().describe(group)  # one read for a classic group
    except ConsumerProtocolGroupError:
        consumer = runtime.consumer_groups().describe(group)
        if consumer is not None:
            return _consumer_view(consumer)
        found = runtime.coordinator().describe(group)  # it emptied and became classic
    assignment = found.current_assignment()
    return GroupView(
        group=found.name,
        state=found.state.value,
        protocol=found.protocol,
        generation_id=found.generation,
        members=[
            MemberView(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                topics=list(m.topics),
                topic_pattern=m.topic_pattern,
                assignors=list(m.assignors),
                session_timeout_ms=m.session_timeout_ms,
                assignment=[
                    TopicPartitions.model_validate(p)
                    for p in group_partitions(assignment.of(m.member_id) if assignment else ())
                ],
            )
            for m in sorted(found.members.values(), key=lambda m: m.member_id)
        ],
    )


def _consumer_view(found: ConsumerGroup) -> GroupView:
    coordinator = runtime.consumer_groups()
    names = {topic_id: name for name, (topic_id, _) in coordinator.topic_map().items()}
    session_ms = coordinator.config_of(found.name).session_timeout_ms
    return GroupView(
        group=found.name,
        type="consumer",
        state=found.state.value,
        protocol=found.target.assignor or found.assignor(DEFAULT_ASSIGNOR),
        generation_id=found.epoch,
        members=[
            MemberView(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                topics=list(m.topics),
                topic_pattern=m.pattern,
                assignors=list(m.protocols) if m.is_classic else [m.assignor or DEFAULT_ASSIGNOR],
                session_timeout_ms=m.classic_session_ms or session_ms,
                assignment=_by_name(m.assigned, names),
                member_epoch=m.epoch,
                target=_by_name(found.target.of(m.member_id), names),
                member_type="classic" if m.is_classic else "consumer",
            )
            for m in sorted(found.members.values(), key=lambda m: m.member_id)
        ],
    )


class Deleted(BaseModel):
    group: str
    deleted: bool


@app.delete("/v1/groups/<group>", summary="Delete an empty consumer group and its offsets")
def delete(group: api.GroupId) -> Deleted:
    runtime.coordinator().delete(group)
    return Deleted(group=group, deleted=True)


# SnapStart: everything a first request would build, built before the snapshot (tidelog.snapstart).
_BAD_GROUP = "/v1/groups/a b"
snapstart.enable(
    lambda: api.prime(
        app,
        [
            api.Probe("POST", _BAD_GROUP + "/members", {"topics": ["t"], "assignors": ["range"]}),
            api.Probe("POST", _BAD_GROUP + "/members/m/heartbeat", {"generation_id": 1}),
            api.Probe(
                "POST",
                _BAD_GROUP + "/offsets",
                {"member_id": "m", "offsets": [{"topic": "t", "partition": 0, "offset": 0}]},
            ),
            api.Probe("GET", _BAD_GROUP + "/offsets"),
            api.Probe("GET", _BAD_GROUP),
        ],
    )
)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
