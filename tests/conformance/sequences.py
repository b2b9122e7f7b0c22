"""The scripted sequences the conformance suite sends to Kafka and to tidelog alike: valid,
edge and invalid requests, in the order a client would send them. Each step is named; its
answer is compared with the other broker's answer to the same step.

Batches are built here with fixed timestamps, so both brokers store the same bytes and a
fetched batch compares byte for byte."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

from tests.support.differential import Script

from tidelog.records.builder import RecordBatchBuilder

# One CreateTime for the whole run, so both brokers are sent the same bytes; the run's own time,
# as Kafka refuses one more than an hour ahead (message.timestamp.after.max.ms).
NOW = int(time.time() * 1000)
API_VERSIONS, METADATA, CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 18, 3, 19, 20, 37
PRODUCE, FETCH, LIST_OFFSETS, DELETE_RECORDS = 0, 1, 2, 21
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, OFFSET_DELETE, DELETE_GROUPS = 8, 9, 10, 47, 42
JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP, DESCRIBE_GROUPS, LIST_GROUPS = (
    11,
    14,
    12,
    13,
    15,
    16,
)
INIT_PRODUCER_ID, OFFSET_FOR_LEADER_EPOCH, ADD_PARTITIONS_TO_TXN, END_TXN = 22, 23, 24, 26
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, LIST_CONFIG_RESOURCES = 32, 44, 74
ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS, ELECT_LEADERS, DESCRIBE_PRODUCERS = 45, 46, 43, 61
CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 68, 69


def batch(
    values: list[bytes | None],
    *,
    keyless: tuple[int, ...] = (),
    producer: tuple[int, int, int] = (-1, -1, -1),
    transactional: bool = False,
    timestamp: int | None = None,
    compression: str = "none",
) -> bytes:
    producer_id, epoch, sequence = producer
    builder = RecordBatchBuilder(
        compression,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=transactional,
    )
    for i, value in enumerate(values):
        key = None if i in keyless else f"k{i}".encode()
        builder.append(key, value, [("h", b"v")], timestamp=NOW if timestamp is None else timestamp)
    return builder.build()


def create(s: Script, step: str, alias: str, partitions: int = 1, **extra: Any) -> Any:
    """``alias`` made the run's own name; an alias in brackets is sent as it is (bad names)."""
    name = alias[1:-1] if alias.startswith("[") else s.name(alias)
    topic = {"name": name, "num_partitions": partitions, "replication_factor": 1}
    return s.call(step, CREATE_TOPICS, 7, {"topics": [{**topic, **extra}], "timeout": 10_000})


def produce(s: Script, step: str, topic: str, partition: int, records: bytes, **extra: Any) -> Any:
    body = {
        "acks": -1,
        "timeout": 10_000,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": records}]}
        ],
        **extra,
    }
    return s.call(step, PRODUCE, 11, body)


def fetch(s: Script, step: str, topic: str, offset: int, *, isolation: int = 0) -> Any:
    body = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": isolation,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
    }
    return s.call(step, FETCH, 12, body)


def list_offsets(s: Script, step: str, topic: str, timestamp: int, isolation: int = 0) -> Any:
    partition = {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}
    body = {
        "replica_id": -1,
        "isolation_level": isolation,
        "topics": [{"name": topic, "partitions": [partition]}],
    }
    return s.call(step, LIST_OFFSETS, 8, body)


def metadata(s: Script, step: str, *topics: str, auto_create: bool = False) -> Any:
    body = {
        "topics": [{"name": t} for t in topics],
        "allow_auto_topic_creation": auto_create,
    }
    return s.call(step, METADATA, 12, body)


# ---------------------------------------------------------------- the sequences


def api_versions(s: Script) -> None:
    """Which APIs and versions each broker advertises."""
    answer = s.conn.call(
        API_VERSIONS, 3, {"client_software_name": "c", "client_software_version": "1"}
    )
    s.note("error", answer["error_code"])
    s.note(
        "apis",
        {str(k["api_key"]): f"{k['min_version']}-{k['max_version']}" for k in answer["api_keys"]},
    )


