"""The client signs as the deployed API demands, proven against the local gateway's IAM
authorization (tidelog.local.sigv4) over real HTTP: signed requests pass, binary bodies and
escaped paths included, and every refusal reaches the caller with its Kafka name."""

from __future__ import annotations

import httpx2
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from tests.support.signing import KEY, SECRET, signing_gateway

from tidelog.client import AuthorizationError, Http
from tidelog.local.dev import local_keys


@pytest.fixture(scope="module")
def server(template):
    httpd, url, echo = signing_gateway(template)
    yield url, echo
    httpd.shutdown()


@pytest.fixture
def keys(monkeypatch):
    def use(key=KEY, secret=SECRET):
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
        monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
        monkeypatch.delenv("AWS_PROFILE", raising=False)

    use()
    return use


def test_signed_requests_pass_binary_bodies_and_escaped_names_included(server, keys):
    url, echo = server
    with Http(url, sign=True, region="us-east-1") as http:
        assert http.get("/v1/topics/a%20b.c")["path"] == "/v1/topics/a b.c"
        assert http.get("/v1/topics/t", at="a b+c/é", n=3)["path"] == "/v1/topics/t"
        body = bytes(range(256)) * 64
        answer = http.request(
            "POST",
            "/v1/topics/t/partitions/0/batches",
            content=body,
            headers={"Content-Type": "application/vnd.kafka.record-batch"},
        )
        assert answer.status_code == 200
    assert echo.events[-1]["isBase64Encoded"]


@pytest.mark.parametrize(
    ("key", "secret", "error_type", "kafka_name"),
    [
        ("AKIDWHO", SECRET, "UnrecognizedClientException", "CLUSTER_AUTHORIZATION_FAILED"),
        (KEY, "wrong", "InvalidSignatureException", "SASL_AUTHENTICATION_FAILED"),
    ],
)
def test_wrong_keys_are_refused_with_api_gateways_error(
    server, keys, key, secret, error_type, kafka_name
):
    keys(key, secret)
    with (
        Http(server[0], sign=True, region="us-east-1") as http,
        pytest.raises(AuthorizationError) as refused,
    ):
        http.get("/v1/topics/t")
    assert refused.value.error_type == error_type
    assert refused.value.kafka_error.name == kafka_name
    assert refused.value.http_status == 403


def test_unsigned_and_tampered_requests_are_refused(server, keys):
    url = server[0]
    with Http(url, sign=False) as http, pytest.raises(AuthorizationError) as refused:
        http.get("/v1/topics/t")
    assert refused.value.error_type == "MissingAuthenticationTokenException"
    assert refused.value.message == "Missing Authentication Token"

    target = f"{url}/v1/topics/t/partitions/0/batches"
    signed = AWSRequest(method="POST", url=target, data=b"the body signed")
    SigV4Auth(Credentials(KEY, SECRET), "execute-api", "us-east-1").add_auth(signed)
    headers = dict(signed.headers.items())
    assert httpx2.post(target, content=b"the body signed", headers=headers).status_code == 200
    tampered = httpx2.post(target, content=b"another body", headers=headers)
    assert tampered.status_code == 403
    assert tampered.headers["x-amzn-ErrorType"] == "InvalidSignatureException"
    assert tampered.json()["error"] == "SASL_AUTHENTICATION_FAILED"


def test_no_credentials_is_a_clear_error(server, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with (
        Http(server[0], sign=True, region="us-east-1") as http,
        pytest.raises(RuntimeError, match="no AWS credentials found"),
    ):
        http.get("/v1/topics/t")


def test_dev_accepts_the_environments_key_else_test():
    assert local_keys({}) == {"test": "test"}
    assert local_keys({"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s"}) == {"AKID": "s"}
