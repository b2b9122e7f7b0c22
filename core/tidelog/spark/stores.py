"""The stores an executor (or the driver) uses, built once per process: boto3 clients cannot be
pickled, so they are never part of what Spark ships to a task."""

from __future__ import annotations

import functools

from tidelog.spark.options import Connection
from tidelog.storage import MetadataStore, ObjectStore


@functools.cache
def stores(connection: Connection) -> tuple[MetadataStore, ObjectStore]:
    import boto3  # noqa: PLC0415 - on the executor, at first use
    from botocore.config import Config  # noqa: PLC0415

    from tidelog.storage.dynamodb import DynamoMetadataStore  # noqa: PLC0415
    from tidelog.storage.s3 import S3ObjectStore  # noqa: PLC0415

    session = boto3.session.Session(region_name=connection.region)
    config = Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=32)
    ddb = session.client("dynamodb", endpoint_url=connection.endpoint, config=config)
    s3 = session.client("s3", endpoint_url=connection.endpoint, config=config)
    return DynamoMetadataStore(ddb, connection.table), S3ObjectStore(s3, connection.bucket)
