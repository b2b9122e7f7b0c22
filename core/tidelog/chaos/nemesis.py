"""What the nemesis does and when: a schedule drawn from one seed (pure), so a run's faults can
be replayed from the seed it prints.

Two lanes run side by side, each one fault at a time: processes (an agent killed, paused or
skewed; a group member killed in the middle of a rebalance) and storage (S3 failing, DynamoDB
failing, writes that land but whose answers are lost, slow calls). Every kind appears at least
once, first in an order drawn from the seed, then drawn at random until the run's end.
Housekeeping (roll, retention, compaction, collection) races the workload all run long; it is
not scheduled here.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

PROCESS_FAULTS = ("kill-agent", "pause-agent", "clock-skew", "rebalance-kill")
STORAGE_FAULTS = ("s3-faults", "dynamodb-faults", "indefinite", "slow-storage")
FAULTS = PROCESS_FAULTS + STORAGE_FAULTS

# What each storage fault writes in the stores' fault file (tidelog.storage.faults.FaultFile).
STORAGE_RATES: Mapping[str, Mapping[str, float | str]] = {
    # PUTs and GETs refused, PUTs stored whose answers are lost or resent.
    "s3-faults": {"only": "s3.", "before": 0.08, "after": 0.04, "resent": 0.04},
    # Reads, writes and transactions refused.
    "dynamodb-faults": {"only": "dynamodb.", "before": 0.08},
    # Every kind of write lands, and its answer is lost: the caller cannot know.
    "indefinite": {"after": 0.1},
    # AWS's latencies, and a call in 50 stalls for a second and a half.
    "slow-storage": {"latency": "aws", "spike": 0.02, "spike_s": 1.5},
}

PAUSE_S = 8.0  # longer than the clients' request timeout (tidelog.chaos.workers)
SKEW_MS = 45_000  # past a session timeout, either way


@dataclass(frozen=True)
class Fault:
    start_s: float
    duration_s: float
    kind: str
    target: int = 0  # which agent, or which group member; the sign of a skew

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s


def schedule(
    seed: int, seconds: float, *, lead_s: float = 5.0, quiet_s: float = 5.0
) -> list[Fault]:
    """The faults of a run of ``seconds``: none in the first ``lead_s`` (the workload starts)
    or the last ``quiet_s`` (everything heals before the final read)."""
    rng = random.Random(seed)  # noqa: S311 - replayable, not secret
    faults: list[Fault] = []
    for lane in (PROCESS_FAULTS, STORAGE_FAULTS):
        kinds = list(lane)
        rng.shuffle(kinds)
        at = lead_s + rng.uniform(0, 2)
        while True:
            kind = kinds.pop(0) if kinds else rng.choice(lane)
            duration = PAUSE_S if kind == "pause-agent" else rng.uniform(3, 7)
            if at + duration > seconds - quiet_s:
                break
            faults.append(Fault(round(at, 2), round(duration, 2), kind, rng.randrange(2**16)))
            at += duration + rng.uniform(1, 3)
    return sorted(faults, key=lambda f: f.start_s)
