"""Kafka's admin clients against the agent: topics created, grown, described and deleted over
Kafka's protocol are the topics the HTTP API sees."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ResourceType
from confluent_kafka.admin import ConfigResource as RdConfigResource
from confluent_kafka.admin import NewTopic as RdNewTopic
from kafka.admin import (
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewPartitions,
    NewTopic,
)
from kafka.errors import (
    InvalidConfigurationError,
    InvalidPartitionsError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from tests.functional.test_produce_api import call
from tests.support.kafka_wire import brokers


@pytest.fixture
def admin(dev):
    client = KafkaAdminClient(bootstrap_servers=dev.bootstrap)
    yield client
    client.close()


def _name() -> str:
    return f"adm-{uuid.uuid4().hex[:8]}"


def test_a_topic_made_for_a_replicated_kafka_is_created_with_what_tidelog_keeps(dev, admin):
    name = _name()
    admin.create_topics(
        [
            NewTopic(
                name,
                num_partitions=4,
                replication_factor=3,
                topic_configs={"retention.ms": "3600000", "min.insync.replicas": "2"},
            )
        ]
    )
    status, topic = call(dev, "GET", f"/v1/topics/{name}")
    assert status == 200, topic
    assert len(topic["partitions"]) == 4
    assert topic["configs"]["retention.ms"] == "3600000"
    assert "min.insync.replicas" not in topic["configs"]

    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])


def test_validate_only_and_bad_configs_create_nothing(dev, admin):
    name = _name()
    admin.create_topics([NewTopic(name, 2, 1)], validate_only=True)
    assert call(dev, "GET", f"/v1/topics/{name}")[0] == 404
    with pytest.raises(InvalidConfigurationError):
        admin.create_topics([NewTopic(name, 2, 1, topic_configs={"retention.ms": "soon"})])
    with pytest.raises(InvalidConfigurationError):
        admin.create_topics([NewTopic(name, 2, 1, topic_configs={"no.such.config": "1"})])
    assert call(dev, "GET", f"/v1/topics/{name}")[0] == 404


def test_partitions_grow_and_never_shrink(dev, admin):
    name = _name()
    admin.create_topics([NewTopic(name, 2, 1)])
    admin.create_partitions({name: NewPartitions(5)})
    assert len(call(dev, "GET", f"/v1/topics/{name}")[1]["partitions"]) == 5
    with pytest.raises(InvalidPartitionsError):
        admin.create_partitions({name: NewPartitions(3)})


def test_configs_are_described_for_topics_and_the_broker(dev, admin):
    name = _name()
    admin.create_topics([NewTopic(name, 1, 1, topic_configs={"cleanup.policy": "compact"})])
    topic = ConfigResource(ConfigResourceType.TOPIC, name)
    every = admin.describe_configs([topic], config_filter="all")["topic"][name]
    assert every["cleanup.policy"]["value"] == "compact"
    assert every["retention.ms"]["value"] == "604800000"  # every default is listed
    assert set(admin.describe_configs([topic])["topic"][name]) == {"cleanup.policy"}
    (node_id,) = brokers(dev.bootstrap)
    broker_id = str(node_id)
    broker = ConfigResource(ConfigResourceType.BROKER, broker_id)
    configs = admin.describe_configs([broker], config_filter="all")["broker"][broker_id]
    assert configs["auto.create.topics.enable"]["value"] == "true"  # tidelog dev turns it on
    assert configs["log.retention.ms"]["value"] == "604800000"


def test_deleted_topics_are_gone_everywhere(dev, admin):
    name = _name()
    admin.create_topics([NewTopic(name, 1, 1)])
    admin.delete_topics([name])
    assert call(dev, "GET", f"/v1/topics/{name}")[0] == 404
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_topics([name])


def test_librdkafka_admin_creates_lists_and_describes(dev):
    client = AdminClient({"bootstrap.servers": dev.bootstrap})
    name = _name()
    futures = client.create_topics([RdNewTopic(name, num_partitions=3, replication_factor=1)])
    futures[name].result(30)
    listed = client.list_topics(timeout=30)
    assert len(listed.topics[name].partitions) == 3
    cluster = client.describe_cluster().result(30)
    assert [node.id for node in cluster.nodes] == list(listed.brokers)
    assert len(cluster.nodes) == 1
    assert cluster.cluster_id == call(dev, "GET", "/v1/cluster")[1]["cluster_id"]
    client.delete_topics([name])[name].result(30)
    assert call(dev, "GET", f"/v1/topics/{name}")[0] == 404


def test_kafkas_admin_clients_delete_empty_groups(dev, admin):
    group = f"g-{uuid.uuid4().hex[:8]}"
    name = _name()
    admin.create_topics([NewTopic(name, 1, 1)])
    simple = {
        "member_id": "",
        "generation_id": -1,
        "offsets": [{"topic": name, "partition": 0, "offset": 0}],
    }
    for each in (group, f"{group}-rd"):
        assert call(dev, "POST", f"/v1/groups/{each}/offsets", simple)[0] == 200
    assert admin.delete_groups([group]) == {group: "OK"}
    assert admin.delete_groups([group]) == {group: "GroupIdNotFoundError"}
    assert call(dev, "GET", f"/v1/groups/{group}/offsets")[1]["offsets"] == []
    librdkafka = AdminClient({"bootstrap.servers": dev.bootstrap})
    futures = librdkafka.delete_consumer_groups([f"{group}-rd"], request_timeout=30)
    futures[f"{group}-rd"].result(30)
    with pytest.raises(KafkaException) as gone:
        librdkafka.delete_consumer_groups([f"{group}-rd"])[f"{group}-rd"].result(30)
    assert gone.value.args[0].name() == "GROUP_ID_NOT_FOUND"


def test_a_groups_own_configs_are_set_described_and_reset_by_librdkafka(dev):
    """librdkafka's admin (its test suite's 0081 does the same): a GROUP resource's configs,
    before the group exists, within the bounds and outside them."""
    client = AdminClient({"bootstrap.servers": dev.bootstrap})
    group = f"g-{uuid.uuid4().hex[:8]}"
    resource = RdConfigResource(ResourceType.GROUP, group)

    def alter(*entries: ConfigEntry) -> None:
        changed = RdConfigResource(ResourceType.GROUP, group, incremental_configs=list(entries))
        client.incremental_alter_configs([changed])[changed].result(30)

    def described() -> dict[str, tuple[str, int]]:
        """Each config's value and source: 4 the broker's setting, 8 the group's own (which
        confluent-kafka's ConfigSource has no name for, so it hands over the number)."""
        found = client.describe_configs([resource])[resource].result(30)
        return {
            name: (entry.value, getattr(entry.source, "value", entry.source))
            for name, entry in found.items()
        }

    session, heartbeat = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
    assert described() == {
        session: ("12000", 4),  # the test session's stack: devserver.FAST_GROUPS
        heartbeat: ("3000", 4),
    }
    alter(ConfigEntry(session, "20000", incremental_operation=AlterConfigOpType.SET))
    assert described()[session] == ("20000", 8)
    with pytest.raises(KafkaException) as refused:
        alter(ConfigEntry(session, "999999", incremental_operation=AlterConfigOpType.SET))
    assert refused.value.args[0].name() == "INVALID_CONFIG"
    assert "group.consumer.max.session.timeout.ms" in refused.value.args[0].str()
    alter(ConfigEntry(session, None, incremental_operation=AlterConfigOpType.DELETE))
    assert described()[session] == ("12000", 4)
