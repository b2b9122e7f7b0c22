"""TLS at the Kafka port: the server's certificate from files, reloaded when they change, and
client certificates (mTLS) mapped to principals as Kafka maps them.

Settings are Kafka's, in PEM files (as a broker's ``ssl.keystore.type=PEM``):

- the certificate chain and its private key (``--ssl-certfile``, ``--ssl-keyfile``, and the
  key's password if it has one);
- ``ssl.client.auth``: ``none`` (the default), ``requested`` or ``required``, with the CAs
  that sign client certificates (``--ssl-cafile``);
- ``ssl.principal.mapping.rules`` (tidelog.kafka.principals).

A connection with a client certificate is ``User:<its subject, mapped>``; one without is
``User:ANONYMOUS``, as on Kafka.

Rotation: the files are looked at every second, and reloaded when one has changed; new
connections then get the new certificate, and those already open keep their session. A
half-written rotation (a key that does not match its certificate) is logged and the last good
certificate kept, so a rotation never takes the listener down.
"""

from __future__ import annotations

import logging
import os
import ssl
from dataclasses import dataclass

from cryptography import x509

from tidelog.errors import InvalidRequestError
from tidelog.kafka.listeners import CLIENT_AUTH
from tidelog.kafka.principals import ANONYMOUS, DEFAULT_RULES, USER, PrincipalMapper

log = logging.getLogger(__name__)

CHECK_EVERY_S = 1.0  # how often the listener looks at its files


class TlsConfigError(InvalidRequestError):
    """TLS settings that cannot make a listener: missing or unreadable files, a key that does
    not match its certificate, client authentication without CAs."""


@dataclass(frozen=True)
class TlsConfig:
    certfile: str
    keyfile: str
    password: str | None = None
    cafile: str | None = None
    client_auth: str = "none"
    principal_rules: str = DEFAULT_RULES

    def files(self) -> tuple[str, ...]:
        return tuple(f for f in (self.certfile, self.keyfile, self.cafile) if f)


def server_context(config: TlsConfig) -> ssl.SSLContext:
    """A server context from the files as they are now; TlsConfigError if they cannot make one."""
    if config.client_auth not in CLIENT_AUTH:
        raise TlsConfigError(
            f"ssl.client.auth is one of {', '.join(CLIENT_AUTH)}, not {config.client_auth!r}"
        )
    if config.client_auth != "none" and not config.cafile:
        raise TlsConfigError(
            f"ssl.client.auth={config.client_auth} needs the CAs of client certificates "
            "(--ssl-cafile)"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2  # Kafka's ssl.enabled.protocols
    try:
        context.load_cert_chain(config.certfile, config.keyfile, config.password)
        if config.cafile:
            context.load_verify_locations(cafile=config.cafile)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"TLS certificate or key unusable: {exc}") from exc
    context.verify_mode = {
        "none": ssl.CERT_NONE,
        "requested": ssl.CERT_OPTIONAL,
        "required": ssl.CERT_REQUIRED,
    }[config.client_auth]
    return context


class ServerTls:
    """The listener's TLS: one context for its life, its certificate reloaded in place when the
    files change, and the principal of each connection."""

    def __init__(self, config: TlsConfig) -> None:
        self.config = config
        self.mapper = PrincipalMapper(config.principal_rules)
        self._stamps = _stamps(config.files())
        self.context = server_context(config)

    def refresh(self) -> bool:
        """Reload the files if they changed since last loaded; whether they were. Called from
        the listener's event loop, which also makes every handshake, so none sees a context
        half reloaded. CAs are added to, never removed: dropping one takes a restart."""
        stamps = _stamps(self.config.files())
        if stamps == self._stamps:
            return False
        try:
            server_context(self.config)  # the files make a whole context: load them live
            self.context.load_cert_chain(
                self.config.certfile, self.config.keyfile, self.config.password
            )
            if self.config.cafile:
                self.context.load_verify_locations(cafile=self.config.cafile)
        except (TlsConfigError, OSError, ssl.SSLError) as exc:
            # Not recorded as loaded: tried again at the next check, as the rotation completes.
            log.warning("TLS files changed but cannot be used yet, keeping the last: %s", exc)
            return False
        self._stamps = stamps
        log.info("TLS certificate reloaded from %s", self.config.certfile)
        return True

    def principal(self, peer_der: bytes | None) -> str:
        """``User:<subject, mapped>`` for a client certificate; ``User:ANONYMOUS`` for none."""
        if peer_der is None:
            return ANONYMOUS
        return f"{USER}:{self.mapper.name(subject_name(peer_der))}"


def subject_name(der: bytes) -> str:
    """A certificate's subject as a distinguished name string (RFC 4514, which writes the usual
    attributes as Java's RFC 2253 ``X500Principal.getName()`` does, so Kafka's rules match)."""
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


def _stamps(files: tuple[str, ...]) -> tuple[tuple[int, int] | None, ...]:
    stamps: list[tuple[int, int] | None] = []
    for name in files:
        try:
            status = os.stat(name)
        except OSError:
            stamps.append(None)
            continue
        stamps.append((status.st_mtime_ns, status.st_size))
    return tuple(stamps)
