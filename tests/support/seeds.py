"""Seeds drawn when the suite is collected, for tests parametrized by them.

Each of pytest-xdist's workers collects the suite itself, and the workers must agree on every
test's id, seeds included. So within one run every worker draws the same seeds (from the run's
id, which xdist shares with them); a run without workers draws fresh ones. A failing test's id
names its seed, which replays it.
"""

from __future__ import annotations

import os
import random

_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID")


def draw(site: str, count: int, bound: int = 2**32) -> list[int]:
    """``count`` seeds below ``bound`` for the parametrization named ``site``."""
    rng = random.Random(f"{_RUN}/{site}") if _RUN else random.Random()
    return [rng.randrange(bound) for _ in range(count)]
