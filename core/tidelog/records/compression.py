"""Kafka's compression codecs, with every decompression capped.

A batch's records may be compressed with gzip, snappy (xerial framing, as Java's client writes
it), lz4 (the frame format) or zstd. Decompression stops as soon as the output would pass
``limit`` bytes and raises RecordTooLargeError: a few kilobytes of zeros must not become
gigabytes in a Lambda's memory.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from tidelog.records.errors import (
    CorruptRecordError,
    RecordTooLargeError,
    UnsupportedCompressionError,
)

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
DEFAULT_DECOMPRESSED_LIMIT = 64 * 1024 * 1024

_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_ZSTD_STEP = 1024


# Each codec's library is imported the first time a batch needs it: most traffic uses one codec,
# and every import is paid for in a Lambda's cold start.
@functools.cache
def _cramjam() -> ModuleType:
    import cramjam  # noqa: PLC0415

    return cramjam


@functools.cache
def _lz4_frame() -> ModuleType:
    import lz4.frame  # noqa: PLC0415

    frame: ModuleType = lz4.frame
    return frame


@functools.cache
def _zstd_codec() -> tuple[Any, Any]:
    import zstandard  # noqa: PLC0415

    return zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()


def codec_id(name: str) -> int:
    if name not in CODECS:
        raise UnsupportedCompressionError(f"unknown compression {name!r}; use one of {CODECS}")
    return CODECS.index(name)


def codec_name(codec: int) -> str:
    if not 0 <= codec < len(CODECS):
        raise UnsupportedCompressionError(f"unknown compression codec {codec}")
    return CODECS[codec]


def compress(codec: str, data: bytes) -> bytes:
    return _COMPRESSORS[codec](data)


def decompress(codec: str, data: bytes, limit: int = DEFAULT_DECOMPRESSED_LIMIT) -> bytes:
    try:
        out = _DECOMPRESSORS[codec](data, limit)
    except (RecordTooLargeError, UnsupportedCompressionError):
        raise
    except Exception as exc:  # each library raises its own kinds of error
        raise CorruptRecordError(f"{codec} data does not decompress: {exc}") from exc
    if len(out) > limit:
        raise _too_large(codec, limit)
    return out


def _too_large(codec: str, limit: int) -> RecordTooLargeError:
    return RecordTooLargeError(f"{codec} data decompresses to more than {limit} bytes")


def _gzip(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


def _gunzip(data: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(47)  # gzip or zlib header, detected
    out = inflater.decompress(data, limit + 1)
    if len(out) > limit:
        raise _too_large("gzip", limit)
    if not inflater.eof:
        raise CorruptRecordError("gzip data is truncated")
    return out


def _snappy(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    view = memoryview(data)
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(_cramjam().snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def _unsnappy(data: bytes, limit: int) -> bytes:
    if not data.startswith(_XERIAL_HEADER[:8]):
        return _snappy_block(data, limit)
    out = bytearray()
    pos = len(_XERIAL_HEADER)
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordError("snappy stream ends inside a block length")
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CorruptRecordError("snappy block runs past the end of the stream")
        out += _snappy_block(data[pos : pos + size], limit - len(out))
        pos += size
    return bytes(out)


def _snappy_block(block: bytes, limit: int) -> bytes:
    # A raw snappy block starts with its uncompressed length: check it before inflating.
    size, shift, pos = 0, 0, 0
    while pos < len(block) and pos < 5:
        byte = block[pos]
        size |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            break
        shift += 7
    if size > limit:
        raise _too_large("snappy", limit)
    return bytes(_cramjam().snappy.decompress_raw(block))


def _lz4(data: bytes) -> bytes:
    frame = _lz4_frame()
    return bytes(frame.compress(data, block_size=frame.BLOCKSIZE_MAX64KB, content_checksum=False))


def _unlz4(data: bytes, limit: int) -> bytes:
    inflater = _lz4_frame().LZ4FrameDecompressor()
    out = inflater.decompress(data, max_length=limit + 1)
    if len(out) > limit:
        raise _too_large("lz4", limit)
    if not inflater.eof:
        raise CorruptRecordError("lz4 frame is truncated")
    return bytes(out)


def _zstd(data: bytes) -> bytes:
    return bytes(_zstd_codec()[0].compress(data))


def _unzstd(data: bytes, limit: int) -> bytes:
    # zstandard offers no output cap, so feed the input in small steps and stop as soon as the
    # output passes the limit. A zstd block of 4 bytes can expand to 128 KiB, so 1 KiB of input
    # yields at most 32 MiB: that bounds how far past the limit memory can go.
    inflater = _zstd_codec()[1].decompressobj()
    out = bytearray()
    view = memoryview(data)
    for start in range(0, len(data), _ZSTD_STEP):
        out += inflater.decompress(view[start : start + _ZSTD_STEP])
        if len(out) > limit:
            raise _too_large("zstd", limit)
    if not inflater.eof:
        raise CorruptRecordError("zstd frame is truncated")
    return bytes(out)


_COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "none": bytes,
    "gzip": _gzip,
    "snappy": _snappy,
    "lz4": _lz4,
    "zstd": _zstd,
}
_DECOMPRESSORS: dict[str, Callable[[bytes, int], bytes]] = {
    "none": lambda data, limit: bytes(data),
    "gzip": _gunzip,
    "snappy": _unsnappy,
    "lz4": _unlz4,
    "zstd": _unzstd,
}
