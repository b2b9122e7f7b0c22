"""The shared AWS clients: what they send beyond botocore's defaults."""

from __future__ import annotations

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from tidelog import aws


class EmptyBody:
    def stream(self, *args, **kwargs):
        return iter([b""])


class Headers:
    def __init__(self):
        self.seen = []

    def __call__(self, request, **_):
        self.seen.append(dict(request.headers))
        return AWSResponse(request.url, 200, {}, EmptyBody())


@pytest.fixture
def s3(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing is sent
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    aws.reset()
    yield aws.client("s3")
    aws.reset()


def test_a_small_put_sends_its_body_at_once_and_a_large_one_asks_first(s3):
    """No Expect: 100-continue below 2 MiB (a round trip saved on every flush); from 2 MiB,
    botocore's default stands."""
    headers = Headers()
    s3.meta.events.register("before-send", headers)
    for size in (0, 1024, aws.CONTINUE_FROM_BYTES - 1, aws.CONTINUE_FROM_BYTES):
        s3.put_object(Bucket="b", Key="k", Body=b"x" * size)
    assert [h.get("Expect") for h in headers.seen] == [None, None, None, b"100-continue"]


def test_botocore_alone_asks_for_every_put():
    """What the handler undoes: if botocore stops adding the header, this fails and the
    handler can go."""
    plain = boto3.session.Session().client(
        "s3",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    headers = Headers()
    plain.meta.events.register("before-send", headers)
    plain.put_object(Bucket="b", Key="k", Body=b"x")
    assert headers.seen[0].get("Expect") == b"100-continue"
