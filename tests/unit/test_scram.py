"""SCRAM as Kafka serves it: RFC 7677's own exchange, kafka-python's client as an oracle for
both mechanisms, Kafka's leniencies, and the credential APIs' rules (Kafka's
ScramControlManager)."""

from __future__ import annotations

import base64
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.net.sasl.scram import ScramClient

from tidelog.credentials import MECHANISMS, Credential, Credentials
from tidelog.kafka.codec import code
from tidelog.kafka.scram import (
    LoginError,
    ScramExchange,
    alter,
    describe,
)
from tidelog.storage.memory import MemoryMetadataStore

SHA256, SHA512 = 1, 2


def test_rfc_7677s_exchange_byte_for_byte():
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    stored = Credential.from_password("SCRAM-SHA-256", "pencil", salt, 4096)
    exchange = ScramExchange(
        "SCRAM-SHA-256", {"user": stored}.get, server_nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    first, done = exchange.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert (first, done) == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        False,
    )
    final, done = exchange.step(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert (final, done) == (b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", True)
    assert exchange.user == "user"


def _login(mechanism, stored, user, password, tamper=lambda final: final):
    client = ScramClient(user, password, mechanism)
    exchange = ScramExchange(mechanism, stored.get)
    first, _ = exchange.step(client.first_message())
    client.process_server_first_message(first)
    final, done = exchange.step(tamper(client.final_message()))
    client.process_server_final_message(final)  # the client checks the server's signature
    return done


@settings(max_examples=25, deadline=None)
@given(
    mechanism=st.sampled_from(sorted(MECHANISMS.values())),
    user=st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12),
    password=st.text(min_size=1, max_size=20),
    iterations=st.integers(4096, 4200),
)
def test_kafka_pythons_client_logs_in_with_the_password_and_only_with_it(
    mechanism, user, password, iterations
):
    stored = {
        user: Credential.from_password(mechanism, password, b"salt-" + user.encode(), iterations)
    }
    escaped = user.replace("=", "=3D").replace(",", "=2C")  # RFC 5802's saslname
    assert _login(mechanism, stored, escaped, password)
    with pytest.raises(LoginError, match="invalid client proof"):
        _login(mechanism, stored, escaped, password + "x")


def test_a_final_nonce_that_repeats_the_clients_as_old_librdkafka_sends_it_is_accepted():
    stored = {"alice": Credential.from_password("SCRAM-SHA-512", "pw", b"salt", 4096)}
    client = ScramClient("alice", "pw", "SCRAM-SHA-512")
    exchange = ScramExchange("SCRAM-SHA-512", stored.get)
    first, _ = exchange.step(client.first_message())
    client.process_server_first_message(first)
    # librdkafka before 2.6 signs and sends its nonce twice; Kafka checks only the ending.
    client_nonce = client.first_message().split(b",r=")[1]
    doubled = client.final_message().replace(b",r=", b",r=" + client_nonce, 1)
    with pytest.raises(LoginError, match="invalid client proof"):  # proof over the other text
        exchange.step(doubled)
    other = ScramExchange("SCRAM-SHA-512", stored.get)
    first, _ = other.step(b"n,,n=alice,r=abc")
    with pytest.raises(LoginError, match="not the server's"):
        other.step(b"c=biws,r=abcXYZ,p=" + base64.b64encode(bytes(64)))


@pytest.mark.parametrize(
    "first",
    [b"y,,n=alice,r=abc", b"n,,r=abc", b"n,,n=,r=abc", b"n,a=bob,n=alice,r=abc", b"\xff\xfe"],
)
def test_malformed_or_borrowed_first_messages_fail(first):
    stored = {"alice": Credential.from_password("SCRAM-SHA-256", "pw", b"salt", 4096)}
    with pytest.raises(LoginError):
        ScramExchange("SCRAM-SHA-256", stored.get).step(first)


def test_an_unknown_user_and_a_third_round_fail():
    with pytest.raises(LoginError, match="no credential"):
        ScramExchange("SCRAM-SHA-256", {}.get).step(b"n,,n=nobody,r=abc")
    stored = {"alice": Credential.from_password("SCRAM-SHA-256", "pw", b"salt", 4096)}
    client = ScramClient("alice", "pw", "SCRAM-SHA-256")
    exchange = ScramExchange("SCRAM-SHA-256", stored.get)
    client.process_server_first_message(exchange.step(client.first_message())[0])
    exchange.step(client.final_message())
    with pytest.raises(LoginError, match="two rounds"):
        exchange.step(client.final_message())


# -- the credential APIs --------------------------------------------------------------------


def _request(**body):
    return types.SimpleNamespace(body=types.SimpleNamespace(**body))


def _upsert(name, mechanism=SHA512, iterations=8192):
    return types.SimpleNamespace(
        name=name, mechanism=mechanism, iterations=iterations, salt=b"s", salted_password=b"p"
    )


def _delete(name, mechanism=SHA512):
    return types.SimpleNamespace(name=name, mechanism=mechanism)


def _results(answer):
    return {r["user"]: (r["error_code"], r["error_message"]) for r in answer["results"]}


def test_alterations_follow_kafkas_rules_and_the_valid_ones_apply():
    credentials = Credentials(MemoryMetadataStore())
    answer = alter(
        _request(
            deletions=[_delete("ghost")],
            upsertions=[
                _upsert("alice"),
                _upsert("twice"),
                _upsert("twice", mechanism=SHA256),
                _upsert(""),
                _upsert("weird", mechanism=9),
                _upsert("few", iterations=4095),
                _upsert("many", iterations=16385),
                _upsert("bob", mechanism=SHA256, iterations=4096),
            ],
        ),
        credentials,
    )
    assert _results(answer) == {
        "alice": (0, None),
        "bob": (0, None),
        "ghost": (
            code("RESOURCE_NOT_FOUND"),
            "Attempt to delete a user credential that does not exist",
        ),
        "twice": (
            code("DUPLICATE_RESOURCE"),
            "A user credential cannot be altered twice in the same request",
        ),
        "": (code("UNACCEPTABLE_CREDENTIAL"), "Username must not be empty"),
        "weird": (code("UNSUPPORTED_SASL_MECHANISM"), "Unknown SCRAM mechanism"),
        "few": (code("UNACCEPTABLE_CREDENTIAL"), "Too few iterations"),
        "many": (code("UNACCEPTABLE_CREDENTIAL"), "Too many iterations"),
    }
    assert credentials.listed() == {
        "alice": [("SCRAM-SHA-512", 8192)],
        "bob": [("SCRAM-SHA-256", 4096)],
    }
    assert credentials.get("SCRAM-SHA-512", "alice") == Credential.from_salted(
        "SCRAM-SHA-512", b"s", b"p", 8192
    )
    alter(_request(deletions=[_delete("alice")], upsertions=[]), credentials)
    assert list(credentials.listed()) == ["bob"]


def test_descriptions_list_every_user_or_those_named():
    credentials = Credentials(MemoryMetadataStore())
    alter(
        _request(deletions=[], upsertions=[_upsert("alice"), _upsert("bob", SHA256)]), credentials
    )
    everyone = describe(_request(users=None), credentials)
    assert [(r["user"], r["credential_infos"]) for r in everyone["results"]] == [
        ("alice", [{"mechanism": SHA512, "iterations": 8192}]),
        ("bob", [{"mechanism": SHA256, "iterations": 8192}]),
    ]
    named = describe(
        _request(
            users=[types.SimpleNamespace(name=n) for n in ("bob", "nobody", "alice", "alice")]
        ),
        credentials,
    )
    assert _results(named) == {
        "bob": (0, None),
        "nobody": (code("RESOURCE_NOT_FOUND"), "Attempt to describe nonexistent user"),
        "alice": (
            code("DUPLICATE_RESOURCE"),
            "Cannot describe SCRAM credentials for the same user twice in a single request",
        ),
    }


def test_the_table_never_holds_the_salted_password():
    meta = MemoryMetadataStore()
    alter(_request(deletions=[], upsertions=[_upsert("alice")]), Credentials(meta))
    (item,) = meta.query("scram")
    assert base64.b64encode(b"p").decode() not in item.values()
    assert set(item) == {
        "pk",
        "sk",
        "user",
        "mechanism",
        "salt",
        "stored_key",
        "server_key",
        "iterations",
    }
