"""Every admin API a Kafka tool calls, through the tools' own clients (kafka-python's
KafkaAdminClient and confluent-kafka's AdminClient) against `tidelog dev`, each answered as a
Kafka cluster of one replica per partition answers it (docs/kafka.md's table)."""

from __future__ import annotations

import socket
import time
import uuid

import pytest
from confluent_kafka import OFFSET_END, ElectionType, KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ResourcePatternType,
)
from confluent_kafka.admin import ConfigResource as RdConfigResource
from confluent_kafka.admin import ResourceType as RdResourceType
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewTopic,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import (
    ElectionNotNeededError,
    InvalidReplicationAssignmentError,
    NoError,
    NoReassignmentInProgressError,
    SecurityDisabledError,
)
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.structs import OffsetAndMetadata
from tests.functional.test_fetch_api import fetch, produce
from tests.functional.test_produce_api import call
from tests.support.kafka_wire import brokers, exchange, receive_frame
from tests.support.kio_wire import Connection

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

INVALID_REQUEST = 42


@pytest.fixture
def admin(dev):
    client = KafkaAdminClient(bootstrap_servers=dev.bootstrap)
    yield client
    client.close()


@pytest.fixture
def rd_admin(dev):
    return AdminClient({"bootstrap.servers": dev.bootstrap})


@pytest.fixture
def topic(dev, admin):
    """A topic of two partitions, ten records in partition 0."""
    name = f"adm-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 2, 1)])
    producer = KafkaProducer(bootstrap_servers=dev.bootstrap)
    for i in range(10):
        producer.send(name, value=b"v%d" % i, partition=0)
    producer.flush()
    producer.close()
    return name


def _earliest(dev, name: str, partition: int) -> int:
    return call(dev, "GET", f"/v1/topics/{name}/partitions/{partition}/offsets?at=earliest")[1][
        "offset"
    ]


# -- DeleteRecords --------------------------------------------------------------------------


def test_delete_records_moves_the_log_start_for_fetch_and_list_offsets(dev, admin, topic):
    answer = admin.delete_records({TopicPartition(topic, 0): 4})
    assert answer[TopicPartition(topic, 0)]["low_watermark"] == 4
    assert _earliest(dev, topic, 0) == 4
    consumer = KafkaConsumer(bootstrap_servers=dev.bootstrap, auto_offset_reset="earliest")
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    assert consumer.beginning_offsets([partition]) == {partition: 4}
    consumer.seek(partition, 1)  # below the start: out of range, reset to the earliest
    values = [r.value for r in _poll(consumer, 6)]
    consumer.close()
    assert values == [b"v%d" % i for i in range(4, 10)]


def _poll(consumer, wanted: int):
    got = []
    for _ in range(40):
        for records in consumer.poll(timeout_ms=500).values():
            got += records
        if len(got) >= wanted:
            break
    return got


def test_librdkafka_deletes_records_to_the_high_watermark(dev, rd_admin, topic):
    futures = rd_admin.delete_records([RdTopicPartition(topic, 0, OFFSET_END)])
    (deleted,) = [f.result(30) for f in futures.values()]
    assert deleted.low_watermark == 10
    assert _earliest(dev, topic, 0) == 10


def test_deleting_beyond_the_end_is_out_of_range_and_changes_nothing(dev, rd_admin, topic):
    futures = rd_admin.delete_records([RdTopicPartition(topic, 0, 11)])
    with pytest.raises(KafkaException, match="OFFSET_OUT_OF_RANGE"):
        next(iter(futures.values())).result(30)
    assert _earliest(dev, topic, 0) == 0


def test_the_http_api_and_the_cli_delete_records_too(dev, topic):
    status, answer = call(
        dev,
        "POST",
        f"/v1/topics/{topic}/delete-records",
        {"partitions": [{"partition": 0, "offset": 3}, {"partition": 1, "offset": 5}]},
    )
    assert status == 200, answer
    assert answer["partitions"][0] == {"partition": 0, "log_start_offset": 3}
    assert answer["partitions"][1]["error"] == "OFFSET_OUT_OF_RANGE"
    assert _earliest(dev, topic, 0) == 3
    status, refused = call(
        dev, "POST", f"/v1/topics/{topic}/delete-records", {"partitions": [{"partition": 0}]}
    )
    assert status == 400, refused


