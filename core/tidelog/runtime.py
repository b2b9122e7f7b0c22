"""What a function's process builds once and reuses across invocations: settings and stores.

Handlers ask for these; tests and ``tidelog dev`` point them elsewhere through the environment
and ``reset()``.
"""

from __future__ import annotations

import functools
import os
import time

from tidelog import aws
from tidelog.settings import Settings
from tidelog.storage import MetadataStore, ObjectStore
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.s3 import S3ObjectStore


@functools.cache
def settings() -> Settings:
    return Settings.from_env()


@functools.cache
def metadata_store() -> MetadataStore:
    return DynamoMetadataStore(aws.client("dynamodb"), settings().table)


@functools.cache
def object_store() -> ObjectStore:
    return S3ObjectStore(aws.client("s3"), settings().bucket)


def clock_ms() -> int:
    return time.time_ns() // 1_000_000


random_bytes = os.urandom


def reset() -> None:
    """Forget cached settings and stores (the environment changed)."""
    for cached in (settings, metadata_store, object_store):
        cached.cache_clear()
    aws.reset()