def topic_lifecycle(s: Script) -> None:
    """Create, describe, grow and delete a topic, and every refusal on the way."""
    create(s, "create", "a", 3)
    create(s, "create twice", "a", 3)
    create(s, "create bad name", "[a b]", 1)
    create(s, "create dot", "[.]", 1)
    create(s, "create dot dot", "[..]", 1)
    create(s, "create too long", f"[{'x' * 250}]", 1)
    create(s, "create zero partitions", "z", 0)
    create(s, "create replication 3", "r", 1, replication_factor=3)
    create(s, "create with config", "c", 1, configs=[{"name": "retention.ms", "value": "1000"}])
    create(s, "create bad config", "bc", 1, configs=[{"name": "retention.ms", "value": "x"}])
    create(s, "create unknown config", "uc", 1, configs=[{"name": "no.such", "value": "1"}])
    body = {
        "topics": [{"name": s.name("v"), "num_partitions": 2, "replication_factor": 1}],
        "timeout": 10_000,
        "validate_only": True,
    }
    s.call("create validate only", CREATE_TOPICS, 7, body)
    metadata(s, "metadata", s.name("a"), s.name("v"), s.name("missing"))
    grow = {"name": s.name("a"), "count": 5, "assignments": None}
    s.call("grow", CREATE_PARTITIONS, 3, {"topics": [grow], "timeout": 10_000})
    shrink = {"name": s.name("a"), "count": 2, "assignments": None}
    s.call("shrink", CREATE_PARTITIONS, 3, {"topics": [shrink], "timeout": 10_000})
    missing = {"name": s.name("missing"), "count": 2, "assignments": None}
    s.call("grow missing", CREATE_PARTITIONS, 3, {"topics": [missing], "timeout": 10_000})
    metadata(s, "metadata grown", s.name("a"))
    deleted = [{"name": s.name("a")}, {"name": s.name("missing")}]
    s.call("delete", DELETE_TOPICS, 6, {"topics": deleted, "timeout": 10_000})


def produce_and_fetch(s: Script) -> None:
    """Records in, read back byte for byte, offsets listed, and bad batches refused."""
    topic = s.name("p")
    create(s, "create", "p", 1)
    produce(s, "produce", topic, 0, batch([b"one", b"two", b"three"]))
    produce(s, "produce second", topic, 0, batch([b"four"], compression="lz4"))
    fetch(s, "fetch from 0", topic, 0)
    fetch(s, "fetch from 3", topic, 3)
    fetch(s, "fetch at end", topic, 4)
    fetch(s, "fetch past end", topic, 9)
    empty = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": []}],
    }
    s.call("fetch a topic with no partitions", FETCH, 12, empty)
    for name, timestamp in (("earliest", -2), ("latest", -1), ("max timestamp", -3), ("now", NOW)):
        list_offsets(s, f"offsets {name}", topic, timestamp)
    list_offsets(s, "offsets after all", topic, NOW + 60_000)
    produce(s, "produce unknown partition", topic, 7, batch([b"x"]))
    corrupt = bytearray(batch([b"x"]))
    corrupt[-1] ^= 0xFF
    produce(s, "produce corrupt", topic, 0, bytes(corrupt))
    produce(s, "produce no timestamp", topic, 0, batch([b"t"], timestamp=-1))
    produce(s, "produce negative timestamp", topic, 0, batch([b"n"], timestamp=-5))
    produce(s, "produce far future", topic, 0, batch([b"f"], timestamp=NOW + 7_200_000))
    for epoch in (0, 5):
        asked = {"partition": 0, "current_leader_epoch": -1, "leader_epoch": epoch}
        body = {"replica_id": -1, "topics": [{"topic": topic, "partitions": [asked]}]}
        s.call(f"end of epoch {epoch}", OFFSET_FOR_LEADER_EPOCH, 4, body)
    missing = {"topic": s.name("missing"), "partitions": [{"partition": 0, "leader_epoch": 0}]}
    s.call("end of epoch, missing topic", OFFSET_FOR_LEADER_EPOCH, 4, {"topics": [missing]})
    trim = {"name": topic, "partitions": [{"partition_index": 0, "offset": 2}]}
    s.call("delete records", DELETE_RECORDS, 2, {"topics": [trim], "timeout": 10_000})
    fetch(s, "fetch below start", topic, 0)
    list_offsets(s, "offsets earliest after delete", topic, -2)
    compacted = {"name": "cleanup.policy", "value": "compact"}
    create(s, "create compacted", "pc", 1, configs=[compacted])
    keyless = batch([b"a", b"b", b"c", b"d"], keyless=(1, 3))
    produce(s, "produce keyless to compacted", s.name("pc"), 0, keyless)
    fetch(s, "fetch compacted", s.name("pc"), 0)