# -- configs --------------------------------------------------------------------------------


def test_configs_are_described_with_types_documentation_and_synonyms(dev, rd_admin, topic):
    rd_admin.incremental_alter_configs(
        [
            RdConfigResource(
                RdResourceType.TOPIC,
                topic,
                incremental_configs=[
                    ConfigEntry(
                        "retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET
                    )
                ],
            )
        ]
    )[RdConfigResource(RdResourceType.TOPIC, topic)].result(30)
    resource = RdConfigResource(RdResourceType.TOPIC, topic)
    entries = rd_admin.describe_configs([resource])[resource].result(30)
    retention = entries["retention.ms"]
    assert retention.value == "3600000"
    assert retention.source == 1  # DYNAMIC_TOPIC_CONFIG
    assert [(s.name, s.value) for s in retention.synonyms.values()] == [
        ("retention.ms", "3600000"),
        ("log.retention.ms", "604800000"),
    ]
    assert not retention.is_read_only
    assert not retention.is_sensitive
    assert entries["cleanup.policy"].source == 5  # DEFAULT_CONFIG


def test_kafka_python_reads_each_configs_type_and_the_brokers_configs(dev, admin, topic):
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    described = admin.describe_configs([resource], config_filter="all")["topic"][topic]
    assert described["retention.ms"]["config_type"] == "LONG"
    assert described["segment.bytes"]["config_type"] == "INT"
    assert described["cleanup.policy"]["config_type"] == "LIST"
    assert described["compression.type"]["config_type"] == "STRING"
    (node,) = brokers(dev.bootstrap)
    broker_id = str(node)
    broker = ConfigResource(ConfigResourceType.BROKER, broker_id)
    configs = admin.describe_configs([broker], config_filter="all")["broker"][broker_id]
    for name in ("advertised.listeners", "num.partitions"):
        assert configs[name]["read_only"], name
    assert not configs["log.retention.ms"]["read_only"]  # a dynamic broker config
    assert configs["auto.create.topics.enable"]["value"] == "true"  # tidelog dev's default
    assert configs["auto.create.topics.enable"]["config_type"] == "BOOLEAN"
    assert configs["default.replication.factor"]["value"] == "1"
    assert configs["advertised.listeners"]["value"] == f"PLAINTEXT://{dev.bootstrap}"


def test_incremental_alter_appends_deletes_and_validates_only(dev, admin, topic):
    resource = ConfigResource(
        ConfigResourceType.TOPIC, topic, configs={"cleanup.policy": ("APPEND", "compact")}
    )
    assert admin.alter_configs([resource], incremental=True)["topic"][topic] == "OK"
    assert _configs(dev, topic)["cleanup.policy"] == "compact,delete"
    reset = ConfigResource(
        ConfigResourceType.TOPIC, topic, configs={"cleanup.policy": ("DELETE", None)}
    )
    admin.alter_configs([reset], incremental=True)
    assert _configs(dev, topic)["cleanup.policy"] == "delete"
    dry = ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "5"})
    admin.alter_configs([dry], validate_only=True, incremental=True)
    assert _configs(dev, topic)["retention.ms"] == "604800000"


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_legacy_alter_configs_replaces_the_whole_set(dev, rd_admin, topic):
    """librdkafka's AlterConfigs sends only what it is given (kafka-python's carries the other
    set configs along, knowing the broker resets them)."""
    for configs in ({"retention.ms": "1000"}, {"segment.ms": "60000"}):
        resource = RdConfigResource(RdResourceType.TOPIC, topic, set_config=configs)
        rd_admin.alter_configs([resource])[resource].result(30)
    configs = _configs(dev, topic)
    assert configs["segment.ms"] == "60000"
    assert configs["retention.ms"] == "604800000"  # not named: back to its default


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_a_bad_config_is_refused_and_changes_nothing(dev, rd_admin, topic):
    resource = RdConfigResource(RdResourceType.TOPIC, topic, set_config={"retention.ms": "soon"})
    with pytest.raises(KafkaException, match="INVALID_CONFIG"):
        rd_admin.alter_configs([resource])[resource].result(30)
    (node,) = brokers(dev.bootstrap)
    broker = RdConfigResource(RdResourceType.BROKER, str(node), set_config={"num.partitions": "3"})
    with pytest.raises(KafkaException, match=r"Cannot update these configs dynamically"):
        rd_admin.alter_configs([broker])[broker].result(30)
    assert _configs(dev, topic)["retention.ms"] == "604800000"


