"""SCRAM credentials (RFC 5802, RFC 7677), stored as Kafka stores them, in the cluster's table.

Items::

    ("scram", "<mechanism>#<user>")   salt, stored key, server key, iterations

Never a password, nor a salted password: only what a server derives from one, the stored key
H(HMAC(salted, "Client Key")) and the server key HMAC(salted, "Server Key"). A stored key proves
nothing to a client and lets nobody log in; it only checks a client's proof. Kafka's admin APIs
(tidelog.kafka.scram) and the HTTP API's users (functions/admin) manage them; SASL logins
(tidelog.kafka.sasl) read them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.storage import Delete, MetadataStore, Put, Write
from tidelog.storage.metadata import MAX_TRANSACTION_WRITES

SCRAM_PK = "scram"
MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}  # Kafka's ScramMechanism type bytes
TYPES = {name: kind for kind, name in MECHANISMS.items()}
HASHES: dict[str, Callable[..., hashlib._Hash]] = {
    "SCRAM-SHA-256": hashlib.sha256,
    "SCRAM-SHA-512": hashlib.sha512,
}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384
DEFAULT_ITERATIONS = 8192  # the HTTP API's, and confluent-kafka's


@dataclass(frozen=True)
class Credential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted(
        cls, mechanism: str, salt: bytes, salted_password: bytes, iterations: int
    ) -> Credential:
        """What a server keeps of a salted password (Kafka's ``ScramFormatter``)."""
        digest = HASHES[mechanism]
        client_key = hmac.new(salted_password, b"Client Key", digest).digest()
        return cls(
            salt,
            digest(client_key).digest(),
            hmac.new(salted_password, b"Server Key", digest).digest(),
            iterations,
        )

    @classmethod
    def from_password(
        cls, mechanism: str, password: str, salt: bytes, iterations: int
    ) -> Credential:
        """As a client salts a password (Hi, RFC 5802) before sending it."""
        name = HASHES[mechanism]().name
        salted = hashlib.pbkdf2_hmac(name, password.encode(), salt, iterations)
        return cls.from_salted(mechanism, salt, salted, iterations)


def item_sk(mechanism: str, user: str) -> str:
    return f"{mechanism}#{user}"


class Credentials:
    """The cluster's SCRAM credentials, in its table."""

    def __init__(self, meta: MetadataStore) -> None:
        self._meta = meta

    def get(self, mechanism: str, user: str) -> Credential | None:
        item = self._meta.get(SCRAM_PK, item_sk(mechanism, user))
        if item is None:
            return None
        return Credential(
            _bytes(item["salt"]),
            _bytes(item["stored_key"]),
            _bytes(item["server_key"]),
            int(str(item["iterations"])),
        )

    def put(self, mechanism: str, user: str, credential: Credential) -> Put:
        return Put(
            {
                "pk": SCRAM_PK,
                "sk": item_sk(mechanism, user),
                "user": user,
                "mechanism": mechanism,
                "salt": _text(credential.salt),
                "stored_key": _text(credential.stored_key),
                "server_key": _text(credential.server_key),
                "iterations": credential.iterations,
            }
        )

    def listed(self) -> dict[str, list[tuple[str, int]]]:
        """Each user with credentials: (mechanism, iterations) of each."""
        users: dict[str, list[tuple[str, int]]] = {}
        for item in self._meta.query(SCRAM_PK):
            users.setdefault(str(item["user"]), []).append(
                (str(item["mechanism"]), int(str(item["iterations"])))
            )
        return users

    def delete(self, mechanism: str, user: str) -> Delete:
        return Delete(SCRAM_PK, item_sk(mechanism, user))

    def exists(self, mechanism: str, user: str) -> bool:
        return self._meta.get(SCRAM_PK, item_sk(mechanism, user)) is not None

    def apply(self, writes: list[Write]) -> None:
        for start in range(0, len(writes), MAX_TRANSACTION_WRITES):
            self._meta.transact(writes[start : start + MAX_TRANSACTION_WRITES])


def _text(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _bytes(value: object) -> bytes:
    return base64.b64decode(str(value))
