"""Kafka's listeners setting, and each agent shown at the port of the listener a client came in
on (Metadata, FindCoordinator, DescribeCluster)."""

from __future__ import annotations

import pytest
from tests.support.log import Clock

from tidelog.kafka.agent import Agent
from tidelog.kafka.listeners import PLAINTEXT, SSL, Listener, ListenerError, parse
from tidelog.kafka.node import Node, reachable
from tidelog.kafka.registry import Registry
from tidelog.kafka.tls import TlsConfig
from tidelog.storage.memory import MemoryMetadataStore


def test_listeners_parse_as_kafka_writes_them():
    assert parse("PLAINTEXT://:9092, ssl://agent.local:9093") == (
        Listener(PLAINTEXT, "", 9092),
        Listener(SSL, "agent.local", 9093),
    )
    assert parse("SSL://[::1]:0,SASL_SSL://:9094,SASL_PLAINTEXT://:9095") == (
        Listener(SSL, "::1", 0),
        Listener("SASL_SSL", "", 9094),
        Listener("SASL_PLAINTEXT", "", 9095),
    )
    assert Listener(SSL, "", 9093).tls
    assert not Listener(PLAINTEXT, "", 9092).tls


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("PLAINTEXT:9092", "is not NAME://host:port"),
        ("PLAINTEXT://:port", "is not NAME://host:port"),
        ("HTTP://:80", "the name is one of"),
        ("PLAINTEXT://:99999", "is not a TCP port"),
        ("PLAINTEXT://:9092,PLAINTEXT://:9093", "named twice"),
        ("PLAINTEXT://:9092,SSL://:9092", "two listeners on port 9092"),
        ("", "is not NAME://host:port"),
    ],
)
def test_bad_listeners_are_refused_with_the_reason(value, error):
    with pytest.raises(ListenerError, match=error):
        parse(value)


def test_each_node_is_shown_at_the_port_of_the_clients_listener():
    both = Node(1, "a", 9092, None, ((PLAINTEXT, 9092), (SSL, 9093)))
    plain_only = Node(2, "b", 9094, None, ((PLAINTEXT, 9094),))
    older = Node(3, "c", 9095)  # registered before listeners were named: plaintext
    assert reachable([both, plain_only, older], SSL) == (Node(1, "a", 9093),)
    assert [n.port for n in reachable([both, plain_only, older], PLAINTEXT)] == [9092, 9094, 9095]


def test_the_registry_carries_each_agents_listeners():
    store, clock = MemoryMetadataStore(), Clock()
    mine = Registry(store, host="a", zone=None, clock_ms=clock, random_id=lambda: 5)
    mine._port, mine._listeners = 9092, ((PLAINTEXT, 9092), (SSL, 9093))
    mine.register()
    other = Registry(store, host="b", zone=None, clock_ms=clock, random_id=lambda: 6)
    other._port = 9092
    other.register()
    (seen,) = [n for n in other.live() if n.node_id == 5]
    assert seen.listeners == ((PLAINTEXT, 9092), (SSL, 9093))
    assert seen.on(SSL) == Node(5, "a", 9093)


def test_an_agent_refuses_an_ssl_listener_without_a_certificate_and_tls_without_one():
    with pytest.raises(ListenerError, match="needs a certificate"):
        Agent("127.0.0.1", 0, listeners=parse("SSL://:0"))

    with pytest.raises(ListenerError, match="no SSL listener"):
        Agent("127.0.0.1", 0, tls=TlsConfig(certfile="c.pem", keyfile="k.pem"))
