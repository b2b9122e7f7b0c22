"""The flush object format, keys, and staging recovery (truncate at the first bad frame)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.log import flushobject, keys
from tidelog.log.write import staging
from tidelog.records import CorruptRecordError

TID = "0f0e0d0c-0b0a-4908-8706-050403020100"


def test_flush_object_round_trip():
    body, extents = flushobject.encode({(TID, 1): [b"bb", b"b"], (TID, 0): [b"aaaa"]})
    assert body.startswith(b"TIDELOG1")
    assert [(e.partition, e.start, e.end) for e in extents] == [(0, 8, 12), (1, 12, 15)]
    assert flushobject.decode_footer(body) == extents
    assert body[8:12] == b"aaaa"
    damaged = bytearray(body)
    damaged[-20] ^= 1
    with pytest.raises(CorruptRecordError):
        flushobject.decode_footer(bytes(damaged))


@given(st.integers(1, 40), st.integers(0, 200))
def test_a_footer_reads_from_the_objects_tail_alone(partitions, spare):
    body, extents = flushobject.encode({(TID, p): [b"x" * 100] for p in range(partitions)})
    wanted = flushobject.tail_size(body[-flushobject.TRAILER_SIZE :])
    assert wanted == len(body) - 8 - 100 * partitions  # all but the header and the batches
    assert flushobject.decode_tail(body[-(wanted + spare) :]) == extents
    with pytest.raises(CorruptRecordError):
        flushobject.decode_tail(body[-(wanted - 1) :])  # the footer cut short
    with pytest.raises(CorruptRecordError):
        flushobject.tail_size(b"not a flush object at all")


@given(st.uuids().map(str), st.integers(0, 10_000), st.integers(0, 10**20 - 1))
def test_keys_round_trip(topic_id, partition, offset):
    assert keys.parse_log_pk(keys.log_pk(topic_id, partition)) == (topic_id, partition)
    assert keys.parse_index_sk(keys.index_sk(offset)) == offset


def test_index_keys_sort_as_offsets():
    offsets = [0, 9, 10, 99, 100, 12345678901234567890]
    assert sorted(keys.index_sk(o) for o in offsets) == [keys.index_sk(o) for o in offsets]


def test_flush_object_keys():
    assert keys.flush_object_key(1_700_000_000_000, "abc") == "data/flush/2023111422/abc"


def test_staging_recovery_truncates_at_the_first_bad_frame(tmp_path):
    area = staging.StagingArea(tmp_path)
    first = area.stage("data/flush/1/a", b"object a")
    second = area.stage("data/flush/1/b", b"object b")
    data = first.read_bytes()
    first.write_bytes(data + data[:10])  # a torn write after a good frame
    cut = second.read_bytes()[:-1]
    second.write_bytes(cut)  # its only frame cut short
    report = staging.recover(tmp_path)
    assert report.files == 2
    assert report.orphan_keys == ["data/flush/1/a"]
    assert report.truncated_bytes == 10 + len(cut)
    assert not list(tmp_path.glob("*.stage"))


def test_recovery_of_an_empty_or_missing_directory(tmp_path):
    assert staging.recover(tmp_path / "none").files == 0
    assert staging.recover(tmp_path).entries == 0


def test_frames_with_a_bad_crc_stop_the_walk():
    frame = staging.FRAME.pack(staging.MAGIC, 5, 0) + b"\x00\x01k" + b"xx"
    assert list(staging.read_frames(frame)) == []
