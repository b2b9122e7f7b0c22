"""An anomaly a check found in a history: its kind and what shows it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

EXAMPLES = 8  # per anomaly kind, in the report


@dataclass(frozen=True)
class Anomaly:
    kind: str
    detail: Mapping[str, Any]
