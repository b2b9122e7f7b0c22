"""docs/examples/clickstream.py runs against the session's stack, exactly once."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.spark.test_stream_and_write import records

from tidelog.log.topics import Topics
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.s3 import S3ObjectStore

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "clickstream.py"


def test_the_clickstream_example(spark, dev, connection, dev_client, template):
    spec = importlib.util.spec_from_file_location("clickstream", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.seed(dev.api_url)
    counts = example.run(spark, connection, "example-test")
    pages = ["/", "/docs", "/pricing"]
    assert counts == sorted([(page, 20) for page in pages] * 2)  # two minutes of clicks
    again = example.run(spark, connection, "example-test")
    assert again == counts
    (table,) = template.tables()
    stores = (
        DynamoMetadataStore(dev_client("dynamodb"), table.name),
        S3ObjectStore(dev_client("s3"), template.buckets()[0]),
    )
    assert Topics(stores[0], lambda: 0).get("page-views")
    written = records(stores, "page-views")
    assert len(written) == 6  # 3 pages x 2 minutes, once: the rerun wrote nothing new
