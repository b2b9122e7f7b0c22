"""Timing helpers and the markdown report every benchmark module contributes a section to."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def driven(module: str, *args: str, timeout: float | None = None) -> Any:
    """What ``python -m module args`` printed last, as JSON: a phase run in a process of its
    own, so its GIL, imports and heap are its own."""
    result = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@dataclass
class Section:
    title: str
    intro: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        lines = [
            f"## {self.title}",
            "",
            self.intro,
            "",
            "| " + " | ".join(self.header) + " |",
            "| " + " | ".join("---" for _ in self.header) + " |",
        ]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        if self.notes:
            lines += [""] + [f"- {note}" for note in self.notes]
        return "\n".join(lines) + "\n"


def rate(
    operation: Callable[[int], object], *, threads: int = 1, seconds: float = 1.5, repeats: int = 3
) -> float:
    """Median operations per second over ``repeats`` runs of ``seconds`` each."""
    results = []
    for _ in range(repeats):
        deadline = time.perf_counter() + seconds

        def worker(worker_id: int, deadline: float = deadline) -> int:
            done = 0
            while time.perf_counter() < deadline:
                operation(worker_id * 1_000_000 + done)
                done += 1
            return done

        start = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            total = sum(pool.map(worker, range(threads)))
        results.append(total / (time.perf_counter() - start))
    return statistics.median(results)


def end_to_end(
    produce_one: Callable[[int], int],
    fetch_from: Callable[[int], Any],
    start: int,
    records: int,
    *,
    pause_s: float = 0.05,
) -> list[float]:
    """Milliseconds from each of ``records`` produce calls' start (``produce_one(i)`` answers the
    record's offset) to a consumer long-polling from ``start`` on its own thread
    (``fetch_from(offset)`` answers the JSON fetch response) holding the record."""
    sent: dict[int, float] = {}
    received: dict[int, float] = {}
    done = threading.Event()

    def consume() -> None:
        offset = start
        while not done.is_set():
            answer = fetch_from(offset)
            now = time.perf_counter()
            for record in answer["records"]:
                received[record["offset"]] = now
            offset = answer["next_offset"]

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    time.sleep(0.5)  # the consumer is waiting at the end
    for i in range(records):
        began = time.perf_counter()
        sent[produce_one(i)] = began
        time.sleep(pause_s)
    deadline = time.perf_counter() + 30
    while len(received) < len(sent) and time.perf_counter() < deadline:
        time.sleep(0.05)
    done.set()
    consumer.join(timeout=5)
    return [(received[offset] - began) * 1000 for offset, began in sent.items()]
