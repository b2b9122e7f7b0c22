"""Whose role the current context's AWS calls are made in.

On AWS each function runs in its own process with its own role, and this stays empty. In
``tidelog dev`` the functions and the agent share one process: each invocation sets its role
here, the work it hands to pools and to the group commit carries it along (tidelog.threads),
and tidelog.aws names it on every call for the emulator to check (tidelog.local.iam).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

acting_for: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "tidelog_acting_for", default=frozenset()
)
"""The roles (ARNs) this context's AWS calls are made for; several when one call serves
requests of several (a group commit's flush)."""


@contextlib.contextmanager
def acting_as(roles: frozenset[str]) -> Iterator[None]:
    token = acting_for.set(roles)
    try:
        yield
    finally:
        acting_for.reset(token)
