"""glibc's allocator, set up for a long-running process with many threads.

glibc gives threads that allocate at the same moment arenas of their own, up to eight per core,
and gives little of a fragmented arena back to the system. `tidelog dev` and `tidelog agent`
serve every request on a thread of a pool; under steady load their RSS grew in steps whenever
housekeeping rolled segments beside the request threads, and never came back down. Two arenas
keep it flat (docs/benchmarks.md, the soak of issue 12): Python threads hold the GIL while they
allocate, so they seldom contend for an arena anyway.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_ARENA_MAX = -8  # glibc's malloc.h
ARENAS = 2


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's arenas (before the threads start); False where the C library is not glibc
    (musl, macOS), which has nothing to cap."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_ARENA_MAX, arenas))
