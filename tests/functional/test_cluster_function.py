"""The cluster function, fed the events API Gateway sends it."""

from __future__ import annotations

import json
import re

from tests.support.devserver import get_json


def test_health(function, api_event):
    response = function("ClusterFunction").invoke(api_event("get_health"))
    assert response["statusCode"] == 200
    assert json.loads(response["body"]) == {"status": "ok", "version": "0.1.0"}


def test_cluster_id_is_the_one_the_stack_created_at_start(function, api_event, dev):
    response = function("ClusterFunction").invoke(api_event("get_cluster"))
    assert response["statusCode"] == 200
    body = json.loads(response["body"])
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", body["cluster_id"])
    assert body == get_json(f"{dev.api_url}/v1/cluster")[1]


def test_environments_do_not_share_handler_state(function, api_event):
    runtime = function("ClusterFunction")
    first = runtime.invoke(api_event("get_health"))
    second = runtime.invoke(api_event("get_cluster"))
    assert runtime.environments == 1  # sequential calls reuse one warm environment
    assert first["statusCode"] == second["statusCode"] == 200
