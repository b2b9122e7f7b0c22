"""One connection's SASL state, as Kafka's authenticator keeps it: the handshake's refusals,
an unknown user told apart from a wrong password by nothing the client sees, and failed logins
held back longer the more a user fails."""

from __future__ import annotations

import datetime
import types

from kafka.net.sasl.scram import ScramClient

from tidelog.credentials import Credential, Credentials
from tidelog.kafka.aws_identity import Identity
from tidelog.kafka.codec import NONE, code
from tidelog.kafka.sasl import (
    FAILURE_DELAY_S,
    MAX_FAILURE_DELAY_S,
    SCRAM,
    Authenticator,
    FailedLogins,
    SaslSettings,
)
from tidelog.kafka.scram import LoginError
from tidelog.storage.memory import MemoryMetadataStore


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _settings(clock=None):
    meta = MemoryMetadataStore()
    credentials = Credentials(meta)
    credential = Credential.from_password("SCRAM-SHA-256", "secret", b"salt", 4096)
    meta.write(credentials.put("SCRAM-SHA-256", "alice", credential))
    return SaslSettings(SCRAM, credentials, FailedLogins(clock or Clock()))


def _handshake(auth, mechanism="SCRAM-SHA-256", version=1):
    return auth.handshake(
        types.SimpleNamespace(api_version=version, body=types.SimpleNamespace(mechanism=mechanism))
    )


def _authenticate(auth, token):
    return auth.authenticate(
        types.SimpleNamespace(api_version=2, body=types.SimpleNamespace(auth_bytes=token))
    )


def _login(settings, user, password):
    auth = Authenticator(settings, encrypted=True)
    assert _handshake(auth).answer["error_code"] == NONE
    client = ScramClient(user, password, "SCRAM-SHA-256")
    first = _authenticate(auth, client.first_message())
    if first.answer["error_code"] != NONE:
        return auth, [first]
    client.process_server_first_message(first.answer["auth_bytes"])
    return auth, [first, _authenticate(auth, client.final_message())]


def test_a_login_names_the_connections_principal():
    auth, steps = _login(_settings(), "alice", "secret")
    assert [s.answer["error_code"] for s in steps] == [NONE, NONE]
    assert auth.authenticated
    assert auth.principal == "User:alice"


def test_an_unknown_user_fails_exactly_as_a_wrong_password_does():
    settings = _settings()
    _, wrong = _login(settings, "alice", "guess")
    _, unknown = _login(settings, "mallory", "guess")
    assert len(wrong) == len(unknown) == 2  # both fail at the proof, not before
    for failed in (wrong[-1], unknown[-1]):
        assert failed.answer["error_code"] == code("SASL_AUTHENTICATION_FAILED")
        assert failed.closes
    assert wrong[-1].answer["error_message"] == unknown[-1].answer["error_message"]
    # The made-up salt an unknown user sees is the same on every attempt.
    salts = {
        _login(settings, "mallory", "x")[1][0].answer["auth_bytes"].split(b",")[1] for _ in "ab"
    }
    assert len(salts) == 1


def test_failed_logins_are_held_back_longer_per_user_and_forgotten_after_a_minute():
    clock = Clock()
    settings = _settings(clock)
    delays = [_login(settings, "alice", "guess")[1][-1].delay_s for _ in range(8)]
    assert delays[:3] == [FAILURE_DELAY_S, 2 * FAILURE_DELAY_S, 4 * FAILURE_DELAY_S]
    assert delays[-1] == MAX_FAILURE_DELAY_S
    assert _login(settings, "bob", "guess")[1][-1].delay_s == FAILURE_DELAY_S  # per user
    clock.now += 61
    assert _login(settings, "alice", "guess")[1][-1].delay_s == FAILURE_DELAY_S


def test_failures_naming_no_user_are_held_back_the_fixed_delay_and_count_against_nobody():
    failures = FailedLogins(Clock())
    assert [failures.record("") for _ in range(5)] == [FAILURE_DELAY_S] * 5
    assert failures.record("alice") == FAILURE_DELAY_S


