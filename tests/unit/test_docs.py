"""The examples in the docs run, so they cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
EXAMPLE = re.compile(r"```python\n(.*?)```", re.DOTALL)


@pytest.mark.parametrize("page", ["core.md", "cost.md", "log.md"])
def test_python_examples_run(page, capsys):
    namespace: dict = {}
    blocks = EXAMPLE.findall((DOCS / page).read_text())
    assert blocks, f"{page} has no python examples"
    for block in blocks:
        exec(compile(block, f"{page} example", "exec"), namespace)
