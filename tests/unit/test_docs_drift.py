"""The docs name only what exists: every module path (``tidelog.log.write.commit``, and the name
after it when there is one), every file of the repository, every ``make`` target and every
``tidelog`` command they mention. A module moved or a command renamed fails here, in the page
that still names it."""

from __future__ import annotations

import argparse
import ast
import re
from functools import cache
from pathlib import Path

import pytest

from tidelog.cli import parser

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "core"
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

MODULE_PATH = re.compile(r"\btidelog(?:\.[A-Za-z_]\w*)+")
REPO_FILE = re.compile(
    r"(?<![\w/.-])(?:core|tests|docs|functions|benchmarks|infra|localstack|\.ci)/"
    r"[\w./-]*\w\.(?:py|md|ya?ml|json|toml|png|sh)\b"
)
TICKED = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"```[a-z]*\n(.*?)```", re.DOTALL)
MAKE = re.compile(r"^(?:\$ )?make ([a-z][\w-]*)")
COMMAND = re.compile(r"^(?:\$ )?(?:[A-Z_]+=\S+ )*(?:\S*/)?tidelog ((?:[a-z][\w-]* ?)+)")


def _module_file(parts: list[str]) -> Path | None:
    base = PACKAGE.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


@cache
def _names(module: Path) -> frozenset[str]:
    """What a module defines at its top level (and imports, for a package's re-exports)."""
    names: set[str] = set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def _module_path_exists(dotted: str) -> bool:
    """The longest module prefix exists, and the name after it (if any) is defined there."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        module = _module_file(parts[:end])
        if module is None:
            continue
        rest = parts[end:]
        return not rest or rest[0] in _names(module) or rest[0] in {"py", "md"}
    return False


@cache
def _make_targets() -> frozenset[str]:
    rule = re.compile(r"^([a-z][\w-]*):", re.MULTILINE)
    return frozenset(rule.findall((ROOT / "Makefile").read_text()))


def _command_exists(words: list[str]) -> bool:
    """``tidelog topic create`` and the like: each word a subcommand of the one before, as far
    as the words go and the command has subcommands."""
    node: argparse.ArgumentParser = parser()
    for i, word in enumerate(words):
        choices = next(
            (a.choices for a in node._actions if isinstance(a, argparse._SubParsersAction)),
            None,
        )
        if choices is None:
            return True  # the rest are arguments
        if word not in choices:
            return i > 0 and not word.isalpha()  # an argument where a subcommand may be
        node = choices[word]
    return True


def _commands(text: str) -> list[tuple[str, str]]:
    """(kind, words) for each ``make`` and ``tidelog`` invocation in code: ticked spans and the
    lines of fenced blocks."""
    lines = [span for span in TICKED.findall(FENCE.sub("", text))]
    lines += [line.strip() for block in FENCE.findall(text) for line in block.splitlines()]
    found = []
    for line in lines:
        if match := MAKE.match(line):
            found.append(("make", match[1]))
        elif match := COMMAND.match(line):
            found.append(("tidelog", match[1].strip()))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_names_only_modules_and_files_that_exist(page):
    text = page.read_text()
    missing = sorted({m for m in MODULE_PATH.findall(text) if not _module_path_exists(m)})
    missing += sorted({f for f in REPO_FILE.findall(text) if not (ROOT / f).exists()})
    assert not missing, f"{page.name} names what does not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_runs_only_commands_that_exist(page):
    missing = []
    for kind, words in _commands(page.read_text()):
        if kind == "make" and words not in _make_targets():
            missing.append(f"make {words}")
        elif kind == "tidelog" and not _command_exists(words.split()):
            missing.append(f"tidelog {words}")
    assert not missing, f"{page.name} runs what does not exist: {sorted(set(missing))}"


def test_the_checks_can_fail():
    assert not _module_path_exists("tidelog.log.commit")  # moved into tidelog.log.write
    assert not _module_path_exists("tidelog.log.write.commit.NoSuchThing")
    assert _module_path_exists("tidelog.log.write.commit.Committer")
    assert _command_exists(["topic", "create"])
    assert not _command_exists(["topics"])
    assert not _command_exists(["topic", "explode"])
    assert ("make", "tset") in _commands("run `make tset`")
    assert "tset" not in _make_targets()
    assert REPO_FILE.findall("see core/tidelog/nowhere.py") == ["core/tidelog/nowhere.py"]
