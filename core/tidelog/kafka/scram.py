"""SCRAM (RFC 5802, RFC 7677) as Kafka serves it: the server's side of the exchange, and the
credentials managed with Kafka's own APIs, DescribeUserScramCredentials and
AlterUserScramCredentials.

The exchange follows Kafka's ``ScramSaslServer`` rather than a general SCRAM library, because
Kafka's clients rely on where it is lenient: the client's final nonce need only *end with* the
server's (librdkafka before 2.6 sends its own nonce twice), extensions are accepted and ignored
(``tokenauth``, for delegation tokens, is not served), and user names are decoded from
``saslname`` without SASLprep. The proof is compared in constant time.

Kafka's AlterUserScramCredentials carries a salted password; only what a server derives from
it is stored (tidelog.credentials).

The rules of an alteration are Kafka's (``ScramControlManager``): a user altered twice in one
request is DUPLICATE_RESOURCE, an empty name UNACCEPTABLE_CREDENTIAL, an unknown mechanism
UNSUPPORTED_SASL_MECHANISM, 4,096 to 16,384 iterations, and deleting a credential that does
not exist RESOURCE_NOT_FOUND. The valid changes of a request apply together.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
import secrets
from collections.abc import Callable

from tidelog.credentials import (
    HASHES,
    MAX_ITERATIONS,
    MECHANISMS,
    MIN_ITERATIONS,
    TYPES,
    Credential,
    Credentials,
)
from tidelog.kafka.codec import NONE, Answer, Request, code, items
from tidelog.storage import Write


class LoginError(Exception):
    """A login failed: a malformed message, an unknown user or a wrong secret (which the
    client is never told apart)."""


_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_VALUE = r"[\x01-\x2B\x2D-\x7F]+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_BASE64 = r"(?:[A-Za-z0-9/+]{4})*(?:[A-Za-z0-9/+]{3}=|[A-Za-z0-9/+]{2}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?:m={_VALUE},)?"
    rf"(?P<bare>n=(?P<name>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS})"
)
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),"
    rf"p=(?P<proof>{_BASE64})"
)


class ScramExchange:
    """One login's two rounds, as Kafka's ``ScramSaslServer``: client-first -> server-first,
    client-final -> server-final. ``lookup`` finds a user's credential (None: unknown)."""

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str], Credential | None],
        server_nonce: Callable[[], str] | None = None,
    ) -> None:
        self._digest = HASHES[mechanism]
        self._server_nonce = server_nonce or _server_nonce
        self._lookup = lookup
        self._round = 0
        self.user: str | None = None
        self._credential: Credential | None = None
        self._first_bare = self._server_first = self._nonce = ""

    def step(self, token: bytes) -> tuple[bytes, bool]:
        """The answer to ``token``, and whether the login is complete; LoginError if not."""
        try:
            message = token.decode()
        except UnicodeDecodeError as exc:
            raise LoginError("a SCRAM message is UTF-8") from exc
        self._round += 1
        if self._round == 1:
            return self._server_first_message(message), False
        if self._round == 2:
            return self._server_final_message(message), True
        raise LoginError("SCRAM has two rounds")

    def _server_first_message(self, message: str) -> bytes:
        first = _CLIENT_FIRST.fullmatch(message)
        if first is None:
            raise LoginError("malformed client-first message")
        self.user = first["name"].replace("=2C", ",").replace("=3D", "=")
        if first["authzid"] and first["authzid"] != first["name"]:
            raise LoginError("an authorization id other than the user name")
        credential = self._lookup(self.user)
        if credential is None:
            raise LoginError(f"no credential for {self.user!r}")
        self._credential = credential
        self._first_bare = first["bare"]
        self._nonce = first["nonce"] + self._server_nonce()
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def _server_final_message(self, message: str) -> bytes:
        final = _CLIENT_FINAL.fullmatch(message)
        if final is None or self._credential is None:
            raise LoginError("malformed client-final message")
        if not final["nonce"].endswith(self._nonce):  # Kafka's test, not equality
            raise LoginError("the final nonce is not the server's")
        auth = f"{self._first_bare},{self._server_first},{final['without_proof']}".encode()
        try:
            proof = base64.b64decode(final["proof"], validate=True)
        except binascii.Error as exc:
            raise LoginError("the proof is not base64") from exc
        signature = hmac.new(self._credential.stored_key, auth, self._digest).digest()
        if len(proof) != len(signature):
            raise LoginError("a proof of the wrong length")
        client_key = bytes(a ^ b for a, b in zip(signature, proof, strict=True))
        if not hmac.compare_digest(self._digest(client_key).digest(), self._credential.stored_key):
            raise LoginError("invalid client proof")
        server_signature = hmac.new(self._credential.server_key, auth, self._digest).digest()
        return b"v=" + base64.b64encode(server_signature)


