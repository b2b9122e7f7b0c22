"""A progress bar on stderr for long commands, drawn by rich only when stderr is a terminal:
piped or redirected output stays plain and stable."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import IO


@contextlib.contextmanager
def progress(
    err: IO[str], label: str, total: int, *, in_bytes: bool = False
) -> Iterator[Callable[[int], None]]:
    """Yields ``advance(n)``: ``n`` more done (bytes, with ``in_bytes``, else items)."""
    if not err.isatty():
        yield lambda n: None
        return
    from rich.console import Console  # noqa: PLC0415 - only on a terminal
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (
        (DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
        if in_bytes
        else (MofNCompleteColumn(), TimeRemainingColumn())
    )
    with Progress(label, BarColumn(), *columns, console=Console(file=err)) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
