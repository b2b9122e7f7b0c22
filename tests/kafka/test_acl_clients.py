"""Kafka's ACLs with real clients, at a `tidelog agent --authorizer acls` beside `tidelog dev`'s:
a super user manages ACLs with confluent-kafka's and kafka-python's admin clients (CreateAcls,
DescribeAcls, DeleteAcls); a user logged in with SCRAM produces and consumes with what they
allow, and librdkafka, kafka-python, aiokafka and kcat are refused with Kafka's errors once an
ACL is revoked or where none allows."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import TopicAuthorizationFailedError as AioTopicAuthorizationFailed
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KpResourceType
from kafka.errors import ClusterAuthorizationFailedError, TopicAuthorizationFailedError
from tests.support.agents import AgentProcess
from tests.support.dynamodb_local import free_port
from tests.support.round_trip import librdkafka_round_trip

from kafka import KafkaProducer
from tidelog.client import Admin, KafkaAcl
from tidelog.kafka.authorizer import CACHE_S

PASSWORD = "correct horse battery staple"
ADMIN = f"admin-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def secured(dev):
    """The agent's bootstrap, with every request authorized and ``ADMIN`` a super user."""
    _user(dev, ADMIN)
    port = free_port()
    agent = AgentProcess(
        dev,
        "--listeners",
        f"SASL_PLAINTEXT://:{port}",
        "--authorizer",
        "acls",
        "--super-users",
        f"User:{ADMIN}",
    )
    yield f"127.0.0.1:{port}"
    agent.stop()


def _user(dev, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": dev.bootstrap})
    upsert = UserScramCredentialUpsertion(
        name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), PASSWORD.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)


def _rdkafka(bootstrap: str, user: str) -> dict:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": PASSWORD,
    }


def _kafka_python(bootstrap: str, user: str) -> dict:
    return {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": user,
        "sasl_plain_password": PASSWORD,
    }


@pytest.fixture
def user(dev):
    name = f"user-{uuid.uuid4().hex[:6]}"
    _user(dev, name)
    return name


@pytest.fixture
def topic(dev):
    name = f"acl-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": dev.bootstrap})
    admin.create_topics([NewTopic(name, 1)])[name].result(30)
    return name


def _binding(kind, name, principal, operation, pattern=ResourcePatternType.LITERAL):
    return AclBinding(kind, name, pattern, principal, "*", operation, AclPermissionType.ALLOW)


def _consumer_acls(user: str, topic: str) -> list[AclBinding]:
    principal = f"User:{user}"
    return [
        _binding(ResourceType.TOPIC, topic, principal, AclOperation.WRITE),
        _binding(ResourceType.TOPIC, topic, principal, AclOperation.READ),
        _binding(ResourceType.GROUP, f"g-{topic}", principal, AclOperation.READ),
    ]


def _create(admin: AdminClient, bindings: list[AclBinding]) -> None:
    for future in admin.create_acls(bindings).values():
        future.result(30)


