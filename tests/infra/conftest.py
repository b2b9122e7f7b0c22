"""The template, as CloudFormation will see it after SAM's transform."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tidelog.local.template import Template

_ARTIFACT_KEYS = {"CodeUri", "ContentUri", "DefinitionUri"}


class ManagedPolicies:
    """The translator's policy loader, offline: it asks only for these names' ARNs."""

    def load(self) -> dict[str, str]:
        names = [
            "AWSLambdaBasicExecutionRole",
            "AWSXrayWriteOnlyAccess",
            "AWSLambdaRole",
            "AWSXRayDaemonWriteAccess",
        ]
        return {n: f"arn:aws:iam::aws:policy/{n}" for n in names}


def packaged(body: dict[str, Any]) -> dict[str, Any]:
    """What `sam package` uploads: local artifact paths become S3 URIs."""
    body = copy.deepcopy(body)
    for resource in body["Resources"].values():
        properties = resource.get("Properties", {})
        for key in _ARTIFACT_KEYS & properties.keys():
            properties[key] = f"s3://artifacts/{key.lower()}.zip"
    return body


@pytest.fixture(scope="session")
def cloudformation(template: Template) -> dict[str, Any]:
    from samtranslator.translator.transform import transform

    return transform(packaged(template.body), {}, ManagedPolicies())


@pytest.fixture(scope="session")
def resources(cloudformation):
    def of_type(kind: str) -> dict[str, Any]:
        return {k: r for k, r in cloudformation["Resources"].items() if r["Type"] == kind}

    return of_type
