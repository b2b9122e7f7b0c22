"""Settings read from the environment once, at cold start, and checked there."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from tidelog.errors import InternalError


class ConfigurationError(InternalError):
    """The function was deployed without a setting it needs."""


@dataclass(frozen=True, slots=True)
class Settings:
    table: str
    """DynamoDB table holding tidelog's metadata (``TIDELOG_TABLE``)."""
    bucket: str
    """S3 bucket holding the log's objects (``TIDELOG_BUCKET``)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Settings:
        missing = [name for name in ("TIDELOG_TABLE", "TIDELOG_BUCKET") if not environ.get(name)]
        if missing:
            raise ConfigurationError(f"missing environment variable(s): {', '.join(missing)}")
        return cls(table=environ["TIDELOG_TABLE"], bucket=environ["TIDELOG_BUCKET"])
