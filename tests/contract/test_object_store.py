"""The object store contract, held by MemoryObjectStore and S3ObjectStore alike."""

from __future__ import annotations

import base64

import pytest
from tests.support.resources import new_bucket

from tidelog import aws
from tidelog.records.crc import crc32c
from tidelog.storage import ObjectExistsError, ObjectNotFoundError, put_new
from tidelog.storage.s3 import S3ObjectStore

BODY = bytes(range(256)) * 4  # every byte value, 1 KiB


def test_put_then_get_returns_the_bytes_exactly(objects):
    objects.put("a/1", BODY)
    assert objects.get("a/1") == BODY


def test_put_is_create_only_by_default(objects):
    objects.put("k", b"first")
    with pytest.raises(ObjectExistsError):
        objects.put("k", b"second")
    assert objects.get("k") == b"first"


def test_put_new_takes_an_object_of_its_own_size_as_its_own_resend(objects):
    put_new(objects, "fresh", BODY)
    put_new(objects, "fresh", BODY)  # the SDK resent it: 412, yet the object is ours
    with pytest.raises(ObjectExistsError):
        put_new(objects, "fresh", BODY[:-1])
    assert objects.get("fresh") == BODY


def test_put_may_overwrite_when_asked(objects):
    objects.put("k", b"first")
    objects.put("k", b"second", if_absent=False)
    assert objects.get("k") == b"second"


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (0, None, BODY),
        (10, 20, BODY[10:20]),
        (1000, None, BODY[1000:]),
        (1000, 5000, BODY[1000:]),  # past the end: cut short, as HTTP ranges are
        (5, 5, b""),
        (len(BODY), None, b""),
        (len(BODY) + 10, None, b""),
    ],
)
def test_ranged_get(objects, start, end, expected):
    objects.put("r", BODY)
    assert objects.get("r", start, end) == expected


def test_invalid_range_is_refused(objects):
    objects.put("r", BODY)
    with pytest.raises(ValueError, match="invalid byte range"):
        objects.get("r", 10, 5)


def test_tail_reads_the_last_bytes_or_the_whole_of_a_shorter_object(objects):
    objects.put("t", BODY)
    objects.put("empty", b"")
    assert objects.tail("t", 10) == BODY[-10:]
    assert objects.tail("t", len(BODY)) == BODY
    assert objects.tail("t", 5000) == BODY
    assert objects.tail("empty", 1) == b""
    with pytest.raises(ValueError, match="invalid tail size"):
        objects.tail("t", 0)


def test_missing_object(objects):
    with pytest.raises(ObjectNotFoundError):
        objects.get("nope")
    with pytest.raises(ObjectNotFoundError):
        objects.tail("nope", 8)
    assert objects.head("nope") is None
    objects.delete("nope")  # deleting nothing is fine


def test_head_reports_size_and_age(objects):
    objects.put("h", BODY)
    info = objects.head("h")
    assert info.key == "h"
    assert info.size == len(BODY)
    assert info.last_modified_ms > 1_600_000_000_000


def test_delete_removes(objects):
    objects.put("d", b"x")
    objects.delete("d")
    assert objects.head("d") is None
    objects.put("d", b"y")  # the key is free again
    assert objects.get("d") == b"y"


def test_list_by_prefix_in_key_order(objects):
    for key in ["t/2", "t/10", "t/1", "u/1"]:
        objects.put(key, key.encode())
    listed = list(objects.list("t/"))
    assert [i.key for i in listed] == ["t/1", "t/10", "t/2"]
    assert [i.size for i in listed] == [3, 4, 3]
    assert [i.key for i in objects.list()] == ["t/1", "t/10", "t/2", "u/1"]


def test_list_pages_past_a_thousand_keys(objects):
    keys = [f"p/{i:05d}" for i in range(1003)]
    for key in keys:
        objects.put(key, b"")
    assert [i.key for i in objects.list("p/")] == keys


def test_s3_puts_carry_the_bodys_crc32c_signed_in_place_of_a_payload_hash(dev, monkeypatch):
    """The functions' S3 client (tidelog.aws) sends a PUT as botocore does over HTTPS, even to
    a plain-HTTP endpoint: the CRC-32C in a signed header, no SHA-256 of the body."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", dev.aws_url)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    aws.reset()
    try:
        client = aws.client("s3")
        objects = S3ObjectStore(client, new_bucket(client))
        sent: list[dict] = []
        client.meta.events.register(
            "before-send.s3.PutObject", lambda request, **_: sent.append(dict(request.headers))
        )
        objects.put("k", BODY)
        assert objects.get("k") == BODY
    finally:
        aws.reset()
    (headers,) = sent
    crc = base64.b64decode(headers["x-amz-checksum-crc32c"])
    assert crc == crc32c(BODY).to_bytes(4, "big")
    assert headers["X-Amz-Content-SHA256"] == b"UNSIGNED-PAYLOAD"
    assert b"x-amz-checksum-crc32c" in headers["Authorization"], "the checksum is signed"
    assert not any(h.lower() == "x-amz-checksum-crc32" for h in headers), "no second checksum"
