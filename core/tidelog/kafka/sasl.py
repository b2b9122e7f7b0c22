"""SASL at the Kafka port: one connection's authentication, as Kafka's
``SaslServerAuthenticator`` runs it (KIP-152).

On a SASL listener a connection may send only ApiVersions, SaslHandshake (the mechanism) and
SaslAuthenticate (the mechanism's tokens) until it has authenticated; anything else closes it,
as on Kafka. After a v0 handshake the tokens come bare, each size-prefixed like a request, as
Kafka's oldest clients send them. Then every request carries the connection's principal,
``User:<name>``.

SCRAM-SHA-256 and SCRAM-SHA-512 are served as Kafka serves them (tidelog.kafka.scram). What a
failure tells the client is Kafka's one sentence, SASL_AUTHENTICATION_FAILED, whether the user
is unknown or the password wrong: an unknown user goes through the exchange against made-up
credentials and fails at the proof, as a wrong password does, so neither the answer nor the
number of steps tells them apart.

OAUTHBEARER takes AWS identities (tidelog.kafka.aws_identity): a presigned STS request, whose
signer becomes the principal. Its session lasts as long as its token; Kafka's
``connections.max.reauth.ms`` bounds every mechanism's. A session tells the client its lifetime
(SaslAuthenticate v1+); the client logs in again on the same connection before it ends, with the
same mechanism and as the same principal (KIP-368), and a request after it ends closes the
connection.

Failed logins are throttled: the failing answer is held back 100 ms (Kafka's
``connection.failed.authentication.delay.ms``), doubling with each recent failure of the same
user up to 5 s (a failure naming no user: 100 ms), and the connection closes after it. The hold
happens in the listener's event loop, so throttled clients occupy no worker thread.
"""

from __future__ import annotations

import collections
import datetime
import hashlib
import hmac
import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tidelog.credentials import DEFAULT_ITERATIONS, Credential, Credentials
from tidelog.kafka.aws_identity import IdentityVerifier
from tidelog.kafka.codec import NONE, Answer, Request, code
from tidelog.kafka.oauthbearer import OAUTHBEARER, OAuthBearerExchange
from tidelog.kafka.plain import PLAIN, PREFERRED, PlainExchange
from tidelog.kafka.principals import ANONYMOUS, USER
from tidelog.kafka.scram import LoginError, ScramExchange

log = logging.getLogger(__name__)

SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MECHANISMS = (*SCRAM, PLAIN, OAUTHBEARER)
FAILURE_DELAY_S = 0.1  # Kafka's connection.failed.authentication.delay.ms
MAX_FAILURE_DELAY_S = 5.0
FAILURE_WINDOW_S = 60.0


class FailedLogins:
    """Recent failures per user, shared by every connection of the agent."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._recent: dict[str, collections.deque[float]] = {}
        self._lock = threading.Lock()

    def record(self, user: str) -> float:
        """Count a failure; how long to hold its answer back. A failure naming no user (a
        malformed message) guesses no one's password: it is held back Kafka's fixed delay and
        counts against nobody, so garbage from one client cannot slow another's."""
        if not user:
            return FAILURE_DELAY_S
        now = self._clock()
        with self._lock:
            recent = self._recent.setdefault(user, collections.deque())
            while recent and now - recent[0] > FAILURE_WINDOW_S:
                recent.popleft()
            recent.append(now)
            count = len(recent)
            if len(self._recent) > 10_000:
                self._recent = {u: d for u, d in self._recent.items() if d and now - d[-1] < 1}
        return float(min(MAX_FAILURE_DELAY_S, FAILURE_DELAY_S * 2 ** (count - 1)))


@dataclass(frozen=True)
class SaslSettings:
    """What a SASL listener offers, and where it finds credentials."""

    mechanisms: Sequence[str]
    credentials: Credentials
    failures: FailedLogins = field(default_factory=FailedLogins)
    # Made-up credentials for unknown users derive from it: the same on every connection.
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    plain_over_plaintext: bool = False  # PLAIN without TLS, which sends passwords in the clear
    identities: IdentityVerifier | None = None  # for OAUTHBEARER
    max_reauth_s: float | None = None  # Kafka's connections.max.reauth.ms, as seconds


@dataclass(frozen=True)
class Step:
    answer: Answer
    closes: bool = False  # the connection closes once the answer is sent
    delay_s: float = 0.0  # hold the answer back this long (a failed login)


Exchange = ScramExchange | PlainExchange | OAuthBearerExchange


