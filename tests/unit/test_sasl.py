"""One connection's SASL state, as Kafka's authenticator keeps it: the handshake's refusals,
an unknown user told apart from a wrong password by nothing the client sees, and failed logins
held back longer the more a user fails."""

from __future__ import annotations

import types

from kafka.net.sasl.scram import ScramClient

from tidelog.credentials import Credential, Credentials
from tidelog.kafka.codec import NONE, code
from tidelog.kafka.sasl import (
    FAILURE_DELAY_S,
    MAX_FAILURE_DELAY_S,
    SCRAM,
    Authenticator,
    FailedLogins,
    SaslSettings,
)
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
