"""No silent downgrade: every advertised version range overlaps what each client of ours sends,
and librdkafka 2.0.2 (Debian's, under kcat) turns on every feature it can use with us. Its
feature table asks for *exact* versions (fixed only in librdkafka 2.11.1, issue 4956 and PR
5130): a broker whose floor is above one of them loses that feature without an error, as
Kafka 4 did with compression until it advertised Produce v0 again (KAFKA-18659)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import aiokafka.protocol
import pytest
from aiokafka.protocol.api import Request as AioRequest
from tests.kafka.test_codec import KAFKA_PYTHON

from tidelog.kafka.apis import API_VERSIONS, ApiKey

# librdkafka v2.0.2, src/rdkafka_feature.c: each feature and the (API, min, max) ranges it
# depends on, all of which must overlap the broker's.
LIBRDKAFKA_2_0_2_FEATURES = {
    "MsgVer2": [(ApiKey.PRODUCE, 3, 3), (ApiKey.FETCH, 4, 4)],
    "ApiVersion": [(ApiKey.API_VERSIONS, 0, 0)],
    "BrokerGroupCoordinator": [(ApiKey.FIND_COORDINATOR, 0, 0)],
    "BrokerBalancedConsumer": [
        (ApiKey.FIND_COORDINATOR, 0, 0),
        (ApiKey.OFFSET_COMMIT, 1, 2),
        (ApiKey.OFFSET_FETCH, 1, 1),
        (ApiKey.JOIN_GROUP, 0, 0),
        (ApiKey.SYNC_GROUP, 0, 0),
        (ApiKey.HEARTBEAT, 0, 0),
        (ApiKey.LEAVE_GROUP, 0, 0),
    ],
    "LZ4": [(ApiKey.FIND_COORDINATOR, 0, 0)],
    "OffsetTime": [(ApiKey.LIST_OFFSETS, 1, 1)],
    "IdempotentProducer": [(ApiKey.INIT_PRODUCER_ID, 0, 0)],
    "ZSTD": [(ApiKey.PRODUCE, 7, 7), (ApiKey.FETCH, 10, 10)],
    "SaslGssapi": [(ApiKey.JOIN_GROUP, 0, 0)],
    "MsgVer1": [(ApiKey.PRODUCE, 2, 2), (ApiKey.FETCH, 2, 2)],
    "ThrottleTime": [(ApiKey.PRODUCE, 1, 2), (ApiKey.FETCH, 1, 2)],
    "SaslHandshake": [(ApiKey.SASL_HANDSHAKE, 0, 0)],
    "SaslAuthReq": [(ApiKey.SASL_HANDSHAKE, 1, 1), (ApiKey.SASL_AUTHENTICATE, 0, 0)],
}
# Features librdkafka 2.0.2 does not get from tidelog, on purpose: the message formats before
# v2 (MsgVer1, ThrottleTime: Produce and Fetch v1-2) are gone from Kafka 4 as from tidelog,
# and MsgVer2 supersedes them. SaslHandshake needs v0 advertised (as Kafka 4 still does):
# without it, librdkafka 2.0.2 refuses to try SASL at all.
NOT_FOR_US = {"MsgVer1", "ThrottleTime"}

# librdkafka v2.0.2's other version checks (rd_kafka_broker_ApiVersion_supported calls): the
# range of each request it sends, and the compression check of rdkafka_msgset_writer.c, which
# wants Produce v0 for gzip, snappy and lz4.
LIBRDKAFKA_2_0_2_REQUESTS = [
    (ApiKey.PRODUCE, 0, 0),  # "does the broker support compression?"
    (ApiKey.ALTER_CONFIGS, 0, 0),
    (ApiKey.CREATE_ACLS, 0, 1),
    (ApiKey.CREATE_PARTITIONS, 0, 0),
    (ApiKey.CREATE_TOPICS, 0, 4),
    (ApiKey.DELETE_ACLS, 0, 1),
    (ApiKey.DELETE_GROUPS, 0, 1),
    (ApiKey.DELETE_RECORDS, 0, 1),
    (ApiKey.DELETE_TOPICS, 0, 1),
    (ApiKey.DESCRIBE_ACLS, 0, 1),
    (ApiKey.DESCRIBE_CONFIGS, 0, 1),
    (ApiKey.FIND_COORDINATOR, 0, 2),
    (ApiKey.HEARTBEAT, 0, 3),
    (ApiKey.INIT_PRODUCER_ID, 0, 4),
    (ApiKey.JOIN_GROUP, 0, 5),
    (ApiKey.LEAVE_GROUP, 0, 1),
    (ApiKey.LIST_OFFSETS, 0, 2),
    (ApiKey.METADATA, 0, 4),
    (ApiKey.OFFSET_COMMIT, 0, 7),
    (ApiKey.OFFSET_DELETE, 0, 0),
    (ApiKey.OFFSET_FETCH, 0, 7),
    (ApiKey.SYNC_GROUP, 0, 3),
]


def _overlaps(key: int, low: int, high: int) -> bool:
    if key not in API_VERSIONS:
        return False
    ours_low, ours_high = API_VERSIONS[ApiKey(key)]
    return ours_low <= high and low <= ours_high


def test_librdkafka_2_0_2_turns_on_every_feature_it_can_use():
    enabled = {
        feature
        for feature, needs in LIBRDKAFKA_2_0_2_FEATURES.items()
        if all(_overlaps(*needed) for needed in needs)
    }
    assert enabled == LIBRDKAFKA_2_0_2_FEATURES.keys() - NOT_FOR_US


@pytest.mark.parametrize(("key", "low", "high"), LIBRDKAFKA_2_0_2_REQUESTS)
def test_librdkafka_2_0_2_finds_a_version_of_each_request_it_sends(key, low, high):
    assert _overlaps(key, low, high)


def _aiokafka_requests() -> dict[int, tuple[int, int]]:
    ranges = {}
    for module in pkgutil.iter_modules(aiokafka.protocol.__path__):
        loaded = importlib.import_module(f"aiokafka.protocol.{module.name}")
        for _, request in inspect.getmembers(loaded, inspect.isclass):
            classes = getattr(request, "_CLASSES", None)
            if issubclass(request, AioRequest) and classes:
                versions = [c.API_VERSION for c in classes]
                ranges[request.API_KEY] = (min(versions), max(versions))
    return ranges


def test_aiokafka_finds_a_version_of_every_request_both_sides_know():
    ranges = _aiokafka_requests()
    assert len(ranges) > 20  # the probe found its request classes
    shared = {key: r for key, r in ranges.items() if key in API_VERSIONS}
    assert {
        ApiKey(key).name for key, r in shared.items() if not _overlaps(ApiKey(key), *r)
    } == set()


def test_kafka_python_finds_a_version_of_every_request_both_sides_know():
    missing = set()
    for key in API_VERSIONS:
        if (int(key), True) not in KAFKA_PYTHON:
            continue  # an API kafka-python never sends (KIP-848's): nothing to overlap
        versions = KAFKA_PYTHON[(int(key), True)].valid_versions
        if not _overlaps(key, min(versions), max(versions)):
            missing.add(key.name)
    assert missing == set()
