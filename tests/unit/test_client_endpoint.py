"""Where the client goes and whether it signs: arguments, then TIDELOG_URL, then the cluster's
stack, then `tidelog dev`; signing everywhere but loopback."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from tidelog.client.endpoint import Endpoint, resolve
from tidelog.client.errors import from_response
from tidelog.clusters import ClusterNotFoundError
from tidelog.errors import ConflictError, InternalError, RetriableError

DEPLOYED = "https://abc123.execute-api.eu-west-1.amazonaws.com/live"


class Stacks:
    def __init__(self, outputs=None, missing=False):
        self.outputs, self.missing, self.asked = outputs or {}, missing, []

    def __call__(self):
        return self

    def describe_stacks(self, StackName):
        self.asked.append(StackName)
        if self.missing:
            raise ClientError({"Error": {"Code": "ValidationError"}}, "DescribeStacks")
        outputs = [{"OutputKey": k, "OutputValue": v} for k, v in self.outputs.items()]
        return {"Stacks": [{"Outputs": outputs}]}


def test_the_order_of_sources():
    stacks = Stacks({"ApiUrl": DEPLOYED})
    env = {"TIDELOG_URL": "http://10.0.0.5:8080/", "TIDELOG_CLUSTER": "prod"}
    assert resolve("http://127.0.0.1:9/", environ=env, cloudformation=stacks).url == (
        "http://127.0.0.1:9"
    )
    assert resolve(environ=env, cloudformation=stacks).url == "http://10.0.0.5:8080"
    assert resolve(environ={"TIDELOG_CLUSTER": "prod"}, cloudformation=stacks) == Endpoint(
        DEPLOYED, sign=True, region="eu-west-1", source="the ApiUrl output of stack 'prod'"
    )
    assert stacks.asked == ["prod"]
    assert resolve(cluster="other", environ={}, cloudformation=stacks).url == DEPLOYED
    dev = resolve(environ={})
    assert (dev.url, dev.sign, dev.region) == ("http://127.0.0.1:8080", False, None)
    assert dev.source.startswith("tidelog dev")
    assert resolve(environ=env, cloudformation=stacks).source == "TIDELOG_URL"
    assert resolve(environ={"TIDELOG_API_PORT": "9999"}).url == "http://127.0.0.1:9999"


@pytest.mark.parametrize(
    ("url", "signs"),
    [
        ("http://127.0.0.1:8080", False),
        ("http://localhost:8080", False),
        ("http://[::1]:8080", False),
        ("http://10.0.0.5:8080", True),
        (DEPLOYED, True),
        ("https://api.example.com", True),
    ],
)
def test_signing_is_for_everything_but_loopback(url, signs):
    assert resolve(url, environ={}).sign is signs
    assert resolve(url, environ={}, sign=not signs).sign is not signs


def test_bad_sources_say_what_to_do():
    with pytest.raises(ValueError, match="not an http"):
        resolve("ftp://example.com", environ={})
    with pytest.raises(ClusterNotFoundError, match="TIDELOG_URL"):
        resolve(cluster="gone", environ={}, cloudformation=Stacks(missing=True))
    with pytest.raises(ClusterNotFoundError, match="no ApiUrl output"):
        resolve(cluster="odd", environ={}, cloudformation=Stacks({"Other": "x"}))


def test_answers_become_the_error_tree():
    body = json.dumps(
        {"error": "TOPIC_ALREADY_EXISTS", "error_code": 36, "message": "taken", "retriable": False}
    ).encode()
    error = from_response(409, body, {})
    assert isinstance(error, ConflictError)
    assert (error.kafka_error.name, error.message, error.http_status) == (
        "TOPIC_ALREADY_EXISTS",
        "taken",
        409,
    )
    throttled = from_response(429, b'{"message": "Too Many Requests"}', {})
    assert isinstance(throttled, RetriableError)
    assert throttled.retriable
    odd = from_response(500, b'{"error": "SOMETHING_NEW", "message": "hm"}', {})
    assert isinstance(odd, InternalError)
    assert odd.message == "SOMETHING_NEW: hm"
    assert from_response(502, b"<html>bad gateway</html>", {}).message.startswith("<html>")