class Authenticator:
    """One connection's SASL state: handshake, then the mechanism's exchange; again, on the
    same connection, before the session ends (KIP-368)."""

    def __init__(
        self,
        settings: SaslSettings,
        *,
        encrypted: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._offered = [
            m
            for m in settings.mechanisms
            if (m != PLAIN or encrypted or settings.plain_over_plaintext)
            and (m != OAUTHBEARER or settings.identities is not None)
        ]
        self._mechanism: str | None = None
        self._exchange: Exchange | None = None
        self.principal = ANONYMOUS
        self.authenticated = False
        self.raw = False
        self._renewing = False  # a re-authentication is under way
        self._ends: float | None = None  # when the session ends, on the clock

    def expired(self) -> bool:
        """The session has ended without a new login: the connection must close."""
        return self._ends is not None and self._clock() >= self._ends

    def handshake(self, request: Request) -> Step:
        mechanism = str(request.body.mechanism)
        enabled = list(self._offered)
        # A handshake once per login: the first, or a renewal (KIP-368, v1+) of the session's
        # own mechanism, as Kafka allows.
        renewal = self.authenticated and not self._renewing and request.api_version >= 1
        if self.authenticated and not (renewal and mechanism == self._mechanism):
            error: str | None = "ILLEGAL_SASL_STATE"
        elif not self.authenticated and self._mechanism is not None:
            error = "ILLEGAL_SASL_STATE"
        elif mechanism not in enabled:
            error = "UNSUPPORTED_SASL_MECHANISM"
        else:
            error = None
        if error is not None:
            return Step({"error_code": code(error), "mechanisms": enabled}, closes=True)
        self._renewing = renewal
        self._mechanism = mechanism
        self.raw = request.api_version == 0  # tokens follow bare, not in SaslAuthenticate
        self._exchange = self._exchange_of(mechanism)
        return Step({"error_code": NONE, "mechanisms": enabled})

    def _exchange_of(self, mechanism: str) -> Exchange:
        credentials, secret = self._settings.credentials, self._settings.secret
        if mechanism == OAUTHBEARER:
            identities = self._settings.identities
            assert identities is not None, "OAUTHBEARER is offered only with a verifier"
            return OAuthBearerExchange(identities.verify)
        if mechanism == PLAIN:

            def either(user: str) -> tuple[str, Credential]:
                for scram in PREFERRED:
                    found = credentials.get(scram, user)
                    if found is not None:
                        return scram, found
                return PREFERRED[0], made_up(secret, PREFERRED[0], user)

            return PlainExchange(either)
        return ScramExchange(
            mechanism,
            lambda user: credentials.get(mechanism, user) or made_up(secret, mechanism, user),
        )

    def authenticate(self, request: Request) -> Step:
        """SaslAuthenticate (after a v1 handshake): one token of the exchange."""
        if self._exchange is None or self.raw or (self.authenticated and not self._renewing):
            return self._refuse("ILLEGAL_SASL_STATE", "SaslAuthenticate out of turn", 0.0)
        logging_in = not self.authenticated or self._renewing
        token, delay = self._step(bytes(request.body.auth_bytes))
        if token is None:
            return self._refuse(
                "SASL_AUTHENTICATION_FAILED",
                "Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self._mechanism}",
                delay,
            )
        # The lifetime is told once the login completes, as Kafka tells it: a renewal's first
        # SCRAM answer once told the old session's last seconds, and librdkafka planned its
        # next renewal by them.
        completed = logging_in and self.authenticated and not self._renewing
        lifetime_ms = 0
        if completed and self._ends is not None:
            lifetime_ms = max(int((self._ends - self._clock()) * 1000), 1)
        answer = {"error_code": NONE, "error_message": None, "auth_bytes": token}
        return Step({**answer, "session_lifetime": lifetime_ms})

    def authenticate_raw(self, token: bytes) -> tuple[bytes | None, float]:
        """A token sent bare after a v0 handshake, as Kafka's oldest clients send them: the
        answer's token, or None (the connection closes: a bare token has no room for an
        error), and how long to hold it back."""
        return self._step(token)

    def _step(self, token: bytes) -> tuple[bytes | None, float]:
        assert self._exchange is not None
        try:
            answer, done = self._exchange.step(token)
        except LoginError as exc:
            # The log says why (the client is told only that it failed).
            log.info("SASL %s login of %r failed: %s", self._mechanism, self._exchange.user, exc)
            return None, self._settings.failures.record(self._exchange.user or "")
        if done:
            principal = f"{USER}:{self._exchange.user}"
            if self._renewing and principal != self.principal:
                log.info("SASL re-authentication as %s on %s's session", principal, self.principal)
                return None, 0.0  # Kafka: a session keeps its principal
            if self._renewing:
                log.info("SASL %s session of %s renewed (KIP-368)", self._mechanism, principal)
            self.authenticated, self._renewing = True, False
            self.principal = principal
            self._ends = self._session_end()
        return answer, 0.0

    def _session_end(self) -> float | None:
        """When the new session ends: its token's expiry, connections.max.reauth.ms, the
        sooner; None when neither bounds it."""
        bounds = [] if self._settings.max_reauth_s is None else [self._settings.max_reauth_s]
        expires_at = getattr(self._exchange, "expires_at", None)
        if expires_at is not None:
            bounds.append((expires_at - datetime.datetime.now(datetime.UTC)).total_seconds())
        return self._clock() + max(min(bounds), 0.0) if bounds else None

    @staticmethod
    def _refuse(error: str, message: str, delay_s: float) -> Step:
        answer = {
            "error_code": code(error),
            "error_message": message,
            "auth_bytes": b"",
            "session_lifetime": 0,
        }
        return Step(answer, closes=True, delay_s=delay_s)


def made_up(secret: bytes, mechanism: str, user: str) -> Credential:
    """Credentials no password matches, for a user who has none: the same salt for a user on
    every attempt (a salt that changed would give the unknown user away), and the iterations
    users are given by default, which SCRAM's first answer shows and a PLAIN check pays for."""
    seed = hmac.new(secret, f"{mechanism}#{user}".encode(), hashlib.sha256)
    return Credential(seed.digest()[:16], secrets.token_bytes(64), b"", DEFAULT_ITERATIONS)
