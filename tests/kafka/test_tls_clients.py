"""Real clients over TLS against `tidelog dev --kafka-tls`: kafka-python, aiokafka,
confluent-kafka (with a client certificate, mTLS) and kcat produce and consume through the SSL
listener, are shown the SSL port in Metadata (never the plaintext one), and a client that speaks
the wrong protocol to a port gets nowhere."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import struct
import subprocess
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata import MetadataRequest
from tests.support import devserver
from tests.support.dynamodb_local import free_port
from tests.support.round_trip import librdkafka_round_trip

from kafka import KafkaConsumer, KafkaProducer


@pytest.fixture(scope="module")
def tls_dev(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    port = free_port()
    dev = devserver.start(
        "--kafka-tls", "--kafka-tls-port", str(port), "--kafka-tls-dir", str(directory)
    )
    yield dev, f"127.0.0.1:{port}", directory
    dev.stop()


@pytest.fixture
def topic(tls_dev):
    dev, _, _ = tls_dev
    name = f"tls-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": dev.bootstrap})
    admin.create_topics([NewTopic(name, 1)])[name].result(30)
    return name


def test_kafka_python_over_ssl(tls_dev, topic):
    _, bootstrap, directory = tls_dev
    settings = {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SSL",
        "ssl_cafile": str(directory / "ca.pem"),
    }
    producer = KafkaProducer(**settings)
    sent = [producer.send(topic, f"k{i}".encode()).get(30) for i in range(5)]
    producer.close()
    assert [m.offset for m in sent] == list(range(5))
    consumer = KafkaConsumer(
        topic, auto_offset_reset="earliest", consumer_timeout_ms=10_000, **settings
    )
    got = [m.value for m in consumer]
    consumer.close()
    assert got == [f"k{i}".encode() for i in range(5)]


def test_aiokafka_over_ssl(tls_dev, topic):
    _, bootstrap, directory = tls_dev
    context = ssl.create_default_context(cafile=str(directory / "ca.pem"))

    async def scenario():
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, security_protocol="SSL", ssl_context=context
        )
        await producer.start()
        try:
            sent = [await producer.send_and_wait(topic, f"a{i}".encode()) for i in range(3)]
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            security_protocol="SSL",
            ssl_context=context,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            consumer.assign([AioTopicPartition(topic, sent[0].partition)])
            batch = await consumer.getmany(timeout_ms=10_000)
        finally:
            await consumer.stop()
        return [m.value for messages in batch.values() for m in messages]

    assert asyncio.run(scenario()) == [f"a{i}".encode() for i in range(3)]


def test_librdkafka_over_mtls_is_shown_the_ssl_port(tls_dev, topic):
    _, bootstrap, directory = tls_dev
    settings = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": str(directory / "ca.pem"),
        "ssl.certificate.location": str(directory / "client.pem"),
        "ssl.key.location": str(directory / "client.key"),
    }
    brokers = AdminClient(settings).list_topics(timeout=30).brokers
    assert {f"{b.host}:{b.port}" for b in brokers.values()} == {bootstrap}
    assert librdkafka_round_trip(settings, topic) == [b"m%d" % i for i in range(5)]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_over_ssl_and_the_plaintext_listener_beside_it(tls_dev, topic):
    dev, bootstrap, directory = tls_dev
    ssl_args = ["-X", "security.protocol=ssl", "-X", f"ssl.ca.location={directory / 'ca.pem'}"]

    def kcat(server, *args, stdin=None):
        return subprocess.run(
            ["kcat", "-b", server, *args],
            check=False,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    produced = kcat(bootstrap, *ssl_args, "-P", "-t", topic, stdin="over tls\n")
    assert produced.returncode == 0, produced.stderr
    listed = kcat(bootstrap, *ssl_args, "-L", "-t", topic)
    assert f"at {bootstrap}" in listed.stdout
    plain = kcat(dev.bootstrap, "-L", "-t", topic)
    assert f"at {dev.bootstrap}" in plain.stdout  # plaintext clients: the plaintext port
    consumed = kcat(dev.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e")
    assert consumed.stdout.splitlines() == ["over tls"]


def test_the_wrong_protocol_for_a_port_gets_nowhere(tls_dev):
    dev, bootstrap, directory = tls_dev
    host, port = bootstrap.split(":")
    request = MetadataRequest[1](topics=None)
    request.with_header(correlation_id=1, client_id="t")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        try:
            answer = sock.recv(4096)  # a TLS alert at most, then the end
        except ConnectionResetError:
            answer = b""
    assert not answer.startswith(struct.pack(">i", 1), 4)  # no Kafka answer
    context = ssl.create_default_context(cafile=str(directory / "ca.pem"))
    host, port = dev.bootstrap.split(":")
    with (
        pytest.raises((ssl.SSLError, ConnectionError)),
        socket.create_connection((host, int(port)), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=host),
    ):
        pass  # a ClientHello is no Kafka frame: the plaintext listener closes the connection