def idempotent_producer(s: Script) -> None:
    """Sequences: in order, a retried batch answered with its first offsets, a gap refused."""
    topic = s.name("i")
    create(s, "create", "i", 1)
    answer = s.call(
        "init",
        INIT_PRODUCER_ID,
        4,
        {
            "transactional_id": None,
            "transaction_timeout": -1,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
    pid, epoch = answer["producer_id"], answer["producer_epoch"]
    first = batch([b"a", b"b"], producer=(pid, epoch, 0))
    produce(s, "first", topic, 0, first)
    produce(s, "retry of first", topic, 0, first)
    produce(s, "second", topic, 0, batch([b"c"], producer=(pid, epoch, 2)))
    produce(s, "gap", topic, 0, batch([b"d"], producer=(pid, epoch, 9)))
    produce(s, "old epoch", topic, 0, batch([b"e"], producer=(pid, epoch - 1 if epoch else 5, 0)))
    fetch(s, "fetch", topic, 0)


def committed_offsets(s: Script) -> None:
    """Standalone offset commits (no group members): stored with metadata and leader epoch."""
    topic, group = s.name("o"), s.name("g")
    create(s, "create", "o", 2)
    s.call("find coordinator", FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
    partitions = [
        {
            "partition_index": 0,
            "committed_offset": 5,
            "committed_leader_epoch": 3,
            "committed_metadata": "m",
        },
        {
            "partition_index": 1,
            "committed_offset": 0,
            "committed_leader_epoch": -1,
            "committed_metadata": None,
        },
    ]
    commit = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": partitions}],
    }
    s.call("commit", OFFSET_COMMIT, 8, commit)
    wanted = [{"name": topic, "partition_indexes": [0, 1]}]
    s.call(
        "fetch offsets",
        OFFSET_FETCH,
        8,
        {"groups": [{"group_id": group, "topics": wanted}], "require_stable": False},
    )
    s.call(
        "fetch all offsets",
        OFFSET_FETCH,
        8,
        {"groups": [{"group_id": group, "topics": None}], "require_stable": False},
    )
    s.call(
        "fetch unknown group",
        OFFSET_FETCH,
        8,
        {"groups": [{"group_id": s.name("nobody"), "topics": wanted}], "require_stable": False},
    )
    stale = {**commit, "generation_id_or_member_epoch": 4, "member_id": "someone"}
    s.call("commit as unknown member", OFFSET_COMMIT, 8, stale)
    s.call(
        "describe group",
        DESCRIBE_GROUPS,
        5,
        {"groups": [group], "include_authorized_operations": False},
    )
    drop = {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 1}]}]}
    s.call("offset delete", OFFSET_DELETE, 0, drop)
    s.call(
        "fetch after offset delete",
        OFFSET_FETCH,
        8,
        {"groups": [{"group_id": group, "topics": wanted}], "require_stable": False},
    )
    s.call("delete group", DELETE_GROUPS, 2, {"groups_names": [group]})
    s.call("delete group again", DELETE_GROUPS, 2, {"groups_names": [group]})


def topic_configs(s: Script) -> None:
    """A topic's configs described, changed, and refused when wrong."""
    topic = s.name("cfg")
    create(s, "create", "cfg", 1)
    describe_configs(s, "describe", topic)
    alter_config(s, "set retention", topic, "retention.ms", "3600000")
    describe_configs(s, "describe after", topic)
    alter_config(s, "set bad value", topic, "retention.ms", "soon")
    alter_config(s, "set on missing topic", s.name("missing"), "retention.ms", "1")
    alter_config(s, "delete retention", topic, "retention.ms", None, operation=1)
    describe_configs(s, "describe reset", topic)
    # Every topic of the cluster is listed, and other tests' topics share tidelog's: only
    # this one's entry is compared.
    listed = s.conn.call(LIST_CONFIG_RESOURCES, 1, {"resource_types": [2]})
    mine = [r for r in listed["config_resources"] if r["resource_name"] == topic]
    s.note("list topic config resources", {"error_code": listed["error_code"], "mine": mine})
    for kind in (16, 32, 8):
        s.call(
            f"list config resources of type {kind}",
            LIST_CONFIG_RESOURCES,
            1,
            {"resource_types": [kind]},
        )
    s.call(
        "list config resources of an unknown type",
        LIST_CONFIG_RESOURCES,
        1,
        {"resource_types": [99]},
    )
    s.call("list client metrics resources (v0)", LIST_CONFIG_RESOURCES, 0, {})


