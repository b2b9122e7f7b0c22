"""SASL/SCRAM with real clients: users made and removed with confluent-kafka's admin
(AlterUserScramCredentials), then kafka-python, aiokafka, confluent-kafka and kcat (librdkafka
2.0.2) log in over SASL_PLAINTEXT and SASL_SSL to a `tidelog agent` beside `tidelog dev`'s,
produce and consume, and are refused with a wrong password, as an unknown user, once removed,
and for any request before logging in."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka.protocol.metadata import MetadataRequest
from tests.support.agents import AgentProcess
from tests.support.dynamodb_local import free_port
from tests.support.kafka_wire import receive
from tests.support.round_trip import librdkafka_round_trip

from kafka import KafkaConsumer, KafkaProducer
from tidelog.local.certs import LocalCa

PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def sasl(dev, tmp_path_factory):
    ca = LocalCa.create(tmp_path_factory.mktemp("sasl-tls"))
    issued = ca.issue_server("agent", ["127.0.0.1"])
    plain, secure = free_port(), free_port()
    agent = AgentProcess(
        dev,
        "--listeners",
        f"SASL_PLAINTEXT://:{plain},SASL_SSL://:{secure}",
        "--ssl-certfile",
        str(issued.certfile),
        "--ssl-keyfile",
        str(issued.keyfile),
        "--sasl-enabled-mechanisms",
        "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
    )
    yield f"127.0.0.1:{plain}", f"127.0.0.1:{secure}", str(ca.cafile)
    agent.stop()


@pytest.fixture
def user(dev):
    name = f"user-{uuid.uuid4().hex[:6]}"
    _alter(
        dev,
        [
            UserScramCredentialUpsertion(
                name, _info(ScramMechanism.SCRAM_SHA_256), PASSWORD.encode()
            )
        ],
    )
    _alter(
        dev,
        [
            UserScramCredentialUpsertion(
                name, _info(ScramMechanism.SCRAM_SHA_512), PASSWORD.encode()
            )
        ],
    )
    return name


@pytest.fixture
def topic(dev):
    name = f"sasl-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": dev.bootstrap})
    admin.create_topics([NewTopic(name, 1)])[name].result(30)
    return name


def _info(mechanism):
    return ScramCredentialInfo(mechanism, 8192)


def _alter(dev, alterations):
    admin = AdminClient({"bootstrap.servers": dev.bootstrap})
    for future in admin.alter_user_scram_credentials(alterations).values():
        future.result(30)


def test_users_are_described_by_mechanism_and_iterations(dev, user):
    admin = AdminClient({"bootstrap.servers": dev.bootstrap})
    described = admin.describe_user_scram_credentials([user])[user].result(30)
    assert sorted((i.mechanism, i.iterations) for i in described.scram_credential_infos) == [
        (ScramMechanism.SCRAM_SHA_256, 8192),
        (ScramMechanism.SCRAM_SHA_512, 8192),
    ]


def test_kafka_python_over_sasl_plaintext(sasl, user, topic):
    plain, _, _ = sasl
    settings = {
        "bootstrap_servers": plain,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": user,
        "sasl_plain_password": PASSWORD,
    }
    producer = KafkaProducer(**settings)
    assert [producer.send(topic, b"k%d" % i).get(30).offset for i in range(3)] == [0, 1, 2]
    producer.close()
    consumer = KafkaConsumer(
        topic, auto_offset_reset="earliest", consumer_timeout_ms=10_000, **settings
    )
    assert [m.value for m in consumer] == [b"k0", b"k1", b"k2"]
    consumer.close()


def test_aiokafka_over_sasl_ssl(sasl, user, topic):
    _, secure, cafile = sasl
    settings = {
        "bootstrap_servers": secure,
        "security_protocol": "SASL_SSL",
        "ssl_context": ssl.create_default_context(cafile=cafile),
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": user,
        "sasl_plain_password": PASSWORD,
    }

    async def scenario():
        producer = AIOKafkaProducer(**settings)
        await producer.start()
        try:
            sent = [await producer.send_and_wait(topic, b"a%d" % i) for i in range(3)]
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            auto_offset_reset="earliest", enable_auto_commit=False, **settings
        )
        await consumer.start()
        try:
            consumer.assign([AioTopicPartition(topic, sent[0].partition)])
            batch = await consumer.getmany(timeout_ms=10_000)
        finally:
            await consumer.stop()
        return [m.value for messages in batch.values() for m in messages]

    assert asyncio.run(scenario()) == [b"a0", b"a1", b"a2"]


def _librdkafka(secure, cafile, user, password):
    return {
        "bootstrap.servers": secure,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": cafile,
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": password,
    }


def test_confluent_kafka_over_sasl_ssl_as_a_group_member(sasl, user, topic):
    _, secure, cafile = sasl
    settings = _librdkafka(secure, cafile, user, PASSWORD)
    assert librdkafka_round_trip(settings, topic) == [b"m%d" % i for i in range(5)]


def _refusal(secure, cafile, user, password):
    """What librdkafka reports when it tries to log in: its first error."""
    errors = []
    producer = Producer({**_librdkafka(secure, cafile, user, password), "error_cb": errors.append})
    for _ in range(20):  # it connects at once; its error comes within a poll or two
        if errors:
            break
        producer.poll(1)
    return errors[0] if errors else None


@pytest.mark.parametrize("who", ["wrong password", "unknown user", "removed user"])
def test_librdkafka_is_refused_with_kafkas_error(dev, sasl, user, who):
    _, secure, cafile = sasl
    name, password = user, PASSWORD
    if who == "wrong password":
        password = "guess"
    elif who == "unknown user":
        name = "nobody-" + user
    else:
        _alter(dev, [UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512)])
    error = _refusal(secure, cafile, name, password)
    assert error is not None
    assert error.code() == KafkaError._AUTHENTICATION
    assert "Authentication failed during authentication due to invalid credentials" in error.str()


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_over_sasl_plaintext(sasl, user, topic):
    plain, _, _ = sasl
    args = [
        "kcat", "-b", plain, "-X", "security.protocol=sasl_plaintext",
        "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", f"sasl.username={user}",
    ]  # fmt: skip

    def run(*more, password=PASSWORD, stdin=None):
        return subprocess.run(
            [*args, "-X", f"sasl.password={password}", *more],
            input=stdin, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    assert run("-P", "-t", topic, stdin="one\ntwo\n").returncode == 0
    assert run("-C", "-t", topic, "-o", "beginning", "-e").stdout.splitlines() == ["one", "two"]
    refused = run("-L", password="guess")
    assert refused.returncode != 0
    assert "Authentication failed" in refused.stderr


def test_a_request_before_logging_in_closes_the_connection_unanswered(sasl):
    plain, _, _ = sasl
    host, port = plain.split(":")
    request = MetadataRequest[1](topics=None)
    request.with_header(correlation_id=1, client_id="t")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        assert receive(sock, 4) == b""  # closed, nothing answered


def test_plain_over_tls_with_the_scram_password(sasl, user, topic):
    _, secure, cafile = sasl
    settings = {
        "bootstrap_servers": secure,
        "security_protocol": "SASL_SSL",
        "ssl_cafile": cafile,
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": user,
        "sasl_plain_password": PASSWORD,
    }
    producer = KafkaProducer(**settings)
    assert producer.send(topic, b"plain").get(30).offset == 0
    producer.close()
    consumer = KafkaConsumer(
        topic, auto_offset_reset="earliest", consumer_timeout_ms=10_000, **settings
    )
    assert [m.value for m in consumer] == [b"plain"]
    consumer.close()


def test_plain_is_not_offered_without_tls(sasl, user):
    plain, _, _ = sasl
    errors = []
    producer = Producer(
        {
            "bootstrap.servers": plain,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": user,
            "sasl.password": PASSWORD,
            "error_cb": errors.append,
        }
    )
    for _ in range(20):
        if errors:
            break
        producer.poll(1)
    assert errors, "PLAIN over plaintext was not refused"
    assert "PLAIN" in errors[0].str()
    assert "SCRAM-SHA-256,SCRAM-SHA-512" in errors[0].str()  # what is offered instead
