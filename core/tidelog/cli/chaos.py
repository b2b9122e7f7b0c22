"""``tidelog chaos``: the proof under faults (docs/reliability.md). Runs whole chaos runs, one
per seed, checks each history, and writes the report."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


def add_command(commands: Any) -> None:
    chaos = commands.add_parser(
        "chaos",
        help="run real clients against agents that crash and stores that fail, and check "
        "every history (extra: chaos)",
    )
    chaos.add_argument("--seconds", type=float, default=600, help="each run's length (default 600)")
    chaos.add_argument(
        "--seeds", type=int, nargs="+", default=[1], help="one run per seed (default 1)"
    )
    chaos.add_argument(
        "--parallel", type=int, default=1, help="runs side by side (default 1; each is a stack)"
    )
    chaos.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where runs keep their histories (default: a temp dir)",
    )
    chaos.add_argument(
        "--report",
        type=Path,
        default=None,
        help="a Markdown page whose chaos section (and a plot beside it) is rewritten",
    )


def run(args: argparse.Namespace) -> int:
    try:
        from tidelog.chaos import report  # noqa: PLC0415 - the chaos extra, on demand
        from tidelog.chaos.run import RunOptions  # noqa: PLC0415
        from tidelog.chaos.run import run as run_once  # noqa: PLC0415
    except ImportError as exc:
        print(
            f"tidelog chaos needs the chaos extra: pip install 'tidelog[chaos]' ({exc})",
            file=sys.stderr,
        )
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="tidelog-chaos-"))
    began = time.monotonic()

    def one(seed: int) -> Path:
        folder = out / f"seed-{seed}"
        folder.mkdir(parents=True, exist_ok=True)

        def progress(line: str) -> None:
            print(f"[{time.monotonic() - began:6.0f} s] seed {seed}: {line}", flush=True)

        result = run_once(RunOptions(args.seconds, seed, folder, progress))
        progress("valid" if result.valid else f"ANOMALIES: {sorted(result.anomalies)}")
        return folder

    with ThreadPoolExecutor(max(1, args.parallel)) as pool:
        folders = list(pool.map(one, args.seeds))
    runs = [
        report.summarize(folder, seed) for folder, seed in zip(folders, args.seeds, strict=True)
    ]
    print(report.table(runs))
    if args.report is not None:
        image = args.report.with_name("reliability.png")
        report.plot(runs, image)
        report.write_section(
            args.report,
            report.table(runs) + f"\n\n![throughput and latency under faults]({image.name})",
        )
    print(f"histories under {out}")
    return 0 if all(r.valid for r in runs) else 1
