"""What we can check of the LocalStack path without a Docker engine."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

LOCALSTACK = Path(__file__).resolve().parents[2] / "localstack"


def test_the_image_is_pinned_to_a_tag_that_needs_no_auth_token():
    compose = yaml.safe_load((LOCALSTACK / "docker-compose.yml").read_text())
    image = compose["services"]["localstack"]["image"]
    name, _, tag = image.partition(":")
    assert name == "localstack/localstack"
    assert tuple(int(part) for part in tag.split(".")) <= (4, 14, 0), image


def test_the_deploy_script_parses():
    subprocess.run(["bash", "-n", str(LOCALSTACK / "deploy.sh")], check=True)
