"""Kafka's own Java clients (kafka-clients 4.3.1), through the small program `make referees`
builds from tests/referees/clients/: an admin client, an idempotent and a transactional
producer, and consumers of both group protocols, against any bootstrap. It prints one line
per step; the same lines from a real Kafka broker and from tidelog's agent are the proof."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILT = ROOT / ".referees" / "clients"


def missing() -> str | None:
    if shutil.which("java") is None or not (BUILT / ".installed").exists():
        return "Kafka's Java clients are not built: `make referees` builds them (Java, Maven)"
    return None


def run(bootstrap: str, topic: str) -> list[str]:
    classpath = f"{BUILT / 'target' / 'classes'}:{BUILT / 'libs'}/*"
    done = subprocess.run(
        ["java", "-cp", classpath, "dev.tidelog.referees.JavaClients", bootstrap, topic],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, f"{bootstrap}:\n{done.stderr[-6000:]}"
    return done.stdout.splitlines()
