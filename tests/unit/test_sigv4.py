"""The local gateway's IAM authorization: AWS's own SigV4 test vectors pass, requests botocore
signs pass, and each way of getting it wrong is refused as API Gateway refuses it."""

from __future__ import annotations

import datetime
from unittest import mock
from urllib.parse import urlsplit

import botocore.auth
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tidelog.local import sigv4
from tidelog.local.sigv4 import SignedRequest, verify

# From AWS's SigV4 test suite (aws-sig-v4-test-suite: get-vanilla, post-vanilla).
VECTOR_KEY, VECTOR_SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
VECTOR_TIME = datetime.datetime(2015, 8, 30, 12, 36, tzinfo=datetime.UTC)
NOW = datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.UTC)
KEYS = {"AKIDLOCAL": "local-secret"}


@pytest.mark.parametrize(
    ("method", "signature"),
    [
        ("GET", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        ("POST", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
    ],
)
def test_aws_test_vectors_pass(method, signature):
    request = SignedRequest(
        method,
        "https://example.amazonaws.com/",
        {
            "Host": "example.amazonaws.com",
            "X-Amz-Date": "20150830T123600Z",
            "Authorization": f"AWS4-HMAC-SHA256 Credential={VECTOR_KEY}/20150830/us-east-1/"
            f"service/aws4_request, SignedHeaders=host;x-amz-date, Signature={signature}",
        },
        b"",
    )
    secrets = {VECTOR_KEY: VECTOR_SECRET}.get
    assert verify(request, secrets, "us-east-1", VECTOR_TIME, service="service") is None
    wrong = request.headers["Authorization"].replace(signature, "0" * 64)
    tampered = SignedRequest(method, request.url, {**request.headers, "Authorization": wrong}, b"")
    refusal = verify(tampered, secrets, "us-east-1", VECTOR_TIME, service="service")
    assert refusal is sigv4.SIGNATURE_MISMATCH


def signed(
    method="POST",
    url="http://127.0.0.1:8080/v1/topics/a%20b/records?x=1&a=2",
    body=b'{"records": []}',
    key="AKIDLOCAL",
    secret="local-secret",
    region="us-east-1",
    service="execute-api",
    at=NOW,
):
    request = AWSRequest(method=method, url=url, data=body, headers={"Content-Type": "x/y"})
    signer = SigV4Auth(Credentials(key, secret), service, region)
    with mock.patch.object(
        botocore.auth, "get_current_datetime", return_value=at.replace(tzinfo=None)
    ):
        signer.add_auth(request)
    sent = {"Host": urlsplit(url).netloc, **dict(request.headers.items())}  # as HTTP sends it
    return SignedRequest(method, url, sent, body)


def test_a_request_botocore_signed_passes():
    assert verify(signed(), KEYS.get, "us-east-1", NOW) is None
    assert verify(signed(method="GET", body=b""), KEYS.get, "us-east-1", NOW) is None


def test_each_way_of_getting_it_wrong_is_refused_as_api_gateway_does():
    good = signed()
    cases = {
        "no authorization": SignedRequest(
            "POST", good.url, {k: v for k, v in good.headers.items() if k != "Authorization"}, b""
        ),
        "unknown key": signed(key="AKIDWHO"),
        "wrong secret": signed(secret="guess"),
        "tampered body": SignedRequest(good.method, good.url, good.headers, b'{"records": [1]}'),
        "tampered query": SignedRequest(good.method, good.url + "&z=9", good.headers, good.body),
        "a signed header changed": SignedRequest(
            good.method, good.url, {**good.headers, "Content-Type": "x/z"}, good.body
        ),
        "a signed header missing": SignedRequest(
            good.method,
            good.url,
            {k: v for k, v in good.headers.items() if k != "Content-Type"},
            good.body,
        ),
        "expired": signed(at=NOW - datetime.timedelta(minutes=6)),
        "another region": signed(region="eu-west-1"),
        "another service": signed(service="s3"),
        "not SigV4": SignedRequest("POST", good.url, {"Authorization": "Bearer x"}, b""),
    }
    answers = {name: verify(r, KEYS.get, "us-east-1", NOW) for name, r in cases.items()}
    assert answers["no authorization"] is sigv4.MISSING_TOKEN
    assert answers["unknown key"] is sigv4.INVALID_TOKEN
    for name in ("wrong secret", "tampered body", "tampered query", "a signed header changed"):
        assert answers[name] is sigv4.SIGNATURE_MISMATCH, name
    assert answers["a signed header missing"] is sigv4.SIGNATURE_MISMATCH
    assert answers["expired"].message.startswith("Signature expired: 20261123T115400Z is now")
    assert answers["expired"].error_type == "InvalidSignatureException"
    assert "region 'us-east-1'" in answers["another region"].message
    assert "service: 'execute-api'" in answers["another service"].message
    assert answers["not SigV4"].error_type == "IncompleteSignatureException"
    assert len({a.message for a in answers.values()}) == 6, "each kind says what is wrong"


def test_a_clock_within_five_minutes_either_way_passes():
    for minutes in (-4, 4):
        at = NOW + datetime.timedelta(minutes=minutes)
        assert verify(signed(at=at), KEYS.get, "us-east-1", NOW) is None
