"""The Kafka APIs the agent serves, and the versions of each: Kafka 3.0's maxima, floors at
Kafka 4's (KIP-896). Only what is implemented is advertised: a client picks the highest version
both sides know, so an API listed here must work at every version listed."""

from __future__ import annotations

import enum
from types import MappingProxyType


class ApiKey(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    DESCRIBE_CONFIGS = 32
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    DESCRIBE_CLUSTER = 60


API_VERSIONS = MappingProxyType(
    {
        ApiKey.PRODUCE: (3, 9),
        ApiKey.FETCH: (4, 12),
        ApiKey.LIST_OFFSETS: (1, 7),
        ApiKey.METADATA: (0, 11),
        ApiKey.OFFSET_COMMIT: (2, 8),
        ApiKey.OFFSET_FETCH: (1, 8),
        ApiKey.FIND_COORDINATOR: (0, 4),
        ApiKey.JOIN_GROUP: (0, 7),
        ApiKey.HEARTBEAT: (0, 4),
        ApiKey.LEAVE_GROUP: (0, 4),
        ApiKey.SYNC_GROUP: (0, 5),
        ApiKey.DESCRIBE_GROUPS: (0, 5),
        ApiKey.LIST_GROUPS: (0, 4),
        ApiKey.API_VERSIONS: (0, 3),
        ApiKey.CREATE_TOPICS: (2, 7),
        ApiKey.DELETE_TOPICS: (1, 6),
        ApiKey.INIT_PRODUCER_ID: (0, 4),
        ApiKey.DESCRIBE_CONFIGS: (1, 4),
        ApiKey.CREATE_PARTITIONS: (0, 3),
        ApiKey.DELETE_GROUPS: (0, 2),
        ApiKey.DESCRIBE_CLUSTER: (0, 0),
    }
)
