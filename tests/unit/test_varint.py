"""Varints: Kafka's ByteUtilsTest vectors, and strictness beyond them."""

from __future__ import annotations

import pytest

from tidelog.records import CorruptRecordError
from tidelog.records.varint import decode_varint, decode_varlong, encode_varint, size_of_varint

INT_MAX, INT_MIN = 2**31 - 1, -(2**31)
LONG_MAX, LONG_MIN = 2**63 - 1, -(2**63)

# ByteUtilsTest.testVarintSerde
VARINTS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (-65, "8101"),
    (8191, "fe7f"),
    (-8192, "ff7f"),
    (8192, "808001"),
    (-8193, "818001"),
    (1048575, "feff7f"),
    (-1048576, "ffff7f"),
    (1048576, "80808001"),
    (-1048577, "81808001"),
    (134217727, "feffff7f"),
    (-134217728, "ffffff7f"),
    (134217728, "8080808001"),
    (-134217729, "8180808001"),
    (INT_MAX, "feffffff0f"),
    (INT_MIN, "ffffffff0f"),
]
# ByteUtilsTest.testVarlongSerde (the extremes)
VARLONGS = [
    (0, "00"),
    (-1, "01"),
    (INT_MAX, "feffffff0f"),
    (INT_MIN, "ffffffff0f"),
    (LONG_MAX, "feffffffffffffffff01"),
    (LONG_MIN, "ffffffffffffffffff01"),
]


@pytest.mark.parametrize(("value", "encoded"), VARINTS)
def test_varint_vectors(value, encoded):
    raw = bytes.fromhex(encoded)
    assert encode_varint(value) == raw
    assert size_of_varint(value) == len(raw)
    assert decode_varint(raw, 0) == (value, len(raw))


@pytest.mark.parametrize(("value", "encoded"), VARLONGS)
def test_varlong_vectors(value, encoded):
    raw = bytes.fromhex(encoded)
    assert encode_varint(value) == raw
    assert decode_varlong(raw, 0) == (value, len(raw))


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("ffffffffff01", "longer than 5"),  # ByteUtilsTest.testInvalidVarint
        ("feffffff1f", "overflows"),  # 2**31: five bytes, but past int32
        ("8000", "not minimally"),  # 0 in two bytes
        ("808000", "not minimally"),
        ("80", "past the end"),
        ("", "past the end"),
    ],
)
def test_bad_varints_are_refused(raw, why):
    with pytest.raises(CorruptRecordError, match=why):
        decode_varint(bytes.fromhex(raw), 0)


def test_varlongs_take_ten_bytes_at_most():
    with pytest.raises(CorruptRecordError, match="longer than 10"):
        decode_varlong(bytes.fromhex("ff" * 10 + "01"), 0)
    with pytest.raises(ValueError, match="varlong"):
        encode_varint(LONG_MAX + 1)
