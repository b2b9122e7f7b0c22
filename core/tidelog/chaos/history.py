"""A run's history, as Jepsen keeps one: every operation a client began and how it ended.

One JSON object a line, in the order each process saw things:

    {"process": "rd-0", "type": "invoke", "f": "send", "value": {"value": "rd-0-17"}, "time": ns}
    {"process": "rd-0", "type": "ok", "f": "send",
     "value": {"value": "rd-0-17", "partition": 3, "offset": 912}, "time": ns}

``type`` is ``invoke`` (begun), ``ok`` (done), ``fail`` (certainly did not happen) or ``info``
(unknown: it may have happened). An ``invoke`` with no completion, because its process was
killed, is ``info``. ``time`` is the wall clock in ns of the machine running the run: it orders
events across processes only roughly, and the checker never relies on it for anything but
plots. Each process writes a file of its own, flushed line by line, so a SIGKILL loses no line
it had finished; a run's files are merged into one for anyone to re-check.

Functions (``f``) and their values:

- ``send``: a producer's record (``value``; ``key``), ok with ``partition`` and ``offset``
  (-1 when stored at an offset the answer did not give),
  fail/info with ``error``.
- ``poll``: a consumer's poll, ok with ``records``: ``[[partition, offset, value], ...]``.
- ``assign``: a consumer's partitions from now on (``partitions``), after a rebalance or at
  start; its positions may move back, so poll order starts afresh.
- ``commit``: a group member's offsets (``offsets``: ``{partition: offset}``) after processing.
- ``read``: the final read of one partition by one reader (``partition``, ``records``:
  ``[[offset, value], ...]``, ``reader``).
- ``committed``: the group's final committed offsets (``offsets``).
- ``fault``: the nemesis (``invoke`` when a fault starts, ``ok`` when healed; ``fault``,
  ``target``).
"""

from __future__ import annotations

import heapq
import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

OpType = Literal["invoke", "ok", "fail", "info"]


@dataclass(frozen=True)
class Op:
    process: str
    type: OpType
    f: str
    value: Mapping[str, Any] = field(default_factory=dict)
    time: int = 0

    def to_json(self) -> str:
        return json.dumps(
            {
                "process": self.process,
                "type": self.type,
                "f": self.f,
                "value": self.value,
                "time": self.time,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, line: str) -> Op:
        raw = json.loads(line)
        return cls(raw["process"], raw["type"], raw["f"], raw.get("value") or {}, raw["time"])


class HistoryWriter:
    """One process's history file; safe to call from any thread (client callbacks run on
    their own)."""

    def __init__(self, path: Path, process: str) -> None:
        self.process = process
        self._file: IO[str] = path.open("a", encoding="utf-8", buffering=1)
        self._lock = threading.Lock()

    def record(self, type_: OpType, f: str, **value: Any) -> Op:
        op = Op(self.process, type_, f, value, time.time_ns())
        with self._lock:
            self._file.write(op.to_json() + "\n")
            self._file.flush()
        return op

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_history(paths: Iterable[Path]) -> list[Op]:
    """The ops of every file merged by time, each file's kept in its own order whatever its
    clock did. A process killed mid-line leaves a torn last line: it is dropped (its op stays
    unfinished)."""
    files: list[list[Op]] = []
    for path in paths:
        ops = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                ops.append(Op.from_json(line))
            except (ValueError, KeyError):
                continue
        files.append(ops)
    return list(heapq.merge(*files, key=lambda op: op.time))


def write_history(path: Path, ops: Iterable[Op]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for op in ops:
            out.write(op.to_json() + "\n")


def by_process(ops: Iterable[Op]) -> Iterator[tuple[str, list[Op]]]:
    processes: dict[str, list[Op]] = {}
    for op in ops:
        processes.setdefault(op.process, []).append(op)
    yield from processes.items()
