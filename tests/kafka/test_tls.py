"""The SSL listener on its own, with a handler that records who asked: server certificates from
files and reloaded when rotated, client certificates (mTLS) mapped to principals as Kafka maps
them, and connections that cannot be told apart refused before any request is handled."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import struct
import threading
import time

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from tests.kafka.test_server import StandIn

from tidelog.kafka.listeners import SSL
from tidelog.kafka.principals import PrincipalMappingError
from tidelog.kafka.server import KafkaServer
from tidelog.kafka.tls import CHECK_EVERY_S, ServerTls, TlsConfig, TlsConfigError
from tidelog.local.certs import LocalCa

ALICE = x509.Name(
    [
        x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
        x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "ServiceUsers"),
        x509.NameAttribute(NameOID.COMMON_NAME, "Alice"),
    ]
)


class Recorder(StandIn):
    """Answers Metadata with an empty cluster; remembers each request's listener and
    principal."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []

    def _answer(self, request, queued):
        self.seen.append((request.listener, request.principal))
        return super()._answer(request, queued)


@pytest.fixture
def ca(tmp_path):
    return LocalCa.create(tmp_path / "ca")


@pytest.fixture
def listen(ca):
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    servers = []

    def start(client_auth="none", rules="DEFAULT", handlers=None):
        issued = ca.issue_server("agent", ["127.0.0.1"])
        config = TlsConfig(
            certfile=str(issued.certfile),
            keyfile=str(issued.keyfile),
            cafile=str(ca.cafile),
            client_auth=client_auth,
            principal_rules=rules,
        )
        handlers = handlers or Recorder()
        server = KafkaServer(handlers, listener=SSL, tls=ServerTls(config))
        port = asyncio.run_coroutine_threadsafe(server.start("127.0.0.1", 0), loop).result(10)
        servers.append(server)
        return handlers, port

    yield start
    for server in servers:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def _client_context(ca, certificate=None):
    context = ssl.create_default_context(cafile=str(ca.cafile))
    if certificate is not None:
        context.load_cert_chain(str(certificate.certfile), str(certificate.keyfile))
    return context


def _ask(port, context):
    """One Metadata request over TLS; the answer's correlation id, and the server's
    certificate serial number."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
    ):
        request = MetadataRequest[1](topics=None)
        request.with_header(correlation_id=7, client_id="t")
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        prefix = _exactly(sock, 4)
        answer = MetadataResponse.decode(
            _exactly(sock, struct.unpack(">i", prefix)[0]), version=1, header=True
        )
        serial = x509.load_der_x509_certificate(sock.getpeercert(binary_form=True)).serial_number
    return answer._header.correlation_id, serial


def _exactly(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def test_a_client_without_a_certificate_is_anonymous_and_with_one_is_its_subject(listen, ca):
    handlers, port = listen(client_auth="requested")
    assert _ask(port, _client_context(ca))[0] == 7
    alice = ca.issue_client("alice", ALICE)
    _ask(port, _client_context(ca, alice))
    assert handlers.seen == [
        (SSL, "User:ANONYMOUS"),
        (SSL, "User:CN=Alice,OU=ServiceUsers,C=US"),  # RFC 2253's order, as Java writes it
    ]


def test_kafkas_mapping_rules_name_the_principal(listen, ca):
    handlers, port = listen(
        client_auth="required", rules="RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT"
    )
    _ask(port, _client_context(ca, ca.issue_client("alice", ALICE)))
    assert handlers.seen == [(SSL, "User:alice")]


def test_required_client_authentication_refuses_a_client_without_a_certificate(listen, ca):
    handlers, port = listen(client_auth="required")
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _ask(port, _client_context(ca))
    assert handlers.seen == []


def test_a_certificate_no_rule_maps_closes_its_connection_unanswered(listen, ca):
    handlers, port = listen(client_auth="required", rules="RULE:^CN=(.*?),OU=Admins$/$1/")
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _ask(port, _client_context(ca, ca.issue_client("alice", ALICE)))
    assert handlers.seen == []


def test_a_certificate_from_another_ca_is_refused(listen, ca, tmp_path):
    handlers, port = listen(client_auth="required")
    stranger = LocalCa.create(tmp_path / "other").issue_client("mallory", ALICE)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _ask(port, _client_context(ca, stranger))
    assert handlers.seen == []


def test_plaintext_on_the_tls_port_is_closed_unanswered(listen):
    handlers, port = listen()
    request = MetadataRequest[1](topics=None)
    request.with_header(correlation_id=1, client_id="t")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        try:
            answer = sock.recv(4096)  # a TLS alert at most, then the end
        except ConnectionResetError:
            answer = b""
    assert not answer.startswith(struct.pack(">i", 1), 4)  # no Kafka answer to correlation 1
    assert handlers.seen == []


def test_a_rotated_certificate_is_served_to_new_connections(listen, ca, tmp_path):
    _, port = listen()
    context = _client_context(ca)
    _, first = _ask(port, context)
    fresh = ca.issue_server("fresh", ["127.0.0.1"])  # same CA, new key and serial
    target = ca.directory
    # A rotation caught half done (the new certificate, the old key) keeps the old one...
    shutil.copy(fresh.certfile, target / "agent.pem")
    _wait_for_a_check()
    assert _ask(port, context)[1] == first
    # ...and once the key follows, new connections get the new certificate.
    shutil.copy(fresh.keyfile, target / "agent.key")
    deadline = time.monotonic() + 10
    while _ask(port, context)[1] == first:
        assert time.monotonic() < deadline, "the rotated certificate was never served"
        time.sleep(0.2)
    assert (
        _ask(port, context)[1]
        == x509.load_pem_x509_certificate(fresh.certfile.read_bytes()).serial_number
    )


def _wait_for_a_check():
    time.sleep(CHECK_EVERY_S * 2.5)


def test_settings_that_cannot_make_a_listener_are_refused_at_once(ca, tmp_path):
    issued = ca.issue_server("agent", ["127.0.0.1"])
    other = ca.issue_server("other", ["127.0.0.1"])
    good = {"certfile": str(issued.certfile), "keyfile": str(issued.keyfile)}
    with pytest.raises(TlsConfigError, match="unusable"):
        ServerTls(TlsConfig(**{**good, "keyfile": str(other.keyfile)}))
    with pytest.raises(TlsConfigError, match="unusable"):
        ServerTls(TlsConfig(**{**good, "certfile": str(tmp_path / "missing.pem")}))
    with pytest.raises(TlsConfigError, match="needs the CAs"):
        ServerTls(TlsConfig(**good, client_auth="required"))
    with pytest.raises(TlsConfigError, match=r"ssl\.client\.auth is one of"):
        ServerTls(TlsConfig(**good, client_auth="sometimes"))
    with pytest.raises(PrincipalMappingError):
        ServerTls(TlsConfig(**good, principal_rules="RULE:nonsense"))
