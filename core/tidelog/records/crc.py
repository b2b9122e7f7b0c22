"""CRC-32C, from the crc32c package (hardware-accelerated where the CPU allows).

There is deliberately no pure-Python fallback: it would be thousands of times slower, and a
silent slowdown of every produce and fetch is worse than a clear failure at import.
"""

from __future__ import annotations

try:
    from crc32c import crc32c as _crc32c
except ImportError as exc:  # pragma: no cover - the package is a hard dependency
    raise ImportError(
        "tidelog needs the crc32c package for CRC-32C (pip install crc32c); "
        "it refuses to fall back to a pure-Python CRC"
    ) from exc


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """The CRC of ``data``; or, given the CRC of what came before it as ``value``, of both."""
    return int(_crc32c(data, value))