def describe_configs(s: Script, step: str, topic: str) -> Any:
    resource = {
        "resource_type": 2,
        "resource_name": topic,
        "configuration_keys": ["retention.ms", "cleanup.policy", "max.message.bytes"],
    }
    body = {"resources": [resource], "include_synonyms": False, "include_documentation": False}
    return s.call(step, DESCRIBE_CONFIGS, 4, body)


def alter_config(
    s: Script, step: str, topic: str, name: str, value: str | None, *, operation: int = 0
) -> Any:
    """IncrementalAlterConfigs of one topic config: SET (0) by default, DELETE (1)."""
    config = {"name": name, "config_operation": operation, "value": value}
    resource = {"resource_type": 2, "resource_name": topic, "configs": [config]}
    body = {"resources": [resource], "validate_only": False}
    return s.call(step, INCREMENTAL_ALTER_CONFIGS, 1, body)


def replicas(s: Script) -> None:
    """A one-replica cluster's answers to the replica APIs."""
    topic = s.name("rep")
    create(s, "create", "rep", 1)
    node = metadata(s, "metadata", topic)["topics"][0]["partitions"][0]["leader_id"]
    same = {"name": topic, "partitions": [{"partition_index": 0, "replicas": [node]}]}
    s.call(
        "reassign to current replica", ALTER_REASSIGNMENTS, 0, {"timeout": 10_000, "topics": [same]}
    )
    other = {"name": topic, "partitions": [{"partition_index": 0, "replicas": [node + 1]}]}
    s.call("reassign elsewhere", ALTER_REASSIGNMENTS, 0, {"timeout": 10_000, "topics": [other]})
    cancel = {"name": topic, "partitions": [{"partition_index": 0, "replicas": None}]}
    s.call("cancel reassignment", ALTER_REASSIGNMENTS, 0, {"timeout": 10_000, "topics": [cancel]})
    s.call("list reassignments", LIST_REASSIGNMENTS, 0, {"timeout": 10_000, "topics": None})
    elect = {"topic": topic, "partitions": [0]}
    s.call(
        "elect preferred",
        ELECT_LEADERS,
        2,
        {"election_type": 0, "topic_partitions": [elect], "timeout": 10_000},
    )


