"""A throwaway certificate authority for `tidelog dev --kafka-tls` and the tests: a CA, the
agent's certificate for the hosts it is reached at, and a client certificate for mTLS, all PEM
files in one directory. Never for production: the CA's key lies beside its certificate.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID = datetime.timedelta(days=30)


@dataclass(frozen=True)
class Issued:
    certfile: Path
    keyfile: Path


@dataclass(frozen=True)
class LocalCa:
    """A CA in ``directory``: ``ca.pem`` is what clients trust (``ssl.ca.location``)."""

    directory: Path
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @property
    def cafile(self) -> Path:
        return self.directory / "ca.pem"

    @classmethod
    def create(cls, directory: Path, name: str = "tidelog dev CA") -> LocalCa:
        directory.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALID)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        ca = cls(directory, key, certificate)
        ca.cafile.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        return ca

    def issue_server(self, name: str, hosts: list[str]) -> Issued:
        """The agent's certificate, for each of ``hosts`` (names or IP addresses)."""
        alternatives: list[x509.GeneralName] = []
        for host in hosts:
            try:
                alternatives.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                alternatives.append(x509.DNSName(host))
        return self._issue(
            name,
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]),
            ExtendedKeyUsageOID.SERVER_AUTH,
            x509.SubjectAlternativeName(alternatives),
        )

    def issue_client(self, name: str, subject: x509.Name) -> Issued:
        """A client's certificate; its subject is what the agent maps to a principal."""
        return self._issue(name, subject, ExtendedKeyUsageOID.CLIENT_AUTH, None)

    def _issue(
        self,
        name: str,
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        alternatives: x509.SubjectAlternativeName | None,
    ) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALID)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if alternatives is not None:
            builder = builder.add_extension(alternatives, critical=False)
        certificate = builder.sign(self.key, hashes.SHA256())
        issued = Issued(self.directory / f"{name}.pem", self.directory / f"{name}.key")
        issued.keyfile.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        issued.keyfile.chmod(0o600)
        issued.certfile.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        return issued
