"""Cold starts, side by side in one run (issue 15, part 4): import plus first invoke of the produce
handler against a bare Powertools REST handler with the same validation, Logger and Metrics
(benchmarks/bare_handler.py; target <= 1.25x), and what SnapStart leaves of a cold start.

Every measurement is a fresh interpreter of its own (``python -m benchmarks.coldstart MODE``),
timed from before the handler's import to the end of its first invocation, a JSON produce of
one record; interpreter start-up is the same for all and left out. tidelog's stores are the
in-memory ones (no AWS call: what is timed is code, not a network); building the boto3 clients a
real first request needs is timed as a row of its own. Modes alternate, seven rounds, medians.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import sys
import time
from typing import Any

from benchmarks.report import ROOT, Section, driven

ROUNDS = 7
MODES = ("bare", "tidelog", "tidelog+clients", "snapstart")
BODY = json.dumps({"records": [{"key": "user-1", "value": "click"}]}).encode()


def _memory_stores() -> None:
    from tidelog import runtime  # noqa: PLC0415 - already imported by the handler
    from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore  # noqa: PLC0415

    meta, objects = MemoryMetadataStore(), MemoryObjectStore(runtime.clock_ms)
    runtime.metadata_store = lambda: meta  # type: ignore[assignment]
    runtime.object_store = lambda: objects  # type: ignore[assignment]
    runtime.topics().create("t", 1, {})


def measure(mode: str) -> dict[str, float]:
    """In this interpreter: the milliseconds of each phase of one cold start."""
    from benchmarks.inprocess import Context, event, load_module, scratch_dir  # noqa: PLC0415 - untimed

    os.environ.update(
        TIDELOG_TABLE="t",
        TIDELOG_BUCKET="b",
        TIDELOG_STAGING_DIR=scratch_dir(),
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test",
        AWS_ENDPOINT_URL="http://127.0.0.1:9",  # nothing listens: no phase may call AWS
    )
    request = event(
        "/v1/topics/{topic}/records",
        "/v1/topics/t/records",
        {"topic": "t"},
        BODY,
        "application/json",
        binary=False,
    )
    phases: dict[str, float] = {}
    start = time.perf_counter()
    if mode == "bare":
        app = load_module("bare_handler", ROOT / "benchmarks/bare_handler.py")
    else:
        app = load_module("produce_app", ROOT / "functions/produce/app.py")
    phases["import"] = (time.perf_counter() - start) * 1000
    if mode == "snapstart":
        from snapshot_restore_py import (  # noqa: PLC0415
            _after_restore_registry,
            _before_snapshot_registry,
        )

        for hook, args, kwargs in reversed(_before_snapshot_registry):
            hook(*args, **kwargs)
    if mode != "bare":
        _memory_stores()
    start = time.perf_counter()
    if mode == "tidelog+clients":
        from tidelog import aws  # noqa: PLC0415

        aws.client("dynamodb")
        aws.client("s3")
        phases["clients"] = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
    if mode == "snapstart":
        for hook, args, kwargs in _after_restore_registry:
            hook(*args, **kwargs)
        phases["restore hooks"] = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        status = app.handler(request, Context())["statusCode"]
    if status != 200:
        raise RuntimeError(f"{mode}: the first invocation was answered {status}")
    phases["first invoke"] = (time.perf_counter() - start) * 1000
    return phases


def _fresh(mode: str) -> dict[str, float]:
    phases: dict[str, float] = driven("benchmarks.coldstart", mode)
    return phases


def run(progress: Any = print) -> Section:
    section = Section(
        "Cold start",
        "Import plus first invocation (a one-record JSON produce), each in a fresh interpreter, "
        "against a bare Powertools REST handler with the same validation, Logger and Metrics; "
        f"modes alternating, {ROUNDS} rounds, medians.",
        ("measurement", "baseline", "tidelog", "ratio / target"),
    )
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for i in range(ROUNDS):
        progress(f"  round {i + 1} of {ROUNDS}")
        for mode in MODES:
            runs[mode].append(_fresh(mode))

    def median(mode: str, *phases: str) -> float:
        return statistics.median(sum(r[p] for p in phases) for r in runs[mode])

    bare = median("bare", "import", "first invoke")
    ours = median("tidelog", "import", "first invoke")
    section.rows.append(
        (
            "import + first invoke, produce handler (stores in memory)",
            f"bare handler {bare:.0f} ms",
            f"{ours:.0f} ms (import {median('tidelog', 'import'):.0f})",
            f"{ours / bare:.2f}x (target <= 1.25)",
        )
    )
    clients = median("tidelog+clients", "import", "clients", "first invoke")
    section.rows.append(
        (
            "... and building its boto3 clients, as a first request on AWS does",
            f"bare handler {bare:.0f} ms",
            f"{clients:.0f} ms (clients {median('tidelog+clients', 'clients'):.0f})",
            f"{clients / bare:.2f}x (reported)",
        )
    )
    restored = median("snapstart", "restore hooks", "first invoke")
    section.rows.append(
        (
            "SnapStart: restore hooks + first invoke, primed before the snapshot",
            f"without SnapStart {clients:.0f} ms",
            f"{restored:.1f} ms (hooks {median('snapstart', 'restore hooks'):.2f})",
            f"{restored / clients:.2f}x of a cold start",
        )
    )
    section.notes += [
        "SnapStart's own restore time (Lambda's, from the snapshot) is not in these figures: "
        "AWS puts it at a few hundred ms or less for Python, and it does not grow with what the "
        "init phase imported and built.",
        "Priming (tidelog.snapstart) imports boto3 and builds the clients, imports the codecs, "
        "and resolves requests that fail validation to build the routes' validators; it makes "
        "no AWS call (these runs point AWS at a port where nothing listens).",
    ]
    return section


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1])))
