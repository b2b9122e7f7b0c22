"""Walks a buffer of concatenated batches, whatever their magic."""

from __future__ import annotations

import struct
from collections.abc import Iterator

from tidelog.records.batch import LOG_OVERHEAD, MAGIC_OFFSET, RecordBatch
from tidelog.records.errors import InvalidRecordError
from tidelog.records.legacy import LegacyBatch

_LENGTH = struct.Struct(">i")


class BatchReader:
    """Iterates the batches of a buffer, as stored or fetched: RecordBatch for magic 2,
    LegacyBatch for the message sets of magic 0 and 1.

    A read may end in the middle of a batch (seed 001: the size prefix tells); iteration stops
    cleanly before it, and ``trailing_bytes`` then says how many bytes were left over.
    """

    def __init__(self, buf: bytes | memoryview) -> None:
        self._buf = buf
        self.position = 0
        self.trailing_bytes = 0

    def __iter__(self) -> Iterator[RecordBatch | LegacyBatch]:
        buf, end = self._buf, len(self._buf)
        while self.position < end:
            remaining = end - self.position
            if remaining <= MAGIC_OFFSET:
                self.trailing_bytes = remaining
                return
            (length,) = _LENGTH.unpack_from(buf, self.position + 8)
            if length < 0 or LOG_OVERHEAD + length > remaining:
                self.trailing_bytes = remaining
                return
            magic = buf[self.position + MAGIC_OFFSET]
            batch: RecordBatch | LegacyBatch
            if magic == 2:
                batch = RecordBatch(buf, self.position)
            elif magic in (0, 1):
                batch = LegacyBatch(buf, self.position)
            else:
                raise InvalidRecordError(f"unknown magic {magic} at byte {self.position}")
            self.position += batch.size_in_bytes
            yield batch


def iter_batches(buf: bytes | memoryview) -> BatchReader:
    return BatchReader(buf)
