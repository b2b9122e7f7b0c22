"""`make bench`: run every benchmark, print progress, write docs/benchmarks.md."""

from __future__ import annotations

import logging
import os
import platform
import sys
import time
from pathlib import Path

from benchmarks import (
    admin,
    authorization,
    aws_latency,
    baselines,
    big_group,
    client,
    coldstart,
    console,
    core,
    emulator,
    end_to_end,
    fetch,
    first_records,
    groups,
    housekeeping,
    json_api,
    kafka,
    many_agents,
    partitions,
    produce,
    scale,
    security,
    spark,
    transactions,
    wide,
)

MODULES = [
    core,
    produce,
    fetch,
    baselines,
    json_api,
    coldstart,
    aws_latency,
    groups,
    first_records,
    big_group,
    kafka,
    end_to_end,
    admin,
    security,
    authorization,
    transactions,
    client,
    console,
    spark,
    emulator,
    scale,
    housekeeping,
    partitions,
    wide,
    many_agents,
]
OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def main() -> int:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    sections = []
    for i, module in enumerate(MODULES, 1):
        print(f"[{i}/{len(MODULES)}] {module.__name__}", flush=True)
        sections.append(module.run(lambda message: print(message, flush=True)))
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}"
    )
    OUTPUT.write_text(
        "# Benchmarks\n\n"
        f"Written by `make bench` ({machine}). Every table compares against a baseline measured "
        "in the same run; these machines are noisy, so read the ratios.\n\n"
        + "\n".join(section.markdown() for section in sections)
    )
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