def _server_nonce() -> str:
    """As Kafka's ``secureRandomString``: 130 random bits, base 36."""
    number, digits = secrets.randbits(130), []
    while number:
        number, digit = divmod(number, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[digit])
    return "".join(reversed(digits)) or "0"


def describe(request: Request, credentials: Credentials) -> Answer:
    """DescribeUserScramCredentials: every user with credentials (no names), or those named."""
    listed = credentials.listed()
    names = [str(u.name) for u in items(request.body.users)] if request.body.users else None
    results = []
    for user in sorted(listed) if names is None else list(dict.fromkeys(names)):
        if names is not None and names.count(user) > 1:
            problem = ("DUPLICATE_RESOURCE", _DESCRIBED_TWICE)
        elif user not in listed:
            problem = ("RESOURCE_NOT_FOUND", "Attempt to describe nonexistent user")
        else:
            infos = [
                {"mechanism": TYPES[mechanism], "iterations": iterations}
                for mechanism, iterations in sorted(listed[user])
            ]
            results.append({**_result(user, None, None), "credential_infos": infos})
            continue
        results.append({**_result(user, *problem), "credential_infos": []})
    return {"throttle_time": 0, "error_code": NONE, "error_message": None, "results": results}


def alter(request: Request, credentials: Credentials) -> Answer:
    """AlterUserScramCredentials, checked as Kafka's controller checks it."""
    errors: dict[str, tuple[str, str]] = {}
    deletions: dict[str, str] = {}  # user -> mechanism
    upsertions: dict[str, tuple[str, Credential]] = {}
    for deletion in items(request.body.deletions):
        user, kind = str(deletion.name), int(deletion.mechanism)
        if user in errors:
            continue
        if deletions.pop(user, None) is not None:
            errors[user] = _TWICE
            continue
        problem = _check(user, kind)
        if problem is None and not credentials.exists(MECHANISMS[kind], user):
            problem = (
                "RESOURCE_NOT_FOUND",
                "Attempt to delete a user credential that does not exist",
            )
        if problem is not None:
            errors[user] = problem
        else:
            deletions[user] = MECHANISMS[kind]
    for upsertion in items(request.body.upsertions):
        user, kind = str(upsertion.name), int(upsertion.mechanism)
        if user in errors:
            continue
        if deletions.pop(user, None) is not None or upsertions.pop(user, None) is not None:
            errors[user] = _TWICE
            continue
        problem = _check(user, kind) or _check_iterations(int(upsertion.iterations))
        if problem is not None:
            errors[user] = problem
            continue
        mechanism = MECHANISMS[kind]
        upsertions[user] = (
            mechanism,
            Credential.from_salted(
                mechanism,
                bytes(upsertion.salt),
                bytes(upsertion.salted_password),
                int(upsertion.iterations),
            ),
        )
    writes: list[Write] = [credentials.delete(m, user) for user, m in deletions.items()]
    writes += [credentials.put(mechanism, user, c) for user, (mechanism, c) in upsertions.items()]
    credentials.apply(writes)
    results = [_result(user, None, None) for user in (*deletions, *upsertions)]
    results += [_result(user, *problem) for user, problem in errors.items()]
    return {"throttle_time": 0, "results": results}


_TWICE = ("DUPLICATE_RESOURCE", "A user credential cannot be altered twice in the same request")
_DESCRIBED_TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request"


def _check(user: str, kind: int) -> tuple[str, str] | None:
    if not user:
        return ("UNACCEPTABLE_CREDENTIAL", "Username must not be empty")
    if kind not in MECHANISMS:
        return ("UNSUPPORTED_SASL_MECHANISM", "Unknown SCRAM mechanism")
    return None


def _check_iterations(iterations: int) -> tuple[str, str] | None:
    if iterations < MIN_ITERATIONS:
        return ("UNACCEPTABLE_CREDENTIAL", "Too few iterations")
    if iterations > MAX_ITERATIONS:
        return ("UNACCEPTABLE_CREDENTIAL", "Too many iterations")
    return None


def _result(user: str, error: str | None, message: str | None) -> Answer:
    return {
        "user": user,
        "error_code": NONE if error is None else code(error),
        "error_message": message,
    }
