"""What ships: the Lambda layer's requirements, the handlers' routes, the OpenAPI document."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from tidelog.local import openapi
from tidelog.local.lambdas import load_module

ROOT = Path(__file__).resolve().parents[2]


def test_layer_requirements_equal_the_package_dependencies():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    lines = (ROOT / "core" / "requirements.txt").read_text().splitlines()
    layer = [line for line in lines if line and not line.startswith("#")]
    assert sorted(layer) == sorted(declared)


def test_template_routes_are_exactly_the_handlers_routes(template):
    for spec in template.functions():
        module = load_module(spec)
        if not spec.routes:  # a scheduled function: no routes the API does not deploy
            assert not hasattr(module, "app"), spec.logical_id
            continue
        app = module.app
        declared = {
            (method.upper(), route.openapi_path)
            for route in app._static_routes + app._dynamic_routes
            for method in [route.method]
        }
        deployed = {(r.method, r.path) for r in spec.routes}
        assert declared == deployed, spec.logical_id


def test_the_committed_openapi_document_is_current():
    committed = json.loads((ROOT / "docs" / "openapi.json").read_text())
    assert committed == openapi.schema(), "run `make openapi` and commit docs/openapi.json"


def test_every_operation_requires_sigv4():
    document = openapi.schema()
    assert document["security"] == [{"sigv4": []}]
    assert (
        document["components"]["securitySchemes"]["sigv4"]["x-amazon-apigateway-authtype"]
        == "awsSigv4"
    )
    assert set(document["paths"]) >= {
        "/v1/health",
        "/v1/cluster",
        "/v1/topics",
        "/v1/topics/{topic}/records",
        "/v1/producers",
    }
