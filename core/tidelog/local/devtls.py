"""`tidelog dev --kafka-tls`: an SSL listener beside the plaintext one, with a local CA made
for it, and the settings a client needs printed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import NameOID

from tidelog.kafka.listeners import PLAINTEXT, SSL, Listener
from tidelog.kafka.tls import TlsConfig
from tidelog.local.certs import Issued, LocalCa

CLIENT_SUBJECT = x509.Name(
    [
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "tidelog dev"),
        x509.NameAttribute(NameOID.COMMON_NAME, "dev-client"),
    ]
)


@dataclass(frozen=True)
class DevTls:
    ca: LocalCa
    server: Issued
    client: Issued  # for mTLS: the agent asks for a certificate, and maps it to a principal

    @classmethod
    def create(cls, host: str, directory: Path) -> DevTls:
        ca = LocalCa.create(directory)
        hosts = list(dict.fromkeys([host, "localhost", "127.0.0.1"]))
        return cls(ca, ca.issue_server("agent", hosts), ca.issue_client("client", CLIENT_SUBJECT))

    def config(self) -> TlsConfig:
        # Client certificates are asked for, not required: clients with only the CA connect
        # as User:ANONYMOUS, those with the client certificate as User:CN=dev-client,O=...
        return TlsConfig(
            certfile=str(self.server.certfile),
            keyfile=str(self.server.keyfile),
            cafile=str(self.ca.cafile),
            client_auth="requested",
        )

    @staticmethod
    def listeners(kafka_port: int, tls_port: int) -> tuple[Listener, ...]:
        return (Listener(PLAINTEXT, "", kafka_port), Listener(SSL, "", tls_port))

    def banner(self, bootstrap: str) -> str:
        return (
            f"  Kafka TLS     {bootstrap}   (security.protocol=SSL "
            f"ssl.ca.location={self.ca.cafile})\n"
            f"    mTLS: ssl.certificate.location={self.client.certfile} "
            f"ssl.key.location={self.client.keyfile}\n"
        )
