"""The layout shows the architecture (docs/architecture.md), and these keep it true: the record
format and the stores know nothing of the log, the log nothing of its callers, the log's three
paths nothing of one another, no two parts of the package import each other, and no module
grows past what one sitting can read."""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"
PATHS = ("tidelog.log.write", "tidelog.log.read", "tidelog.log.lifecycle")
MAX_LINES = 500


@cache
def modules() -> dict[str, Path]:
    found = {}
    for path in CORE.rglob("*.py"):
        name = ".".join(path.relative_to(CORE).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


@cache
def imports() -> dict[str, frozenset[str]]:
    """Each module's imports of tidelog modules, wherever in the module they are made."""
    graph = {}
    for name, path in modules().items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tidelog"):
                found.add(node.module)
                found.update(
                    f"{node.module}.{a.name}"
                    for a in node.names
                    if f"{node.module}.{a.name}" in modules()
                )
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("tidelog"))
        graph[name] = frozenset(found)
    return graph


def part(module: str) -> str:
    """The part of the package a module belongs to: ``tidelog.kafka``, ``tidelog.log`` (what
    the log's paths share) or one of the log's paths."""
    for path in PATHS:
        if module == path or module.startswith(f"{path}."):
            return path
    return ".".join(module.split(".")[:2])


def offending(importers: str, allowed: set[str]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in imports().items()
        if part(module) == importers or module.startswith(f"{importers}.")
        for target in targets
        if part(target) not in allowed
    )


@pytest.mark.parametrize("low", ["tidelog.records", "tidelog.storage"])
def test_the_record_format_and_the_stores_know_nothing_above_them(low):
    allowed = {"tidelog.__init__", "tidelog", "tidelog.errors", "tidelog.records", low}
    assert offending(low, allowed) == []


def test_transactions_rules_stand_on_the_stores_and_the_record_format_alone():
    allowed = {"tidelog", "tidelog.errors", "tidelog.records", "tidelog.storage", "tidelog.txn"}
    assert offending("tidelog.txn", allowed) == []


def test_the_log_knows_nothing_of_its_callers():
    allowed = {"tidelog", "tidelog.errors", "tidelog.records", "tidelog.storage", "tidelog.txn"}
    allowed |= {"tidelog.partitioner", "tidelog.log", "tidelog.threads", "tidelog.principals"}
    allowed |= set(PATHS)
    assert offending("tidelog.log", allowed) == []


@pytest.mark.parametrize("path", PATHS)
def test_the_logs_paths_never_import_one_another(path):
    allowed = {p for p in {part(m) for m in modules()} if p not in PATHS} | {path}
    assert offending(path, allowed) == []


def test_what_the_paths_share_imports_none_of_them():
    shared = [m for m in modules() if part(m) == "tidelog.log"]
    crossing = [f"{m} imports {t}" for m in shared for t in imports()[m] if part(t) in PATHS]
    assert crossing == []


def test_no_two_parts_of_the_package_import_each_other():
    edges: dict[str, set[str]] = defaultdict(set)
    for module, targets in imports().items():
        edges[part(module)].update(part(t) for t in targets if part(t) != part(module))
    edges["tidelog"].clear()  # the package itself: its version, imported by everything
    cycles = []

    def visit(node: str, trail: list[str]) -> None:
        if node in trail:
            cycles.append(" -> ".join([*trail[trail.index(node) :], node]))
            return
        for target in sorted(edges[node]):
            visit(target, [*trail, node])

    for start in sorted(edges):
        visit(start, [])
    assert cycles == []


def test_no_module_is_longer_than_one_sitting():
    long = {
        name: lines
        for name, path in modules().items()
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_checks_can_fail():
    assert part("tidelog.log.write.commit") == "tidelog.log.write"
    assert part("tidelog.log.keys") == "tidelog.log"
    assert "tidelog.log.write.plan" in imports()["tidelog.log.write.groupcommit"]
    assert offending("tidelog.log.write", {"tidelog.errors"})  # it does import the log's core
