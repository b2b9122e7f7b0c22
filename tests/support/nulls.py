"""Where Kafka puts null in its answers, and where it never does: every nullable field of the
responses tidelog advertises, judged against Kafka's JSON schemas (a field with "default":
"null" is null unless set) and the code that fills them. A client parser may choke on a null
Kafka never sends: librdkafka 2.0 throws a whole Fetch response away for one partition's null
records, and its consumer is stuck."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from typing import Any

# (API, field path): why Kafka may send null there.
KAFKA_SENDS_NULL: dict[tuple[str, str], str] = {
    ("ALTER_CLIENT_QUOTAS", "entries.entity.entity_name"): "the default entity",
    ("ALTER_CLIENT_QUOTAS", "entries.error_message"): "ApiError.NONE's message is null",
    ("ALTER_CONFIGS", "responses.error_message"): "ApiError.NONE's message is null",
    ("ALTER_PARTITION_REASSIGNMENTS", "error_message"): "ApiError.NONE's message is null",
    ("ALTER_USER_SCRAM_CREDENTIALS", "results.error_message"): "a success's message is null",
    ("ALTER_PARTITION_REASSIGNMENTS", "responses.partitions.error_message"): (
        "ApiError.NONE's message is null"
    ),
    ("CONSUMER_GROUP_DESCRIBE", "groups.error_message"): 'schema default "null"',
    ("CONSUMER_GROUP_DESCRIBE", "groups.members.instance_id"): "a dynamic member",
    ("CONSUMER_GROUP_DESCRIBE", "groups.members.rack_id"): "a member naming no rack",
    ("CONSUMER_GROUP_DESCRIBE", "groups.members.subscribed_topic_regex"): (
        "a member subscribing by name"
    ),
    ("CONSUMER_GROUP_HEARTBEAT", "assignment"): "no new assignment to send",
    ("CONSUMER_GROUP_HEARTBEAT", "error_message"): 'schema default "null"',
    ("CONSUMER_GROUP_HEARTBEAT", "member_id"): "an error's answer",
    ("CREATE_ACLS", "results.error_message"): "ApiError.NONE's message is null",
    ("DELETE_ACLS", "filter_results.error_message"): "ApiError.NONE's message is null",
    ("DELETE_ACLS", "filter_results.matching_acls.error_message"): (
        "ApiError.NONE's message is null"
    ),
    ("DESCRIBE_ACLS", "error_message"): "ApiError.NONE's message is null",
    ("DESCRIBE_CLIENT_QUOTAS", "entries"): "an error's answer",
    ("DESCRIBE_USER_SCRAM_CREDENTIALS", "error_message"): "ApiError.NONE's message is null",
    ("DESCRIBE_USER_SCRAM_CREDENTIALS", "results.error_message"): (
        "a described user's message is null"
    ),
    ("SASL_AUTHENTICATE", "error_message"): "a step that succeeded has no message",
    ("DESCRIBE_CLIENT_QUOTAS", "entries.entity.entity_name"): "the default entity",
    ("DESCRIBE_CLIENT_QUOTAS", "error_message"): "ApiError.NONE's message is null",
    ("DESCRIBE_PRODUCERS", "topics.partitions.error_message"): 'schema default "null"',
    ("ELECT_LEADERS", "replica_election_results.partition_result.error_message"): (
        "ApiError.NONE's message is null"
    ),
    ("INCREMENTAL_ALTER_CONFIGS", "responses.error_message"): "ApiError.NONE's message is null",
    ("LIST_PARTITION_REASSIGNMENTS", "error_message"): "ApiError.NONE's message is null",
    ("CREATE_PARTITIONS", "results.error_message"): "ApiError.NONE's message is null",
    ("CREATE_TOPICS", "topics.configs.value"): "a sensitive config's value",
    ("CREATE_TOPICS", "topics.error_message"): "ApiError.NONE's message is null",
    ("CREATE_TOPICS", "topics.topic_id"): "kio's reading of the zero UUID",
    ("DELETE_TOPICS", "responses.error_message"): 'schema default "null"',
    ("DELETE_TOPICS", "responses.name"): "a topic deleted by id (v6+)",
    ("DELETE_TOPICS", "responses.topic_id"): "kio's reading of the zero UUID",
    ("DESCRIBE_CLUSTER", "brokers.rack"): 'schema default "null"',
    ("DESCRIBE_CLUSTER", "error_message"): 'schema default "null"',
    ("DESCRIBE_CONFIGS", "results.configs.documentation"): "ConfigDef's missing doc",
    ("DESCRIBE_CONFIGS", "results.configs.synonyms.value"): "a sensitive config's value",
    ("DESCRIBE_CONFIGS", "results.configs.value"): "a sensitive config's value",
    ("DESCRIBE_CONFIGS", "results.error_message"): "ApiError.NONE's message is null",
    ("DESCRIBE_GROUPS", "groups.error_message"): 'schema default "null"',
    ("DESCRIBE_GROUPS", "groups.members.group_instance_id"): 'schema default "null"',
    ("DESCRIBE_TOPIC_PARTITIONS", "next_cursor"): "the last page",
    ("DESCRIBE_TOPIC_PARTITIONS", "topics.topic_id"): "kio's reading of the zero UUID",
    ("FETCH", "node_endpoints.rack"): 'schema default "null"',
    ("FETCH", "responses.topic_id"): "kio's reading of the zero UUID",
    ("FETCH", "responses.partitions.aborted_transactions"): "read_uncommitted fetches",
    ("FIND_COORDINATOR", "coordinators.error_message"): "ApiError.NONE's message is null",
    ("FIND_COORDINATOR", "error_message"): "ApiError.NONE's message is null",
    ("JOIN_GROUP", "members.group_instance_id"): 'schema default "null"',
    ("JOIN_GROUP", "protocol_name"): "an error's answer (v7+)",
    ("JOIN_GROUP", "protocol_type"): 'schema default "null"',
    ("LEAVE_GROUP", "members.group_instance_id"): "a member that left by id",
    ("METADATA", "brokers.rack"): 'schema default "null"',
    ("METADATA", "cluster_id"): 'schema default "null"',
    ("METADATA", "topics.name"): "a topic id nobody knows (v12+)",
    ("METADATA", "topics.topic_id"): "kio's reading of the zero UUID",
    ("PRODUCE", "node_endpoints.rack"): 'schema default "null"',
    ("PRODUCE", "responses.topic_id"): "kio's reading of the zero UUID",
    ("PRODUCE", "responses.partition_responses.error_message"): 'schema default "null"',
    ("PRODUCE", "responses.partition_responses.record_errors.batch_index_error_message"): (
        'schema default "null"'
    ),
    ("SYNC_GROUP", "protocol_name"): 'schema default "null"',
    # An int64, never null on the wire: kio reads its -1 (no LogAppendTime) as None.
    ("PRODUCE", "responses.partition_responses.log_append_time"): "kio's reading of -1",
    ("SYNC_GROUP", "protocol_type"): 'schema default "null"',
}

# Nullable in the schemas, never null from Kafka: tidelog must not send null either.
KAFKA_NEVER_NULL: dict[tuple[str, str], str] = {
    ("CONSUMER_GROUP_DESCRIBE", "groups.members.assignment.topic_partitions.topic_id"): (
        "an assigned partition's topic, by its id"
    ),
    ("CONSUMER_GROUP_DESCRIBE", "groups.members.target_assignment.topic_partitions.topic_id"): (
        "an assigned partition's topic, by its id"
    ),
    ("CONSUMER_GROUP_HEARTBEAT", "assignment.topic_partitions.topic_id"): (
        "an assigned partition's topic, by its id"
    ),
    ("CREATE_TOPICS", "topics.configs"): "the controller leaves an error's configs empty",
    ("DESCRIBE_TOPIC_PARTITIONS", "topics.name"): "every topic answered is named",
    ("DESCRIBE_TOPIC_PARTITIONS", "topics.partitions.eligible_leader_replicas"): (
        "the metadata cache lists them, empty without ELR"
    ),
    ("DESCRIBE_TOPIC_PARTITIONS", "topics.partitions.last_known_elr"): (
        "the metadata cache lists them, empty without ELR"
    ),
    ("FETCH", "responses.partitions.records"): "an error's records are MemoryRecords.EMPTY",
    ("OFFSET_FETCH", "groups.topics.partitions.metadata"): 'NO_METADATA is ""',
    ("OFFSET_FETCH", "topics.partitions.metadata"): 'NO_METADATA is ""',
}


def nullable_fields(schema: type[Any], path: str = "") -> Iterator[str]:
    """The paths of every nullable field of a kio response schema."""
    hints = typing.get_type_hints(schema)
    for field in dataclasses.fields(schema):
        hint = hints[field.name]
        args = typing.get_args(hint)
        if type(None) in args:
            yield path + field.name
        for arg in [a for a in args if a is not type(None)] or [hint]:
            for inner in typing.get_args(arg) or (arg,):
                if dataclasses.is_dataclass(inner):
                    yield from nullable_fields(inner, f"{path}{field.name}.")


def nulls(entity: Any, path: str = "") -> Iterator[str]:
    """The paths of every field that is null in a decoded response."""
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        if value is None:
            yield path + field.name
        for item in value if isinstance(value, tuple) else (value,):
            if dataclasses.is_dataclass(item) and not isinstance(item, type):
                yield from nulls(item, f"{path}{field.name}.")
