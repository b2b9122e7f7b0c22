"""docs/client.md's Python and docs/cli.md's commands run against `tidelog dev`, so neither can
drift from the code."""

from __future__ import annotations

import io
import re
import shlex
import sys
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
    """Every sh block of docs/cli.md, in order; ``echo TEXT | tidelog ...`` feeds TEXT as stdin."""
    monkeypatch.setenv("TIDELOG_URL", dev.api_url)
    blocks = re.findall(r"```sh\n(.*?)```", (DOCS / "cli.md").read_text(), re.DOTALL)
    lines = [line for block in blocks for line in block.splitlines() if line.strip()]
    assert len(blocks) >= 3
    for line in lines:
        command, stdin = shlex.split(line), ""
        if command[0] == "echo":
            pipe = command.index("|")
            stdin, command = " ".join(command[1:pipe]) + "\n", command[pipe + 1 :]
        assert command[0] == "tidelog", line
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        assert main(command[1:]) == 0, (line, capsys.readouterr().err)
    out = capsys.readouterr().out
    assert (
        "ada@example.com\nbob@example.com\n" in out or "bob@example.com\nada@example.com\n" in out
    )
    assert "deleted signups" in out
