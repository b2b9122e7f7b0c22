"""AWS identities at the Kafka port (tidelog.kafka.aws_identity): tokens made by the client
helper (tidelog.client.kafka_login) with botocore's own presigning, checked before anything is
sent, sent only to STS with the cluster's id, and the caller named by its ARN."""

from __future__ import annotations

import base64
import datetime
import urllib.parse

import boto3
import pytest

from tidelog.client.kafka_login import aws_token
from tidelog.kafka.aws_identity import CLUSTER_HEADER, IdentityVerifier
from tidelog.kafka.oauthbearer import bearer_token
from tidelog.kafka.scram import LoginError

CLUSTER = "q1Xv0x7uS7y3P3bgtvYQ6w"
NOW = datetime.datetime(2026, 11, 26, 12, 0, tzinfo=datetime.UTC)
JSON_ANSWER = (
    b'{"GetCallerIdentityResponse": {"GetCallerIdentityResult": {"Account": "123456789012",'
    b' "Arn": "arn:aws:iam::123456789012:user/alice", "UserId": "AIDAEXAMPLE"}}}'
)
XML_ANSWER = (
    b'<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
    b"<GetCallerIdentityResult><Arn>arn:aws:sts::123456789012:assumed-role/app/i-0abc</Arn>"
    b"<UserId>AROAEXAMPLE:i-0abc</UserId><Account>123456789012</Account>"
    b"</GetCallerIdentityResult></GetCallerIdentityResponse>"
)


class Sts:
    def __init__(self, status: int = 200, body: bytes = JSON_ANSWER) -> None:
        self.status, self.body = status, body
        self.sent: list[tuple[str, dict[str, str]]] = []

    def __call__(self, url: str, headers: dict[str, str]) -> tuple[int, bytes]:
        self.sent.append((url, headers))
        return self.status, self.body


def _session(region: str = "eu-west-1") -> boto3.Session:
    return boto3.Session(
        aws_access_key_id="AKIAEXAMPLE", aws_secret_access_key="secret", region_name=region
    )


@pytest.fixture
def token(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_STS", raising=False)
    made, _ = aws_token(CLUSTER, session=_session())
    return made


def _verifier(sts, *, now=NOW, endpoint=None):
    return IdentityVerifier(lambda: CLUSTER, sts, endpoint=endpoint, clock=lambda: now)


def _url(token: str) -> str:
    encoded = token.removeprefix("tidelog-aws-v1.")
    return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()


def _token(url: str) -> str:
    return "tidelog-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def _with(token: str, **changes: str) -> str:
    parts = urllib.parse.urlsplit(_url(token))
    query = dict(urllib.parse.parse_qsl(parts.query))
    query.update(changes)
    return _token(parts._replace(query=urllib.parse.urlencode(query)).geturl())


def _signed_now(token: str) -> str:
    return _with(token, **{"X-Amz-Date": NOW.strftime("%Y%m%dT%H%M%SZ")})


def test_a_token_is_sent_to_sts_with_the_clusters_id_and_names_its_signer(token):
    sts = Sts()
    identity = _verifier(sts).verify(_signed_now(token))
    assert identity.principal == "arn:aws:iam::123456789012:user/alice"
    assert identity.expires_at == NOW + datetime.timedelta(seconds=900)
    ((url, headers),) = sts.sent
    assert url.startswith("https://sts.eu-west-1.amazonaws.com/?Action=GetCallerIdentity&")
    assert headers[CLUSTER_HEADER] == CLUSTER
    signed = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    assert CLUSTER_HEADER in signed["X-Amz-SignedHeaders"].split(";")


def test_an_assumed_role_logs_in_as_its_role_from_stss_xml_answer(token):
    identity = _verifier(Sts(body=XML_ANSWER)).verify(_signed_now(token))
    assert identity.principal == "arn:aws:iam::123456789012:role/app"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://evil.example.com/?Action=GetCallerIdentity", "not STS"),
        ("https://sts.amazonaws.com.evil.example/?Action=GetCallerIdentity", "not STS"),
        ("http://sts.amazonaws.com/?Action=GetCallerIdentity", "not STS"),
        ("https://sts.amazonaws.com/other?Action=GetCallerIdentity", "not STS"),
    ],
)
def test_nothing_but_sts_is_ever_fetched(token, url, why):
    parts = urllib.parse.urlsplit(_url(_signed_now(token)))
    elsewhere = urllib.parse.urlsplit(url)
    forged = _token(
        parts._replace(
            scheme=elsewhere.scheme, netloc=elsewhere.netloc, path=elsewhere.path
        ).geturl()
    )
    sts = Sts()
    with pytest.raises(LoginError, match=why):
        _verifier(sts).verify(forged)
    assert sts.sent == []


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"Action": "AssumeRole"}, "not STS GetCallerIdentity"),
        ({"Version": "2099-01-01"}, "not STS GetCallerIdentity"),
        ({"X-Amz-SignedHeaders": "host"}, "does not sign x-tidelog-cluster"),
        ({"X-Amz-Algorithm": "AWS4-HMAC-SHA1"}, "not signed with SigV4"),
        ({"X-Amz-Expires": "901"}, "lasts 901 s"),
        ({"X-Amz-Expires": "0"}, "lasts 0 s"),
        ({"X-Amz-Date": "20261126T115000Z", "X-Amz-Expires": "60"}, "expired"),
        ({"X-Amz-Date": "20261126T121000Z"}, "in the future"),
        ({"X-Amz-Date": "yesterday"}, "signing time"),
    ],
)
def test_a_token_that_is_not_a_fresh_signed_getcalleridentity_is_refused_unsent(
    token, changes, why
):
    sts = Sts()
    with pytest.raises(LoginError, match=why):
        _verifier(sts).verify(_with(_signed_now(token), **changes))
    assert sts.sent == []


@pytest.mark.parametrize(
    "forged", ["k8s-aws-v1.abc", "tidelog-aws-v1.***", "tidelog-aws-v1." + "A" * 5]
)
def test_a_token_that_is_not_ours_is_refused(forged):
    with pytest.raises(LoginError):
        _verifier(Sts()).verify(forged)


def test_a_repeated_parameter_is_refused(token):
    url = _url(_signed_now(token)) + "&Action=GetCallerIdentity"
    with pytest.raises(LoginError, match="repeated"):
        _verifier(Sts()).verify(_token(url))


def test_what_sts_refuses_is_refused(token):
    refused = Sts(403, b"<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code></Error>")
    with pytest.raises(LoginError, match="STS refused the token \\(403\\)"):
        _verifier(refused).verify(_signed_now(token))


def test_the_agents_own_endpoint_is_sts_too_and_only_it(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
    made, _ = aws_token(CLUSTER, session=_session())
    local = _signed_now(made)
    assert _url(local).startswith("http://127.0.0.1:4566/")
    with pytest.raises(LoginError, match="not STS"):
        _verifier(Sts()).verify(local)
    assert _verifier(Sts(), endpoint="http://127.0.0.1:4566").verify(local).principal


def test_the_token_travels_in_an_rfc_7628_message_as_kafka_clients_send_it(token):
    message = f"n,,\x01auth=Bearer {token}\x01\x01".encode()
    assert bearer_token(message) == token
