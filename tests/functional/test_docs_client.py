"""docs/client.md's Python and docs/cli.md's commands run against `tidelog dev`, so neither can
drift from the code."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tidelog.cli import main

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_client_examples_run(dev, monkeypatch, capsys):
    monkeypatch.setenv("TIDELOG_URL", dev.api_url)
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "client.md").read_text(), re.DOTALL)
    assert blocks
    for block in blocks:
        exec(compile(block, "client.md example", "exec"), {})
    assert "TOPIC_ALREADY_EXISTS 409" in capsys.readouterr().out


def test_cli_examples_run_in_order(dev, monkeypatch, capsys):
    monkeypatch.setenv("TIDELOG_URL", dev.api_url)
    (block,) = re.findall(r"```sh\n(.*?)```", (DOCS / "cli.md").read_text(), re.DOTALL)
    commands = [shlex.split(line) for line in block.splitlines() if line.strip()]
    assert [c[0] for c in commands] == ["tidelog"] * len(commands)
    for command in commands:
        assert main(command[1:]) == 0, (command, capsys.readouterr().err)
    assert "deleted signups" in capsys.readouterr().out
