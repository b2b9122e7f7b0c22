"""`tidelog doctor` against a gateway that verifies SigV4 as API Gateway does: all green with the
right key, and each way of being refused named with its cause and fix."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace

import pytest
from werkzeug.serving import make_server

from tidelog.cli import main
from tidelog.cli.doctor import _refused
from tidelog.local.dev import iam_authorizer
from tidelog.local.gateway import Gateway
from tidelog.local.template import Route

KEY, SECRET = "AKIDDOCTORTEST", "doctor-secret"


class Cluster:
    def invoke(self, event):
        body = {"status": "ok", "version": "9.9"}
        if event["path"] == "/v1/cluster":
            body = {"cluster_id": "abc", "version": "9.9"}
        return {"statusCode": 200, "body": json.dumps(body)}


@pytest.fixture(scope="module")
def api(template):
    gateway = Gateway(
        [Route("GET", "/v1/health", "Cluster"), Route("GET", "/v1/cluster", "Cluster")],
        {"Cluster": Cluster()},
        binary_media_types=[],
        stage="live",
        responses=template.gateway_responses(),
        authorizer=iam_authorizer({KEY: SECRET}, "us-east-1"),
    )
    httpd = make_server("127.0.0.1", 0, gateway, threaded=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.port}"
    httpd.shutdown()


@pytest.fixture
def doctor(api, monkeypatch, capsys, tmp_path):
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "TIDELOG_URL", "TIDELOG_CLUSTER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")

    def run(key=KEY, secret=SECRET, url=api):
        if key:
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
        else:
            monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
            monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
        code = main(["doctor", "--url", url, "--sign"])
        return code, capsys.readouterr().out

    return run


def test_all_green_with_the_right_key(doctor, api):
    code, out = doctor()
    assert code == 0, out
    lines = [line.split()[:2] for line in out.splitlines()]
    assert lines == [
        ["ok", "endpoint"],
        ["ok", "reachable"],
        ["ok", "credentials"],
        ["ok", "signature"],
        ["ok", "health"],
    ]
    assert f"{api} from argument; signed for region us-east-1" in out
    assert "AKID…TEST from env" in out
    assert "cluster abc" in out


@pytest.mark.parametrize(
    ("key", "secret", "cause"),
    [
        ("AKIDWHO", SECRET, "the access key is unknown to the API's account"),
        (KEY, "wrong", "the signature does not match"),
        (None, None, "no AWS credentials found"),
    ],
)
def test_each_refusal_names_its_cause_and_fix(doctor, key, secret, cause):
    code, out = doctor(key, secret)
    assert code == 1
    assert cause in out
    assert "fix: " in out
    assert out.count("FAIL") == 1


def test_an_unreachable_api(doctor):
    code, out = doctor(url="http://127.0.0.1:1")
    assert code == 1
    assert "FAIL reachable" in out
    assert "is the API running" in out


def test_a_clock_off_is_told_apart_from_a_wrong_key():
    expired = SimpleNamespace(
        error_type="InvalidSignatureException",
        message="Signature expired: 20261123T115400Z is now earlier than 20261123T115500Z",
        http_status=403,
    )
    assert "clock" in _refused(expired, "us-east-1").found
    denied = SimpleNamespace(error_type="AccessDeniedException", message="no", http_status=403)
    assert "execute-api:Invoke" in _refused(denied, "us-east-1").fix
