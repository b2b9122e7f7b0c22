"""One lean local Spark session for the whole run (DESIGN.md §2), reading and writing the
session's `tidelog dev` stack."""

from __future__ import annotations

import os
import sys
import uuid

import pytest

pyspark = pytest.importorskip("pyspark", reason="the spark extra is not installed")


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    from tidelog.spark import TidelogDataSource

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = (
        SparkSession.builder.master("local[2,3]")  # up to 3 attempts a task: retries happen
        .appName("tidelog-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(TidelogDataSource)
    yield session
    session.stop()


@pytest.fixture
def connection(dev):
    """The options that point the format at the session's stack."""
    return {"cluster": "tidelog", "endpoint": dev.aws_url, "region": "us-east-1"}


@pytest.fixture
def new_topic(dev):
    from tests.functional.test_produce_api import call

    def make(partitions=3, configs=None):
        name = f"s-{uuid.uuid4().hex[:8]}"
        body = {"name": name, "partitions": partitions, "configs": configs or {}}
        status, answer = call(dev, "POST", "/v1/topics", body)
        assert status == 201, answer
        return name

    return make
