"""IAM held to each role locally: a permission taken from one role fails the test that needs it,
with AccessDenied naming the action and the role, and nothing else."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tidelog.local.paths import stack_root

NEEDS_IT = "tests/functional/test_client_admin.py::test_a_topics_life"  # describes a topic
DOES_NOT = "tests/functional/test_client_admin.py::test_unsigned_against_the_dev_stack"


def without(tmp_path: Path, function: str, action: str) -> Path:
    """A copy of the template whose ``function`` role lacks ``action``."""
    root = stack_root()
    shutil.copytree(root / "infra", tmp_path / "infra")
    (tmp_path / "functions").symlink_to(root / "functions")
    template = tmp_path / "infra" / "template.yaml"
    text = template.read_text(encoding="utf-8")
    start = text.index(f"\n  {function}:\n")
    end = text.index("\n      Events:", start)
    policies, removed = re.subn(rf"\n *- {re.escape(action)}\n", "\n", text[start:end], count=1)
    assert removed == 1, f"{function} has no {action} to take away"
    template.write_text(text[:start] + policies + text[end:], encoding="utf-8")
    return template


def test_a_permission_taken_from_one_role_fails_the_test_that_needs_it(tmp_path):
    template = without(tmp_path, "AdminFunction", "dynamodb:BatchGetItem")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", NEEDS_IT, DOES_NOT],
        env={**os.environ, "TIDELOG_TEST_TEMPLATE": str(template)},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=stack_root(),
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    failed = re.findall(r"^FAILED (\S+)", output, re.MULTILINE)
    assert failed == [NEEDS_IT], output
    assert (
        "User: arn:aws:iam::123456789012:role/tidelog-AdminFunctionRole is not authorized to "
        "perform: dynamodb:BatchGetItem on resource: "
        "arn:aws:dynamodb:us-east-1:123456789012:table/tidelog-MetadataTable"
    ) in output, output
