"""Timing helpers and the markdown report every benchmark module contributes a section to."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field


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