def test_the_handshake_refuses_an_unoffered_mechanism_and_a_second_handshake():
    auth = Authenticator(_settings(), encrypted=True)
    refused = _handshake(auth, "PLAIN")
    assert refused.answer == {
        "error_code": code("UNSUPPORTED_SASL_MECHANISM"),
        "mechanisms": list(SCRAM),
    }
    assert refused.closes
    auth = Authenticator(_settings(), encrypted=True)
    _handshake(auth)
    assert _handshake(auth).answer["error_code"] == code("ILLEGAL_SASL_STATE")


def test_tokens_out_of_turn_are_an_illegal_state():
    auth = Authenticator(_settings(), encrypted=True)
    out_of_turn = _authenticate(auth, b"n,,n=alice,r=abc")  # no handshake first
    assert out_of_turn.answer["error_code"] == code("ILLEGAL_SASL_STATE")
    assert out_of_turn.closes


def test_after_a_v0_handshake_the_tokens_come_bare():
    settings = _settings()
    auth = Authenticator(settings, encrypted=True)
    _handshake(auth, version=0)
    assert auth.raw
    client = ScramClient("alice", "secret", "SCRAM-SHA-256")
    first, _ = auth.authenticate_raw(client.first_message())
    client.process_server_first_message(first)
    final, delay = auth.authenticate_raw(client.final_message())
    assert final is not None
    assert delay == 0.0
    assert auth.principal == "User:alice"
    assert _authenticate(Authenticator(settings, encrypted=True), b"x").answer[
        "error_code"
    ] == code("ILLEGAL_SASL_STATE")


def _plain(settings, token, *, encrypted=True):
    auth = Authenticator(settings, encrypted=encrypted)
    if _handshake(auth, "PLAIN").answer["error_code"] != NONE:
        return auth, None
    return auth, _authenticate(auth, token)


def test_plain_logs_in_with_the_scram_password_of_either_mechanism():
    settings = SaslSettings((*SCRAM, "PLAIN"), _settings().credentials)
    auth, step = _plain(settings, b"\0alice\0secret")
    assert step.answer["error_code"] == NONE
    assert auth.principal == "User:alice"
    auth, step = _plain(settings, b"alice\0alice\0secret")  # authzid, the same user
    assert step.answer["error_code"] == NONE


def test_plain_refuses_a_wrong_password_an_unknown_user_and_a_borrowed_identity_alike():
    settings = SaslSettings((*SCRAM, "PLAIN"), _settings().credentials)
    refusals = [
        _plain(settings, token)[1]
        for token in (b"\0alice\0guess", b"\0mallory\0secret", b"bob\0alice\0secret", b"alice")
    ]
    assert {s.answer["error_code"] for s in refusals} == {code("SASL_AUTHENTICATION_FAILED")}
    assert len({s.answer["error_message"] for s in refusals}) == 1
    assert all(s.closes for s in refusals)


def test_plain_is_offered_only_over_tls_unless_the_agent_is_told_otherwise():
    enabled = (*SCRAM, "PLAIN")
    over_plaintext = Authenticator(SaslSettings(enabled, _settings().credentials), encrypted=False)
    refused = _handshake(over_plaintext, "PLAIN")
    assert refused.answer == {
        "error_code": code("UNSUPPORTED_SASL_MECHANISM"),
        "mechanisms": list(SCRAM),
    }
    allowed = SaslSettings(enabled, _settings().credentials, plain_over_plaintext=True)
    assert _plain(allowed, b"\0alice\0secret", encrypted=False)[1].answer["error_code"] == NONE


# OAUTHBEARER and re-authentication (KIP-368) ---------------------------------------------------


def _identities(principals):
    """A verifier that names each token's principal from ``principals`` (token -> ARN), good
    for a minute from now."""

    def verify(token):
        if token not in principals:
            raise LoginError("STS refused the token")
        expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=60)
        return Identity(principals[token], expires)

    return types.SimpleNamespace(verify=verify)


def _bearer(auth, token, version=1):
    assert _handshake(auth, "OAUTHBEARER", version).answer["error_code"] == NONE
    return _authenticate(auth, f"n,,\x01auth=Bearer {token}\x01\x01".encode())


