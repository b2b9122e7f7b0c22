"""Kafka's own Java clients and frameworks (4.3.1), through the small programs `make referees`
builds from tests/referees/clients/, against any bootstrap: JavaClients (an admin client, an
idempotent and a transactional producer, consumers of both group protocols) and WordCount (a
Kafka Streams application with exactly-once v2 and a state store). Each prints one line per
step; the same lines from a real Kafka broker and from tidelog's agent are the proof."""

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


CLASSPATH = f"{BUILT / 'target' / 'classes'}:{BUILT / 'libs'}/*"


def run(bootstrap: str, name: str, program: str = "JavaClients") -> list[str]:
    """The program's lines against ``bootstrap``; ``name`` prefixes what it creates."""
    done = subprocess.run(
        ["java", "-cp", CLASSPATH, f"dev.tidelog.referees.{program}", bootstrap, name],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, f"{bootstrap}:\n{done.stderr[-6000:]}"
    return done.stdout.splitlines()
