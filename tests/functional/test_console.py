"""The console's server: its own files, and a proxy onto the API that signs exactly as the client
does, answers only its own pages, and passes on nothing but the API's paths."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from tests.support.signing import KEY, SECRET, signing_gateway
from werkzeug.serving import make_server

from tidelog.client.http import Http
from tidelog.console.lag import LagSampler
from tidelog.console.server import CONSOLE_HEADER, Console

OURS = {CONSOLE_HEADER: "1"}


def serve(app):
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.port}"


def call(url, method="GET", body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture(scope="module")
def sampler(dev):
    sampler = LagSampler(Http(dev.api_url, sign=False), interval_s=0.2)
    yield sampler
    sampler.stop()


@pytest.fixture(scope="module")
def console(dev, sampler):
    httpd, url = serve(Console(Http(dev.api_url, sign=False), sampler=sampler))
    yield url
    httpd.shutdown()


def test_it_serves_its_own_files_with_a_strict_policy(console):
    status, headers, body = call(console + "/")
    assert status == 200
    assert b'<script type="module" src="console.js">' in body
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    status, headers, _ = call(console + "/console.js")
    assert (status, headers["Content-Type"].split(";")[0]) == (200, "text/javascript")
    for path in ("/nothing.js", "/../pyproject.toml", "/static/console.js", "/api"):
        assert call(console + path)[0] == 404, path


def test_api_calls_pass_through_with_the_apis_answers(console, dev):
    name = f"console-{uuid.uuid4().hex[:8]}"
    status, _, body = call(
        console + "/api/v1/topics", "POST", {"name": name, "partitions": 2}, OURS
    )
    assert status == 201, body
    status, _, body = call(console + f"/api/v1/topics/{name}", headers=OURS)
    assert (status, json.loads(body)["name"]) == (200, name)
    absent = f"absent-{uuid.uuid4().hex[:8]}"
    status, _, body = call(console + f"/api/v1/topics/{absent}", headers=OURS)
    assert status == 404
    assert json.loads(body)["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    status, headers, _ = call(
        console + f"/api/v1/topics/{name}/partitions/0/records?offset=0",
        headers={**OURS, "Accept": "application/vnd.kafka.record-batch"},
    )
    assert (status, headers["X-High-Watermark"], headers["Cache-Control"]) == (200, "0", "no-store")


@pytest.mark.parametrize(
    ("path", "headers", "status", "error"),
    [
        ("/api/v1/topics", {}, 403, "CLUSTER_AUTHORIZATION_FAILED"),  # not from its pages
        ("/api/v1/topics", {**OURS, "Origin": "http://evil.test"}, 403, None),
        ("/api/v1/topics", {**OURS, "Host": "rebound.test"}, 403, None),  # DNS rebinding
        ("/api/v2/topics", OURS, 404, "INVALID_REQUEST"),
        ("/api/v1/../admin", OURS, 404, None),
        ("/api/v1/%2e%2e/admin", OURS, 404, None),
        ("/api/moto-api/reset", OURS, 404, None),
        ("/lag?group=g", {}, 403, "CLUSTER_AUTHORIZATION_FAILED"),
        ("/lag?group=g", {**OURS, "Host": "rebound.test"}, 403, None),
        ("/lag", OURS, 400, "INVALID_REQUEST"),
    ],
)
def test_it_refuses_all_but_its_own_pages_and_the_api(console, path, headers, status, error):
    answer, _, body = call(console + path, headers=headers)
    assert answer == status
    if error:
        assert json.loads(body)["error"] == error


def test_it_keeps_each_groups_lag_over_time(console, dev, sampler):
    """From the first request on, the console samples every group's total lag; the page reads
    the history back (the browser tests watch it fall)."""
    group, topic = f"lagged-{uuid.uuid4().hex[:6]}", f"lag-{uuid.uuid4().hex[:6]}"
    call(console + "/api/v1/topics", "POST", {"name": topic, "partitions": 1}, OURS)
    records = {"records": [{"value": str(i)} for i in range(5)]}
    call(console + f"/api/v1/topics/{topic}/records", "POST", records, OURS)
    reset = {"to": "earliest", "topics": [topic]}
    status, _, body = call(console + f"/api/v1/groups/{group}/offsets/reset", "POST", reset, OURS)
    assert status == 200, body

    def history():
        status, headers, body = call(console + f"/lag?group={group}", headers=OURS)
        assert (status, headers["Cache-Control"]) == (200, "no-store")
        return json.loads(body)

    deadline = time.monotonic() + 20
    while len(history()["samples"]) < 2:
        assert time.monotonic() < deadline, "no samples came"
        time.sleep(0.1)
    answer = history()
    assert (answer["group"], answer["interval_ms"], answer["error"]) == (group, 200, None)
    times = [t for t, _ in answer["samples"]]
    assert times == sorted(times)
    assert {lag for _, lag in answer["samples"]} == {5}
    assert not sampler.paused


def test_it_signs_as_the_client_does(template, monkeypatch):
    """Against the gateway that verifies SigV4 as API Gateway does: the console's calls pass
    with this machine's key, and a refusal reaches the page with its Kafka name."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    gateway_server, gateway_url, echo = signing_gateway(template)
    servers = [gateway_server]
    try:
        console_server, url = serve(Console(Http(gateway_url, sign=True, region="us-east-1")))
        servers.append(console_server)
        status, _, body = call(url + "/api/v1/topics/a%20b.c", headers=OURS)
        assert (status, json.loads(body)["path"]) == (200, "/v1/topics/a b.c")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
        wrong_server, wrong = serve(Console(Http(gateway_url, sign=True, region="us-east-1")))
        servers.append(wrong_server)
        status, _, body = call(wrong + "/api/v1/topics/t", headers=OURS)
        assert status == 403
        assert json.loads(body)["error"] == "SASL_AUTHENTICATION_FAILED"
        assert echo.events[-1]["path"] == "/v1/topics/a b.c"  # the refused call reached nothing
    finally:
        for server in servers:
            server.shutdown()


def test_tidelog_dev_serves_it_at_console(dev):
    status, headers, _ = call(dev.api_url + "/console")
    assert status == 200 or headers.get("Location") == "/console/"
    status, _, body = call(dev.api_url + "/console/")
    assert status == 200
    assert b"tidelog" in body
    status, _, body = call(dev.api_url + "/console/api/v1/topics", headers=OURS)
    assert status == 200
    assert "topics" in json.loads(body)


def test_the_vendored_chart_library_is_npms_release_with_its_licence():
    """uPlot is vendored (the pages fetch nothing from the network): the copy is the release
    package.json pins, licence included."""
    root = Path(__file__).resolve().parents[2]
    npm = root / "node_modules/uplot"
    if not npm.exists():
        pytest.skip("npm's copy is not installed (npm ci, from package.json)")
    vendor = root / "core/tidelog/console/static/vendor"
    for ours, theirs in (
        ("uPlot.iife.min.js", "dist/uPlot.iife.min.js"),
        ("uPlot.min.css", "dist/uPlot.min.css"),
        ("uPlot.LICENSE", "LICENSE"),
    ):
        assert (vendor / ours).read_bytes() == (npm / theirs).read_bytes(), ours
