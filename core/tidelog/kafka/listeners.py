"""The agent's listeners, named as Kafka names them: ``PLAINTEXT://host:port,SSL://:9093``.

A listener's name is its security protocol. Each listener is a port of its own; a client is
shown every agent at the port of the listener it came in on (Metadata, FindCoordinator and
DescribeCluster answer per listener, as Kafka's do), so an SSL client is never sent to a
plaintext port. An empty host binds the agent's ``--host``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tidelog.errors import InvalidRequestError

PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL = "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"
CLIENT_AUTH = ("none", "requested", "required")  # Kafka's ssl.client.auth
KAFKAS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
_ENTRY = re.compile(r"^(?P<name>[A-Za-z_]+)://(?P<host>\[[^\]]*\]|[^:]*):(?P<port>\d{1,5})$")


class ListenerError(InvalidRequestError):
    """A listeners setting that does not parse, or names what the agent does not offer."""


@dataclass(frozen=True)
class Listener:
    name: str
    host: str  # "": the agent's --host
    port: int  # 0: a free port

    @property
    def tls(self) -> bool:
        return self.name in (SSL, SASL_SSL)

    @property
    def sasl(self) -> bool:
        return self.name in (SASL_PLAINTEXT, SASL_SSL)

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def parse(value: str) -> tuple[Listener, ...]:
    """Kafka's ``listeners`` syntax: comma-separated ``NAME://host:port``, each name and each
    port at most once."""
    listeners = []
    for entry in (e.strip() for e in value.split(",")):
        match = _ENTRY.match(entry)
        if match is None:
            raise ListenerError(f"listener {entry!r} is not NAME://host:port")
        name, port = match["name"].upper(), int(match["port"])
        if name not in KAFKAS:
            raise ListenerError(f"listener {entry!r}: the name is one of {', '.join(KAFKAS)}")
        if port > 65535:
            raise ListenerError(f"listener {entry!r}: port {port} is not a TCP port")
        listeners.append(Listener(name, match["host"].strip("[]"), port))
    _check_unique(listeners)
    return tuple(listeners)


def _check_unique(listeners: Sequence[Listener]) -> None:
    names = [listener.name for listener in listeners]
    for name in set(names):
        if names.count(name) > 1:
            raise ListenerError(f"listener {name} is named twice")
    ports = [listener.port for listener in listeners if listener.port]
    for port in set(ports):
        if ports.count(port) > 1:
            raise ListenerError(f"two listeners on port {port}")
