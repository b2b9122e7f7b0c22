"""One process per local directory.

A staging directory is recovered by the process that starts on it: whatever it finds is taken
for the leftovers of a previous life, uploaded or recorded as orphans. The read cache is emptied
by the process that starts on it. Two live processes on one directory would each take the
other's work in flight for leftovers, so a process claims its directories first: an advisory
lock the kernel releases when the process dies, however it dies. In Lambda every sandbox has a
``/tmp`` of its own and the claim always succeeds; on one host, two agents (or an agent and
``tidelog dev``) need directories of their own, and the second is told so.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

_claimed: dict[Path, int] = {}
_lock = threading.Lock()


class DirectoryInUseError(OSError):
    """Another live process holds the directory."""


def claim(directory: Path, setting: str) -> None:
    """Hold ``directory`` for this process until it exits (claiming it again is a no-op).
    ``setting`` names the environment variable that gives a process another one."""
    directory = directory.absolute()
    with _lock:
        if directory in _claimed:
            return
        directory.parent.mkdir(parents=True, exist_ok=True)
        # Beside the directory, not in it: the cache empties its directory when it starts.
        lock = directory.parent / f".{directory.name}.lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DirectoryInUseError(
                f"{directory} is in use by another tidelog process; give this one its own "
                f"with {setting}"
            ) from None
        _claimed[directory] = fd
