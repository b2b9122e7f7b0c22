"""Staging files on local disk: a record of every object on its way to S3.

Before a flush uploads its object, the object's bytes are written to a staging file, framed as
Kafka frames its log entries: ``"TSTG" | length: uint32 | CRC-32C: uint32 | payload``, where the
payload is the object key (UTF-8, uint16-prefixed) then the object's bytes. After the commit the
file is removed.

On start, :func:`recover` walks the staging directory as Kafka recovers the newest segment: each
frame's size and CRC are checked and the file is truncated at the first bad one. tidelog
acknowledges only committed writes (acks=all), so nothing staged was acknowledged: recovery
discards the entries and reports their object keys, which may have reached S3 without being
committed, as orphans for collection.
"""

from __future__ import annotations

import os
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tidelog.records.crc import crc32c

MAGIC = b"TSTG"
FRAME = struct.Struct(">4sII")
KEY_LENGTH = struct.Struct(">H")
SUFFIX = ".stage"


@dataclass
class Recovery:
    files: int = 0
    entries: int = 0
    truncated_bytes: int = 0
    orphan_keys: list[str] = field(default_factory=list)


class StagingArea:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def stage(self, object_key: str, body: bytes) -> Path:
        key = object_key.encode()
        prefix = KEY_LENGTH.pack(len(key)) + key
        crc = crc32c(body, crc32c(prefix))  # the payload's, without copying the body into it
        path = self.directory / f"{uuid.uuid4().hex}{SUFFIX}"
        with path.open("wb") as handle:
            handle.write(FRAME.pack(MAGIC, len(prefix) + len(body), crc) + prefix)
            handle.write(body)
        return path

    @staticmethod
    def remove(path: Path) -> None:
        path.unlink(missing_ok=True)


def read_frames(data: bytes) -> Iterator[tuple[int, str, bytes]]:
    """(end position, object key, body) of each intact frame, stopping at the first bad one."""
    pos = 0
    while pos + FRAME.size <= len(data):
        magic, length, crc = FRAME.unpack_from(data, pos)
        start, end = pos + FRAME.size, pos + FRAME.size + length
        if magic != MAGIC or end > len(data) or length < KEY_LENGTH.size:
            return
        payload = data[start:end]
        if crc32c(payload) != crc:
            return
        (size,) = KEY_LENGTH.unpack_from(payload)
        if KEY_LENGTH.size + size > len(payload):
            return
        key = payload[KEY_LENGTH.size : KEY_LENGTH.size + size].decode("utf-8", "replace")
        yield end, key, payload[KEY_LENGTH.size + size :]
        pos = end


def recover(directory: Path) -> Recovery:
    report = Recovery()
    if not directory.is_dir():
        return report
    for path in sorted(directory.glob(f"*{SUFFIX}")):
        data = path.read_bytes()
        good = 0
        for end, key, _ in read_frames(data):
            report.entries += 1
            report.orphan_keys.append(key)
            good = end
        if good < len(data):
            report.truncated_bytes += len(data) - good
            with path.open("r+b") as handle:
                handle.truncate(good)
                os.fsync(handle.fileno())
        report.files += 1
        path.unlink()
    return report
