"""SASL/PLAIN (RFC 4616) checked against the users' SCRAM credentials: one token,
``authzid NUL user NUL password``, and the password proven by deriving the stored key from it
with the credential's own salt and iterations.

Kafka's PLAIN checks passwords listed in the broker's JAAS file; tidelog keeps no second list.
A user made with AlterUserScramCredentials logs in with either mechanism, with the same
password. An unknown user's password is checked against made-up credentials, so a refusal
costs the same work and says the same thing whoever asked. PLAIN sends the password itself,
so it is offered only on encrypted listeners unless the agent is told otherwise.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from tidelog.credentials import Credential
from tidelog.kafka.scram import LoginError

PLAIN = "PLAIN"
# A credential of either SCRAM mechanism proves a password; the stronger is tried first.
PREFERRED = ("SCRAM-SHA-512", "SCRAM-SHA-256")


class PlainExchange:
    """One PLAIN login. ``lookup(user)`` finds the user's credential and its mechanism (made
    up for a user who has none)."""

    def __init__(self, lookup: Callable[[str], tuple[str, Credential]]) -> None:
        self._lookup = lookup
        self._done = False
        self.user: str | None = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        if self._done:
            raise LoginError("PLAIN has one round")
        self._done = True
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise LoginError("a PLAIN token is authzid NUL user NUL password")
        try:
            authzid, user, password = (part.decode() for part in parts)
        except UnicodeDecodeError as exc:
            raise LoginError("a PLAIN token is UTF-8") from exc
        if not user:
            raise LoginError("a PLAIN token names a user")
        self.user = user
        if authzid and authzid != user:
            raise LoginError("an authorization id other than the user name")
        mechanism, credential = self._lookup(user)
        derived = Credential.from_password(
            mechanism, password, credential.salt, credential.iterations
        )
        if not hmac.compare_digest(derived.stored_key, credential.stored_key):
            raise LoginError("wrong password")
        return b"", True
