"""S3ObjectStore: the object store port on Amazon S3 (or any endpoint speaking its API)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from tidelog.records.crc import crc32c
from tidelog.storage.boto import error_code, translate
from tidelog.storage.errors import ObjectExistsError, ObjectNotFoundError
from tidelog.storage.objects import ObjectInfo, check_range, check_tail


class S3ObjectStore:
    def __init__(self, client: Any, bucket: str) -> None:
        self._s3 = client
        self.bucket = bucket

    def put(self, key: str, body: bytes, *, if_absent: bool = True) -> None:
        extra = {"IfNoneMatch": "*"} if if_absent else {}
        # S3 checks the body against it end to end; given, it spares botocore its own CRC32
        # (a software one) over every byte.
        checksum = base64.b64encode(crc32c(body).to_bytes(4, "big")).decode()
        try:
            self._s3.put_object(
                Bucket=self.bucket, Key=key, Body=body, ChecksumCRC32C=checksum, **extra
            )
        except ClientError as exc:
            if error_code(exc) == "PreconditionFailed":
                raise ObjectExistsError(f"an object already exists at {key!r}") from exc
            raise translate(exc, f"PUT s3://{self.bucket}/{key}") from exc
        except BotoCoreError as exc:
            raise translate(exc, f"PUT s3://{self.bucket}/{key}") from exc

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        check_range(start, end)
        if end is not None and end == start:
            return b""
        return self._get(key, f"bytes={start}-{'' if end is None else end - 1}")

    def tail(self, key: str, size: int) -> bytes:
        check_tail(size)
        return self._get(key, f"bytes=-{size}")

    def _get(self, key: str, byte_range: str) -> bytes:
        try:
            response = self._s3.get_object(Bucket=self.bucket, Key=key, Range=byte_range)
            return bytes(response["Body"].read())
        except ClientError as exc:
            code = error_code(exc)
            if code in ("NoSuchKey", "404"):
                raise ObjectNotFoundError(f"no object at {key!r}") from exc
            if code == "InvalidRange":
                return b""
            raise translate(exc, f"GET s3://{self.bucket}/{key}") from exc
        except BotoCoreError as exc:
            raise translate(exc, f"GET s3://{self.bucket}/{key}") from exc

    def head(self, key: str) -> ObjectInfo | None:
        try:
            response = self._s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if error_code(exc) in ("404", "NoSuchKey", "NotFound"):
                return None
            raise translate(exc, f"HEAD s3://{self.bucket}/{key}") from exc
        except BotoCoreError as exc:
            raise translate(exc, f"HEAD s3://{self.bucket}/{key}") from exc
        return ObjectInfo(key, int(response["ContentLength"]), _epoch_ms(response["LastModified"]))

    def delete(self, key: str) -> None:
        try:
            self._s3.delete_object(Bucket=self.bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            raise translate(exc, f"DELETE s3://{self.bucket}/{key}") from exc

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        pages = self._s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix
        )
        try:
            for page in pages:
                for entry in page.get("Contents", ()):
                    yield ObjectInfo(
                        entry["Key"], int(entry["Size"]), _epoch_ms(entry["LastModified"])
                    )
        except (ClientError, BotoCoreError) as exc:
            raise translate(exc, f"LIST s3://{self.bucket}/{prefix}") from exc


def _epoch_ms(moment: Any) -> int:
    return int(moment.timestamp() * 1000)