ALICE_ARN = "arn:aws:iam::123456789012:role/alice"


def _oauth(clock, **more):
    base = _settings()
    principals = {"t1": ALICE_ARN, "t2": ALICE_ARN, "bob": "arn:aws:iam::123456789012:user/bob"}
    settings = SaslSettings(
        ("OAUTHBEARER", *SCRAM), base.credentials, identities=_identities(principals), **more
    )
    return Authenticator(settings, encrypted=True, clock=clock)


def test_an_aws_identity_logs_in_for_as_long_as_its_token():
    clock = Clock()
    auth = _oauth(clock)
    step = _bearer(auth, "t1")
    assert step.answer["error_code"] == NONE
    assert auth.principal == f"User:{ALICE_ARN}"
    assert 59_000 < step.answer["session_lifetime"] <= 60_000
    clock.now = 59.0
    assert not auth.expired()
    clock.now = 60.5
    assert auth.expired()


def test_a_session_is_renewed_on_its_connection_as_the_same_principal():
    clock = Clock()
    auth = _oauth(clock)
    _bearer(auth, "t1")
    clock.now = 50.0
    renewed = _bearer(auth, "t2")
    assert renewed.answer["error_code"] == NONE
    clock.now = 100.0
    assert not auth.expired(), "the new token's minute counts from the renewal"
    assert auth.principal == f"User:{ALICE_ARN}"


def test_a_renewal_as_someone_else_or_by_another_mechanism_fails_and_closes():
    auth = _oauth(Clock())
    _bearer(auth, "t1")
    refused = _bearer(auth, "bob")
    assert refused.answer["error_code"] == code("SASL_AUTHENTICATION_FAILED")
    assert refused.closes
    other = _oauth(Clock())
    _bearer(other, "t1")
    switched = _handshake(other, "SCRAM-SHA-256")
    assert (switched.answer["error_code"], switched.closes) == (code("ILLEGAL_SASL_STATE"), True)


def test_a_token_sts_refuses_fails_as_every_login_fails():
    step = _bearer(_oauth(Clock()), "forged")
    assert step.answer["error_code"] == code("SASL_AUTHENTICATION_FAILED")
    assert "OAUTHBEARER" in step.answer["error_message"]
    assert step.closes


def test_connections_max_reauth_ms_bounds_every_session():
    clock = Clock()
    settings = SaslSettings(SCRAM, _settings().credentials, max_reauth_s=30.0)
    auth = Authenticator(settings, encrypted=True, clock=clock)
    assert _handshake(auth).answer["error_code"] == NONE
    client = ScramClient("alice", "secret", "SCRAM-SHA-256")
    first = _authenticate(auth, client.first_message())
    client.process_server_first_message(first.answer["auth_bytes"])
    final = _authenticate(auth, client.final_message())
    assert final.answer["session_lifetime"] == 30_000
    clock.now = 31.0
    assert auth.expired()
    unbounded, _ = _login(_settings(), "alice", "secret")
    assert not unbounded.expired()


def test_a_renewal_tells_its_new_lifetime_once_it_completes_and_not_before():
    """Kafka tells session_lifetime_ms in the answer that completes a login. A renewal's first
    SCRAM answer once told the old session's last seconds, and librdkafka planned its next
    renewal by them."""
    clock = Clock()
    settings = SaslSettings(SCRAM, _settings().credentials, max_reauth_s=30.0)
    auth = Authenticator(settings, encrypted=True, clock=clock)
    for when in (0.0, 27.0):
        clock.now = when
        assert _handshake(auth).answer["error_code"] == NONE
        client = ScramClient("alice", "secret", "SCRAM-SHA-256")
        first = _authenticate(auth, client.first_message())
        assert first.answer["session_lifetime"] == 0
        client.process_server_first_message(first.answer["auth_bytes"])
        final = _authenticate(auth, client.final_message())
        assert final.answer["session_lifetime"] == 30_000
    clock.now = 56.0
    assert not auth.expired()
