"""SASL/OAUTHBEARER (RFC 7628) as Kafka's ``OAuthBearerSaslServer`` reads it: one client
message, a GS2 header and key-value pairs separated by ^A, one of them ``auth=Bearer <token>``.
The token is checked by ``verify`` (tidelog.kafka.aws_identity: an AWS identity); a token that
does not verify is refused at once with SASL_AUTHENTICATION_FAILED, as every other failure.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable

from tidelog.kafka.aws_identity import Identity
from tidelog.kafka.scram import LoginError

OAUTHBEARER = "OAUTHBEARER"
_SEPARATOR = "\x01"
_GS2 = re.compile(r"^(?:n|y|p=[^,]*),(?:a=(?P<authzid>[^,]*))?,$")
_KEY = re.compile(r"^[A-Za-z]+$")
_BEARER = re.compile(r"^Bearer +(?P<token>[A-Za-z0-9\-._~+/]+=*)$")


class OAuthBearerExchange:
    """One OAUTHBEARER login: ``verify(token)`` says who the token is, or raises LoginError."""

    def __init__(self, verify: Callable[[str], Identity]) -> None:
        self._verify = verify
        self._done = False
        self.user: str | None = None
        self.expires_at: datetime.datetime | None = None

    def step(self, message: bytes) -> tuple[bytes, bool]:
        if self._done:
            raise LoginError("OAUTHBEARER has one round")
        self._done = True
        token = bearer_token(message)
        identity = self._verify(token)
        self.user, self.expires_at = identity.principal, identity.expires_at
        return b"", True


def bearer_token(message: bytes) -> str:
    """The token of a client's first message; LoginError if it is not RFC 7628's."""
    try:
        text = message.decode()
    except UnicodeDecodeError as exc:
        raise LoginError("an OAUTHBEARER message is UTF-8") from exc
    header, separator, rest = text.partition(_SEPARATOR)
    if not separator or _GS2.match(header) is None:
        raise LoginError("an OAUTHBEARER message starts with a GS2 header")
    if not rest.endswith(_SEPARATOR + _SEPARATOR) and rest != _SEPARATOR:
        raise LoginError("an OAUTHBEARER message ends with two ^A")
    pairs: dict[str, str] = {}
    for pair in rest[: -2 * len(_SEPARATOR)].split(_SEPARATOR) if rest != _SEPARATOR else []:
        key, equals, value = pair.partition("=")
        if not equals or _KEY.match(key) is None or key in pairs:
            raise LoginError(f"a malformed OAUTHBEARER key-value pair {key!r}")
        pairs[key] = value
    bearer = _BEARER.match(pairs.get("auth", ""))
    if bearer is None:
        raise LoginError("an OAUTHBEARER message without auth=Bearer <token>")
    return bearer.group("token")
