"""A real Apache Kafka broker for each module of the conformance suite (tests/support/kafka_broker),
skipped with the reason where Java or its jars are missing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support import kafka_broker


@pytest.fixture(scope="module")
def broker() -> Iterator[kafka_broker.KafkaBroker]:
    why = kafka_broker.missing()
    if why is not None:
        pytest.skip(why)
    started = kafka_broker.KafkaBroker()
    yield started
    started.stop()
