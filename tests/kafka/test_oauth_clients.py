"""AWS identities at the Kafka port with real clients: a `tidelog agent` offering OAUTHBEARER
beside `tidelog dev`'s, with ACLs on, and tokens made by tidelog.client's helpers from an IAM
role's credentials (moto's STS AssumeRole). confluent-kafka, kafka-python and aiokafka log in as
the role, produce and consume what its ACLs allow (made by a super user, itself an AWS
identity, with CreateAcls), and are refused with an expired token and
once an ACL is revoked; librdkafka renews its session on the connection (KIP-368).

`tidelog dev`'s emulator checks no signature, so the audience binding (a token made for another
cluster) is proven against STS's rules in tests/unit/test_aws_identity.py, not here.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import time
import urllib.parse
import uuid

import boto3
import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from tests.support.agents import AgentProcess, output
from tests.support.dynamodb_local import free_port
from tests.support.round_trip import librdkafka_round_trip

from kafka import KafkaProducer
from tidelog.client import (
    Admin,
    aiokafka_token_provider,
    aws_oauth_cb,
    aws_token,
    kafka_python_token_provider,
)

ROLE = "arn:aws:iam::123456789012:role/oauth-app"
PRINCIPAL = f"User:{ROLE}"
ADMIN = "User:arn:aws:sts::123456789012:user/moto"  # moto's answer for its "test" keys
REAUTH_MS = 3000


@pytest.fixture(scope="module")
def oauth(dev):
    """The agent's bootstrap, a boto3 session of the role, the cluster's id, the agent, and a
    super user's admin client."""
    environment = pytest.MonkeyPatch()
    environment.setenv("AWS_ENDPOINT_URL", dev.aws_url)  # the helpers sign for it, as the agent
    port = free_port()
    agent = AgentProcess(
        dev,
        "--listeners",
        f"SASL_PLAINTEXT://:{port}",
        "--sasl-enabled-mechanisms",
        "OAUTHBEARER",
        "--authorizer",
        "acls",
        "--connections-max-reauth-ms",
        str(REAUTH_MS),
        "--super-users",
        ADMIN,
    )
    sts = boto3.client(
        "sts",
        endpoint_url=dev.aws_url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    credentials = sts.assume_role(RoleArn=ROLE, RoleSessionName="test")["Credentials"]
    session = boto3.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name="us-east-1",
    )
    with Admin(dev.api_url) as admin:
        cluster_id = admin.cluster()["cluster_id"]
    bootstrap = f"127.0.0.1:{port}"
    root = boto3.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1"
    )
    admin = AdminClient(_rdkafka(bootstrap, aws_oauth_cb(cluster_id, session=root)))
    yield bootstrap, session, cluster_id, agent, admin
    agent.stop()
    environment.undo()


@pytest.fixture
def topic(oauth):
    """A topic the role may write and read (and its group), made by the super user over the
    Kafka port: its own agent applies the ACLs at once."""
    *_, admin = oauth
    name = f"oauth-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 1)])[name].result(30)
    allowed = [
        _allow(ResourceType.TOPIC, name, AclOperation.WRITE),
        _allow(ResourceType.TOPIC, name, AclOperation.READ),
        _allow(ResourceType.GROUP, f"g-{name}", AclOperation.READ),
    ]
    for future in admin.create_acls(allowed).values():
        future.result(30)
    return name


def _allow(kind, name, operation) -> AclBinding:
    return AclBinding(
        kind, name, ResourcePatternType.LITERAL, PRINCIPAL, "*", operation,
        AclPermissionType.ALLOW,
    )  # fmt: skip


def _rdkafka(bootstrap, oauth_cb) -> dict:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "OAUTHBEARER",
        "oauth_cb": oauth_cb,
    }


def test_librdkafka_logs_in_as_the_role_and_renews_its_session(oauth, topic):
    bootstrap, session, cluster_id, agent, _ = oauth
    settings = _rdkafka(bootstrap, aws_oauth_cb(cluster_id, session=session))
    assert librdkafka_round_trip(settings, topic) == [b"m%d" % i for i in range(5)]
    producer = Producer(settings)
    deadline = time.monotonic() + 3 * REAUTH_MS / 1000
    while time.monotonic() < deadline:  # past three sessions, one connection
        producer.produce(topic, b"later")
        assert producer.flush(30) == 0
        time.sleep(0.5)
    log = output(agent.log)
    assert f"session of {PRINCIPAL} renewed" in log
    assert "expired without re-authentication" not in log


def test_kafka_python_and_aiokafka_log_in_as_the_role(oauth, topic):
    bootstrap, session, cluster_id, *_ = oauth
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=kafka_python_token_provider(cluster_id, session=session),
    )
    assert producer.send(topic, b"kafka-python").get(30).offset == 0
    producer.close()

    async def aiokafka() -> int:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauth_token_provider=aiokafka_token_provider(cluster_id, session=session),
        )
        await producer.start()
        try:
            return (await producer.send_and_wait(topic, b"aiokafka")).offset
        finally:
            await producer.stop()

    assert asyncio.run(aiokafka()) == 1


def _expired(cluster_id, session):
    def oauth_cb(_config):
        token, _ = aws_token(cluster_id, session=session)
        encoded = token.removeprefix("tidelog-aws-v1.")
        url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
        parts = urllib.parse.urlsplit(url)
        query = dict(urllib.parse.parse_qsl(parts.query))
        then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=20)
        query["X-Amz-Date"] = then.strftime("%Y%m%dT%H%M%SZ")
        stale = parts._replace(query=urllib.parse.urlencode(query)).geturl()
        encoded = base64.urlsafe_b64encode(stale.encode()).decode().rstrip("=")
        return "tidelog-aws-v1." + encoded, time.time() + 600

    return oauth_cb


def test_an_expired_token_is_refused_with_kafkas_error(oauth):
    bootstrap, session, cluster_id, *_ = oauth
    errors = []
    producer = Producer(
        {**_rdkafka(bootstrap, _expired(cluster_id, session)), "error_cb": errors.append}
    )
    for _ in range(20):
        if errors:
            break
        producer.poll(1)
    assert errors, "an expired token was not refused"
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert "invalid credentials with SASL mechanism OAUTHBEARER" in errors[0].str()


def test_a_revoked_acl_refuses_the_role(oauth, topic):
    bootstrap, session, cluster_id, _, admin = oauth
    producer = Producer(_rdkafka(bootstrap, aws_oauth_cb(cluster_id, session=session)))
    producer.produce(topic, b"allowed")
    assert producer.flush(30) == 0
    write = AclBindingFilter(
        ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, PRINCIPAL, "*",
        AclOperation.WRITE, AclPermissionType.ALLOW,
    )  # fmt: skip
    for future in admin.delete_acls([write]).values():
        assert len(future.result(30)) == 1
    deadline = time.monotonic() + 5  # deleted through this agent: it applies at once
    outcomes: list[KafkaError | None] = []
    while time.monotonic() < deadline and not any(outcomes):
        producer.produce(topic, b"late", on_delivery=lambda err, msg: outcomes.append(err))
        producer.flush(30)
        time.sleep(0.25)
    refused = next((e for e in outcomes if e is not None), None)
    assert refused is not None, "the revoked ACL still allowed writes"
    assert refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