def test_a_user_does_what_acls_allow_until_they_are_deleted(secured, user, topic):
    admin = AdminClient(_rdkafka(secured, ADMIN))
    _create(admin, _consumer_acls(user, topic))
    settings = _rdkafka(secured, user)
    assert librdkafka_round_trip(settings, topic) == [b"m%d" % i for i in range(5)]

    described = admin.describe_acls(
        AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{user}", None,
            AclOperation.ANY, AclPermissionType.ANY,
        )
    ).result(30)  # fmt: skip
    assert sorted((b.name, b.operation) for b in described) == sorted(
        [(topic, AclOperation.WRITE), (topic, AclOperation.READ), (f"g-{topic}", AclOperation.READ)]
    )
    write = AclBindingFilter(
        ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, f"User:{user}", "*",
        AclOperation.WRITE, AclPermissionType.ALLOW,
    )  # fmt: skip
    (deleted,) = admin.delete_acls([write])[write].result(30)
    assert deleted.operation == AclOperation.WRITE

    # Revoked through this agent: it applies at once (through another, within 5 s).
    errors = []
    producer = Producer({**settings, "error_cb": errors.append})
    delivered = []
    producer.produce(topic, b"late", on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(30)
    assert delivered
    assert delivered[0] is not None
    assert delivered[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_kafka_python_is_refused_a_topic_no_acl_allows(secured, user, topic):
    producer = KafkaProducer(**_kafka_python(secured, user), max_block_ms=10_000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(topic, b"x").get(30)
    finally:
        producer.close()


def test_aiokafka_is_refused_a_topic_no_acl_allows(secured, user, topic):
    settings = {
        "bootstrap_servers": secured,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": user,
        "sasl_plain_password": PASSWORD,
    }

    async def scenario():
        producer = AIOKafkaProducer(**settings)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"x")
        finally:
            await producer.stop()

    with pytest.raises(AioTopicAuthorizationFailed):
        asyncio.run(scenario())


def test_kafka_pythons_admin_manages_acls_and_a_plain_user_may_not(secured, user, topic):
    pattern = ResourcePattern(KpResourceType.TOPIC, topic, ACLResourcePatternType.PREFIXED)
    acl = ACL(f"User:{user}", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW, pattern)
    admin = KafkaAdminClient(**_kafka_python(secured, ADMIN))
    try:
        created = admin.create_acls([acl])
        assert created["succeeded"] == [acl]
        assert not created["failed"]
        wanted = ACLFilter(
            f"User:{user}", None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY),
        )  # fmt: skip
        listed, _ = admin.describe_acls(wanted)
        assert listed == [acl]
    finally:
        admin.close()
    plain = KafkaAdminClient(**_kafka_python(secured, user))
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            plain.describe_acls(wanted)
    finally:
        plain.close()


def test_librdkafka_cannot_see_a_topic_it_may_not_describe(secured, user, topic):
    admin = AdminClient(_rdkafka(secured, user))
    assert topic not in admin.list_topics(timeout=30).topics
    super_user = AdminClient(_rdkafka(secured, ADMIN))
    assert topic in super_user.list_topics(timeout=30).topics
    with pytest.raises(KafkaException) as refused:
        admin.create_topics([NewTopic(f"{topic}-new", 1)])[f"{topic}-new"].result(30)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_is_refused_where_no_acl_allows_and_served_where_one_does(secured, user, topic):
    args = [
        "kcat", "-b", secured, "-X", "security.protocol=sasl_plaintext",
        "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", f"sasl.username={user}",
        "-X", f"sasl.password={PASSWORD}",
    ]  # fmt: skip

    def run(*more, stdin=None):
        return subprocess.run(
            [*args, *more], input=stdin, capture_output=True, text=True, timeout=60, check=False
        )

    refused = run("-P", "-t", topic, stdin="one\n")
    assert "Broker: Topic authorization failed" in refused.stderr
    _create(AdminClient(_rdkafka(secured, ADMIN)), _consumer_acls(user, topic))
    assert run("-P", "-t", topic, stdin="one\ntwo\n").returncode == 0
    assert run("-C", "-t", topic, "-o", "beginning", "-e").stdout.splitlines() == ["one", "two"]


def test_an_acl_changed_over_http_applies_at_the_agent_within_its_cache_bound(
    dev, secured, user, topic
):
    describe = KafkaAcl("topic", topic, f"User:{user}", "describe")
    admin = AdminClient(_rdkafka(secured, user))

    def visible() -> bool:
        return topic in admin.list_topics(timeout=30).topics

    with Admin(dev.api_url) as http:
        http.add_acl(describe)
        assert _within(CACHE_S + 3, visible)
        http.remove_acl(describe)
        assert _within(CACHE_S + 3, lambda: not visible())


def _within(seconds: float, condition) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.25)
    return False