def _broker_entries(rd_admin, name: str) -> dict[str, ConfigEntry]:
    resource = RdConfigResource(RdResourceType.BROKER, name)
    return rd_admin.describe_configs([resource])[resource].result(30)


def test_librdkafka_sets_and_deletes_one_agents_dynamic_configs(dev, rd_admin):
    """librdkafka's own admin test (0081) on a broker resource: set a thread pool's size and
    append to a list, then delete and subtract, then the legacy AlterConfigs."""
    (node,) = brokers(dev.bootstrap)
    name = str(node)

    def alter(*entries):
        resource = RdConfigResource(RdResourceType.BROKER, name, incremental_configs=entries)
        rd_admin.incremental_alter_configs([resource])[resource].result(30)

    alter(
        ConfigEntry("background.threads", "9", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry(
            "log.cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND
        ),
    )
    try:
        entries = _broker_entries(rd_admin, name)
        assert entries["background.threads"].value == "9"
        assert entries["background.threads"].source == 2  # DYNAMIC_BROKER_CONFIG
        assert entries["log.cleanup.policy"].value == "delete,compact"
        alter(
            ConfigEntry("background.threads", None, incremental_operation=AlterConfigOpType.DELETE),
            ConfigEntry(
                "log.cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SUBTRACT
            ),
        )
        entries = _broker_entries(rd_admin, name)
        assert (entries["background.threads"].value, entries["background.threads"].source) == (
            "10",
            5,  # DEFAULT_CONFIG: Kafka's
        )
        assert entries["log.cleanup.policy"].value == "delete"
        legacy = RdConfigResource(
            RdResourceType.BROKER,
            name,
            set_config={"sasl.kerberos.min.time.before.relogin": "58000"},
        )
        with pytest.warns(DeprecationWarning, match="alter_configs"):
            rd_admin.alter_configs([legacy])[legacy].result(30)
        entries = _broker_entries(rd_admin, name)
        assert entries["sasl.kerberos.min.time.before.relogin"].value == "58000"
        assert entries["log.cleanup.policy"].source == 5  # the legacy call replaced the set
        refused = RdConfigResource(
            RdResourceType.BROKER,
            name,
            incremental_configs=[
                ConfigEntry("background.threads", "0", incremental_operation=AlterConfigOpType.SET)
            ],
        )
        with pytest.raises(KafkaException, match="Value must be at least 1"):
            rd_admin.incremental_alter_configs([refused])[refused].result(30)
    finally:
        wipe = RdConfigResource(RdResourceType.BROKER, name, set_config={})
        with pytest.warns(DeprecationWarning, match="alter_configs"):
            rd_admin.alter_configs([wipe])[wipe].result(30)


def test_the_clusters_dynamic_default_is_every_topics_default(dev, topic):
    """log.message.timestamp.type set on the cluster's default (broker resource "") is the
    topic's timestamp type from then on: described as DYNAMIC_DEFAULT_BROKER_CONFIG and lived
    by on produce, until it is deleted."""
    wire = Connection(dev.bootstrap)

    def alter_default(op, value):
        config = {"name": "log.message.timestamp.type", "config_operation": op, "value": value}
        resource = {"resource_type": 4, "resource_name": "", "configs": [config]}
        answer = wire.call(44, 1, {"resources": [resource], "validate_only": False})
        assert answer["responses"][0]["error_code"] == "NONE", answer

    def described(kind, name):
        resource = {"resource_type": kind, "resource_name": name, "configuration_keys": None}
        body = {"resources": [resource], "include_synonyms": True}
        (result,) = wire.call(32, 4, body)["results"]
        return {c["name"]: (c["value"], c["config_source"]) for c in result["configs"]}

    alter_default(0, "LogAppendTime")  # SET
    try:
        assert described(4, "") == {"log.message.timestamp.type": ("LogAppendTime", 3)}
        assert described(2, topic)["message.timestamp.type"] == ("LogAppendTime", 3)
        old = 1_000_000_000_000  # 2001: CreateTime would keep it; LogAppendTime replaces it
        deadline = time.monotonic() + 10
        while True:  # a produce path reads the cluster's defaults a second or two late
            (offset,) = produce(dev, topic, ["v"], partition=1, timestamp=old)
            if fetch(dev, topic, offset, partition=1)[1]["records"][0]["timestamp"] != old:
                break
            assert time.monotonic() < deadline, "the cluster's default never reached produce"
            time.sleep(0.5)
    finally:
        alter_default(1, None)  # DELETE
    assert described(4, "") == {}
    assert described(2, topic)["message.timestamp.type"] == ("CreateTime", 5)


def _configs(dev, name: str) -> dict[str, str]:
    return call(dev, "GET", f"/v1/topics/{name}")[1]["configs"]


# -- DescribeLogDirs and the replica APIs ---------------------------------------------------


def test_one_log_dir_holds_every_partition_with_its_size(dev, admin, topic):
    (node,) = brokers(dev.bootstrap)
    broker = ConfigResource(ConfigResourceType.BROKER, str(node))
    configured = admin.describe_configs([broker], config_filter="all")["broker"][str(node)]
    (answer,) = admin.describe_log_dirs(topic_partitions={topic: [0]})
    (log_dir,) = answer["log_dirs"]
    assert log_dir["log_dir"] == configured["log.dirs"]["value"]
    assert log_dir["log_dir"].startswith("s3://tidelog-")
    (described,) = log_dir["topics"]
    (partition,) = described["partitions"]
    sizes = call(dev, "GET", f"/v1/topics/{topic}?sizes=true")[1]["partitions"]
    assert partition["partition_size"] == sizes[0]["size_bytes"] > 0


def test_leaders_need_no_election_and_replicas_have_nowhere_to_move(dev, admin, rd_admin, topic):
    answer = admin.elect_leaders(0, {topic: [0, 1]}, raise_errors=False)
    ((_, errors),) = [
        (r.topic, [p.error_code for p in r.partition_result])
        for r in answer.replica_election_results
    ]
    assert errors == [ElectionNotNeededError.errno] * 2
    elected = rd_admin.elect_leaders(ElectionType.PREFERRED, [RdTopicPartition(topic, 0)])
    result = elected.result(30)
    assert next(iter(result.values())).code() == ElectionNotNeededError.errno

    moved = admin.alter_partition_reassignments(
        {TopicPartition(topic, 0): [1, 2, 3], TopicPartition(topic, 1): None}
    )
    assert moved[TopicPartition(topic, 0)] is InvalidReplicationAssignmentError
    assert moved[TopicPartition(topic, 1)] is NoReassignmentInProgressError
    assert admin.list_partition_reassignments() == {}

    (node,) = brokers(dev.bootstrap)
    # To the replica it has (any live agent serves it): a no-op, as Kafka answers one.
    kept = admin.alter_partition_reassignments({TopicPartition(topic, 0): [node]})
    assert kept == {TopicPartition(topic, 0): None}  # kafka-python: None for no error
    assert admin.list_partition_reassignments() == {}
    (answer,) = admin.describe_log_dirs()
    here = answer["log_dirs"][0]["log_dir"]
    dirs = admin.alter_replica_log_dirs(
        {(topic, 0, node): here, (topic, 1, node): "/var/kafka-logs"}
    )
    assert sorted(e.__name__ for e in dirs.values()) == ["LogDirNotFoundError", "NoError"]


def test_producers_are_described_from_the_partitions_state(dev, admin, topic):
    producer = KafkaProducer(bootstrap_servers=dev.bootstrap, enable_idempotence=True)
    for i in range(3):
        producer.send(topic, value=b"i%d" % i, partition=1)
    producer.flush()
    producer.close()
    states = admin.describe_producers([TopicPartition(topic, 1)])[TopicPartition(topic, 1)]
    (state,) = states.active_producers
    assert state.last_sequence == 2
    assert state.producer_epoch >= 0


# -- OffsetDelete ---------------------------------------------------------------------------


def test_a_groups_offsets_are_deleted_except_for_subscribed_topics(dev, admin, topic):
    group = f"od-{uuid.uuid4().hex[:6]}"
    consumer = KafkaConsumer(
        bootstrap_servers=dev.bootstrap, group_id=group, enable_auto_commit=False
    )
    consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    consumer.commit(
        {
            TopicPartition(topic, 0): OffsetAndMetadata(5, "", -1),
            TopicPartition(topic, 1): OffsetAndMetadata(0, "", -1),
        }
    )
    consumer.close()
    deleted = admin.delete_group_offsets(group, [TopicPartition(topic, 0)])
    assert deleted[TopicPartition(topic, 0)] is NoError
    left = admin.list_group_offsets(group)[group]
    assert list(left) == [TopicPartition(topic, 1)]


# -- ACLs and quotas ------------------------------------------------------------------------


def test_acls_answer_security_disabled_and_the_connection_goes_on(dev, admin, rd_admin):
    any_acl = ACLFilter(
        principal=None,
        host=None,
        operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(
            ResourceType.TOPIC, None, ACLResourcePatternType.ANY
        ),
    )
    with pytest.raises(SecurityDisabledError):
        admin.describe_acls(any_acl)
    # librdkafka reads a DescribeAcls error as no ACLs (as it does from Kafka); a creation
    # carries its own error.
    rd_filter = AclBindingFilter(
        RdResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert rd_admin.describe_acls(rd_filter).result(30) == []
    binding = AclBinding(
        RdResourceType.TOPIC,
        "t",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException, match="SECURITY_DISABLED"):
        rd_admin.create_acls([binding])[binding].result(30)
    # One connection: the refusal is an answer, and the next request is answered on it.
    host, port = dev.bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        acls = DescribeAclsRequest[1](
            resource_type_filter=1,  # ANY
            resource_name_filter=None,
            pattern_type_filter=1,  # ANY
            principal_filter=None,
            host_filter=None,
            operation=1,
            permission_type=1,
        )
        refused = _ask(sock, acls, DescribeAclsResponse, 1)
        assert refused.error_code == SecurityDisabledError.errno
        assert _ask(sock, ApiVersionsRequest[0](), ApiVersionsResponse, 0).error_code == 0


def _ask(sock: socket.socket, request, response_type, version: int):
    request.with_header(correlation_id=5, client_id="same-connection")
    sock.sendall(bytes(request.encode(header=True, framed=True)))
    return response_type.decode(receive_frame(sock), version=version, header=True)


def test_client_quotas_are_described_as_none_and_refused_with_why(dev):
    described = exchange(
        dev.bootstrap,
        DescribeClientQuotasRequest[1](components=[], strict=False),
        DescribeClientQuotasResponse,
        1,
    )
    assert (described.error_code, list(described.entries)) == (0, [])
    entity = AlterClientQuotasRequest.EntryData.EntityData(
        entity_type="client-id", entity_name="app"
    )
    op = AlterClientQuotasRequest.EntryData.OpData(
        key="producer_byte_rate", value=1024.0, remove=False
    )
    altered = exchange(
        dev.bootstrap,
        AlterClientQuotasRequest[1](
            entries=[AlterClientQuotasRequest.EntryData(entity=[entity], ops=[op])],
            validate_only=False,
        ),
        AlterClientQuotasResponse,
        1,
    )
    (entry,) = altered.entries
    assert entry.error_code == INVALID_REQUEST
    assert "quotas" in entry.error_message


def test_a_delete_topics_naming_no_topics_as_null_is_answered_with_none(dev):
    """Found by the protocol fuzzer: v0-5's null topic list closed the connection."""
    answer = exchange(
        dev.bootstrap,
        DeleteTopicsRequest[4](topic_names=None, timeout_ms=1000),
        DeleteTopicsResponse,
        4,
    )
    assert list(answer.responses) == []