def transactions(s: Script) -> None:
    """A transaction committed, one aborted, and what read_committed then sees."""
    topic, txn = s.name("t"), s.name("txn")
    create(s, "create", "t", 1)
    s.call("find coordinator", FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [txn]})
    answer = s.call(
        "init",
        INIT_PRODUCER_ID,
        4,
        {
            "transactional_id": txn,
            "transaction_timeout": 60_000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
    pid, epoch = answer["producer_id"], answer["producer_epoch"]
    add = {
        "v3_and_below_transactional_id": txn,
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": topic, "partitions": [0]}],
    }
    produce(
        s,
        "produce outside the transaction",
        topic,
        0,
        batch([b"early"], producer=(pid, epoch, 0), transactional=True),
        transactional_id=txn,
    )
    s.call("add partition", ADD_PARTITIONS_TO_TXN, 3, add)
    produce(
        s,
        "produce committed",
        topic,
        0,
        batch([b"c1", b"c2"], producer=(pid, epoch, 0), transactional=True),
        transactional_id=txn,
    )
    s.call(
        "commit",
        END_TXN,
        3,
        {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": True},
    )
    s.call("add partition again", ADD_PARTITIONS_TO_TXN, 3, add)
    produce(
        s,
        "produce aborted",
        topic,
        0,
        batch([b"a1"], producer=(pid, epoch, 2), transactional=True),
        transactional_id=txn,
    )
    list_offsets(s, "stable offset while open", topic, -1, isolation=1)
    s.call(
        "abort",
        END_TXN,
        3,
        {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": False},
    )
    s.call(
        "abort again",
        END_TXN,
        3,
        {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": False},
    )
    s.call(
        "end with a wrong epoch",
        END_TXN,
        3,
        {
            "transactional_id": txn,
            "producer_id": pid,
            "producer_epoch": epoch + 7,
            "committed": True,
        },
    )
    fetch(s, "read committed", topic, 0, isolation=1)
    fetch(s, "read uncommitted", topic, 0, isolation=0)
    list_offsets(s, "stable offset", topic, -1, isolation=1)
    describe = {"topics": [{"name": topic, "partition_indexes": [0]}]}
    s.call("describe producers", DESCRIBE_PRODUCERS, 0, describe)


def subscription(*topics: str) -> bytes:
    """ConsumerProtocol's subscription, v0: the topics, no user data."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1)


def assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocol's assignment, v0: one topic's partitions, no user data."""
    out = struct.pack(">hih", 0, 1, len(topic)) + topic.encode()
    out += struct.pack(">i", len(partitions)) + b"".join(struct.pack(">i", p) for p in partitions)
    return out + struct.pack(">i", -1)


def classic_group(s: Script) -> None:
    """A classic consumer's life in its group: join (KIP-394's member id first), sync, heartbeat,
    commit, describe, leave; and the refusals on the way."""
    topic, group = s.name("cg"), s.name("cgroup")
    create(s, "create", "cg", 2)
    s.call("find coordinator", FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
    join = {
        "group_id": group,
        "session_timeout": 10_000,
        "rebalance_timeout": 10_000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription(topic)}],
    }
    s.call("join too short a session", JOIN_GROUP, 9, {**join, "session_timeout": 50})
    first = s.call("join", JOIN_GROUP, 9, join)
    member = first["member_id"]
    joined = s.call("join with the member id", JOIN_GROUP, 9, {**join, "member_id": member})
    generation = joined["generation_id"]
    mine = [{"member_id": member, "assignment": assignment(topic, [0, 1])}]
    sync = {
        "group_id": group,
        "generation_id": generation,
        "member_id": member,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": mine,
    }
    s.call("sync with a wrong generation", SYNC_GROUP, 5, {**sync, "generation_id": generation + 5})
    s.call("sync", SYNC_GROUP, 5, sync)
    beat = {"group_id": group, "generation_id": generation, "member_id": member}
    s.call("heartbeat", HEARTBEAT, 4, beat)
    s.call("heartbeat as a stranger", HEARTBEAT, 4, {**beat, "member_id": "stranger"})
    commit = {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
    }
    s.call("commit as the member", OFFSET_COMMIT, 8, commit)
    s.call("describe", DESCRIBE_GROUPS, 5, {"groups": [group]})
    s.call("delete while it has a member", DELETE_GROUPS, 2, {"groups_names": [group]})
    s.call("leave", LEAVE_GROUP, 5, {"group_id": group, "members": [{"member_id": member}]})
    s.call("heartbeat after leaving", HEARTBEAT, 4, beat)
    s.call("describe after leaving", DESCRIBE_GROUPS, 5, {"groups": [group]})


def consumer_group(s: Script) -> None:
    """A KIP-848 consumer's heartbeats: joining, its assignment, a fenced epoch, bad
    subscriptions, and leaving."""
    topic, group = s.name("kg"), s.name("kgroup")
    create(s, "create", "kg", 2)
    member = "conformance-member-01"  # v1: the client names itself
    beat = {
        "group_id": group,
        "member_id": member,
        "member_epoch": 0,
        "rebalance_timeout": 10_000,
        "subscribed_topic_names": [topic],
        "topic_partitions": [],
    }
    s.call(
        "subscribe to no name",
        CONSUMER_GROUP_HEARTBEAT,
        1,
        {**beat, "subscribed_topic_names": [""]},
    )
    # Whether the join's answer carries the partitions is timing on both sides: Kafka's when
    # its metadata image holds the new topic and its assignment interval has passed, tidelog's
    # when the state machine writes the target within the heartbeat's wait.
    joined = s.conn.call(CONSUMER_GROUP_HEARTBEAT, 1, beat)
    s.note("join", {k: v for k, v in joined.items() if k != "assignment"})
    s.call("stale epoch", CONSUMER_GROUP_HEARTBEAT, 1, {**beat, "member_epoch": 7})
    s.call("describe", CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group]})
    s.call("leave", CONSUMER_GROUP_HEARTBEAT, 1, {**beat, "member_epoch": -1})


def group_configs(s: Script) -> None:
    """A group's own configs (GROUP resources): described before the group exists, set within
    and outside the broker's bounds, lived by at a member's heartbeat, reset, and listed.

    Kafka applies a change once its controller's record reaches the broker, so a read right
    after a write may still show the old value there: a describe or listing that expects a
    change asks again until it shows it (as a client polls), on both brokers alike."""
    group, topic = s.name("cfg-group"), s.name("gct")
    session, heartbeat = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"

    def describe(step: str, expect: dict[str, str] | None = None, name: str = group) -> None:
        resource = {
            "resource_type": 32,
            "resource_name": name,
            "configuration_keys": [session, heartbeat, "share.auto.offset.reset"],
        }
        body = {"resources": [resource], "include_synonyms": True, "include_documentation": True}
        if expect is None:
            s.call(step, DESCRIBE_CONFIGS, 4, body)
            return
        s.note(step, _settled(lambda: s.conn.call(DESCRIBE_CONFIGS, 4, body), _values, expect))

    def alter(step: str, *configs: tuple[str, int, str | None], only: bool = False) -> None:
        resource = {
            "resource_type": 32,
            "resource_name": group if step != "alter the default group" else "",
            "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in configs],
        }
        s.call(step, INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [resource], "validate_only": only})

    def listed(step: str, expect: bool) -> None:
        def mine(answer: Any) -> dict[str, str]:
            found = [r for r in answer["config_resources"] if r["resource_name"] == group]
            return {"listed": str(bool(found))}

        answer = _settled(
            lambda: s.conn.call(LIST_CONFIG_RESOURCES, 1, {"resource_types": [32]}),
            mine,
            {"listed": str(expect)},
        )
        s.note(step, {"error_code": answer["error_code"], **mine(answer)})

    describe("describe a group never seen")
    describe("describe the default group", name="")
    alter("set the session", (session, 0, "50000"))
    describe("describe after setting", {session: "50000"})
    listed("list group config resources", True)
    alter("set past the maximum", (session, 0, "999999"))
    alter("set below the minimum", (session, 0, "500"))
    alter("set not a number", (session, 0, "soon"))
    alter("set an unknown config", ("no.such", 0, "1"))
    alter("set without a value", (session, 0, None))
    alter("append to a number", (heartbeat, 2, "6000"))
    alter("set twice", (session, 0, "20000"), (session, 0, "21000"))
    alter("heartbeat as long as the session", (heartbeat, 0, "10000"), (session, 0, "10000"))
    alter("set a share group config", ("share.auto.offset.reset", 0, "earliest"))
    alter("alter the default group", (session, 0, "20000"))
    alter("validate only", (session, 0, "20000"), only=True)
    alter("set the heartbeat", (heartbeat, 0, "4000"))
    describe("describe after validating", {session: "50000", heartbeat: "4000"})
    create(s, "create", "gct", 1)
    beat = {
        "group_id": group,
        "member_id": "conformance-member-02",
        "member_epoch": 0,
        "rebalance_timeout": 10_000,
        "subscribed_topic_names": [topic],
        "topic_partitions": [],
    }
    joined = s.conn.call(CONSUMER_GROUP_HEARTBEAT, 1, beat)
    s.note("a member is told the group's interval", joined["heartbeat_interval"])
    s.conn.call(CONSUMER_GROUP_HEARTBEAT, 1, {**beat, "member_epoch": -1})
    s.call("delete the group", DELETE_GROUPS, 2, {"groups_names": [group]})
    describe("configs outlive the group", {session: "50000", heartbeat: "4000"})
    alter("delete the session", (session, 1, None))
    describe("describe after deleting", {session: "12000", heartbeat: "4000"})
    replaced = {
        "resource_type": 32,
        "resource_name": group,
        "configs": [{"name": heartbeat, "value": "6000"}],
    }
    s.call("alter configs", 33, 2, {"resources": [replaced], "validate_only": False})
    describe("describe after altering", {session: "12000", heartbeat: "6000"})
    s.call(
        "alter configs to none",
        33,
        2,
        {"resources": [{**replaced, "configs": []}], "validate_only": False},
    )
    listed("list once none is set", False)


def broker_configs(s: Script) -> None:
    """Dynamic broker configs: one broker's own (set, appended to, deleted, subtracted from,
    replaced whole), the cluster's default and a topic living by it, and what is refused."""
    (broker,) = s.conn.call(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})[
        "brokers"
    ]
    node = str(broker["node_id"])
    threads, policy, after = (
        "background.threads",
        "log.cleanup.policy",
        "log.message.timestamp.after.max.ms",
    )

    def own(answer: Any) -> Any:
        """The answer with this broker's id, which the two clusters number apart, as ``own``."""
        for result in answer.get("results", answer.get("responses", [])):
            if result["resource_name"] == node:
                result["resource_name"] = "own"
        return answer

    def alter(step: str, name: str, *configs: tuple[str, int, str | None], only: bool = False):
        resource = {
            "resource_type": 4,
            "resource_name": name,
            "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in configs],
        }
        body = {"resources": [resource], "validate_only": only}
        s.note(step, own(s.conn.call(INCREMENTAL_ALTER_CONFIGS, 1, body)))

    def describe(step: str, name: str, keys: list[str], expect: dict[str, str]) -> None:
        resource = {"resource_type": 4, "resource_name": name, "configuration_keys": keys}
        body = {"resources": [resource], "include_synonyms": True, "include_documentation": False}
        answer = _settled(lambda: s.conn.call(DESCRIBE_CONFIGS, 4, body), _values, expect)
        s.note(step, own(answer))

    alter("set and append", node, (threads, 0, "9"), (policy, 2, "compact"))
    describe("describe set", node, [threads, policy], {threads: "9", policy: "delete,compact"})
    alter("delete and subtract", node, (threads, 1, None), (policy, 3, "compact"))
    describe("describe deleted", node, [threads, policy], {threads: "10", policy: "delete"})
    alter("set not a number", node, (threads, 0, "many"))
    alter("set below the least", node, (threads, 0, "0"))
    alter("set a static config", node, ("num.partitions", 0, "3"))
    alter("append to a number", node, (threads, 2, "1"))
    alter("validate only", node, (threads, 0, "7"), only=True)
    alter("set on a broker that is not", "7", (threads, 0, "3"))
    alter("set on a name that is no id", "x", (threads, 0, "3"))
    describe("describe validated", node, [threads], {threads: "10"})
    legacy = {"resource_type": 4, "resource_name": node}
    kerberos = [{"name": "sasl.kerberos.min.time.before.relogin", "value": "58000"}]
    body = {"resources": [{**legacy, "configs": kerberos}], "validate_only": False}
    s.note("replace the set", own(s.conn.call(33, 2, body)))
    describe(
        "describe replaced",
        node,
        ["sasl.kerberos.min.time.before.relogin", policy],
        {"sasl.kerberos.min.time.before.relogin": "58000", policy: "delete"},
    )
    body = {"resources": [{**legacy, "configs": []}], "validate_only": False}
    s.note("replace the set with none", own(s.conn.call(33, 2, body)))
    topic = s.name("bct")
    create(s, "create", "bct", 1)
    alter("set the cluster default", "", (after, 0, "7200000"))
    describe("describe the cluster default", "", [after], {after: "7200000"})
    resource = {"resource_type": 2, "resource_name": topic, "configuration_keys": [after[4:]]}
    body = {"resources": [resource], "include_synonyms": False, "include_documentation": False}
    shown = {after[4:]: "7200000"}
    s.note("a topic lives by it", _settled(lambda: s.conn.call(32, 4, body), _values, shown))
    alter("delete the cluster default", "", (after, 1, None))
    shown = {after[4:]: "3600000"}
    s.note("a topic is back to Kafka's", _settled(lambda: s.conn.call(32, 4, body), _values, shown))


def _values(answer: Any) -> dict[str, str]:
    """A DescribeConfigs answer's values by config name."""
    return {str(c["name"]): str(c["value"]) for r in answer["results"] for c in r["configs"]}


def _settled(
    ask: Callable[[], Any], seen: Callable[[Any], dict[str, str]], expect: dict[str, str]
) -> Any:
    """``ask``'s answer once ``seen`` in it shows ``expect``, or its last after 10 s."""
    deadline = time.monotonic() + 10
    while True:
        answer = ask()
        shown = seen(answer)
        if all(shown.get(k) == v for k, v in expect.items()) or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


SEQUENCES = {
    sequence.__name__: sequence
    for sequence in (
        api_versions,
        topic_lifecycle,
        produce_and_fetch,
        idempotent_producer,
        committed_offsets,
        topic_configs,
        replicas,
        transactions,
        classic_group,
        consumer_group,
        group_configs,
        broker_configs,
    )
}
