"""What each of Kafka's APIs needs of its caller, by operation and resource type, and Kafka's
error when it is refused: the rule table of ``KafkaApis``, pure. The gates
(tidelog.kafka.authorization) check exactly these, and the authorization matrix
(tests/unit/test_authorization_matrix.py) is built from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tidelog.acls import CLUSTER_NAME
from tidelog.acls import Operation as Op
from tidelog.acls import ResourceType as Rt
from tidelog.kafka.apis import ApiKey
from tidelog.kafka.authorizer import Access


@dataclass(frozen=True)
class Need:
    """An operation on a type of resource, and Kafka's error when it is not allowed."""

    operation: Op
    resource_type: Rt
    error: str

    def allowed(self, access: Access, name: str = CLUSTER_NAME) -> bool:
        return access.allows(self.operation, self.resource_type, name)


TOPIC_ERROR, GROUP_ERROR = "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"
TXN_ERROR, CLUSTER_ERROR = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"
TOPIC_READ = Need(Op.READ, Rt.TOPIC, TOPIC_ERROR)
TOPIC_WRITE = Need(Op.WRITE, Rt.TOPIC, TOPIC_ERROR)
TOPIC_DESCRIBE = Need(Op.DESCRIBE, Rt.TOPIC, TOPIC_ERROR)
TOPIC_CREATE = Need(Op.CREATE, Rt.TOPIC, TOPIC_ERROR)
TOPIC_DELETE = Need(Op.DELETE, Rt.TOPIC, TOPIC_ERROR)
TOPIC_ALTER = Need(Op.ALTER, Rt.TOPIC, TOPIC_ERROR)
TOPIC_DESCRIBE_CONFIGS = Need(Op.DESCRIBE_CONFIGS, Rt.TOPIC, TOPIC_ERROR)
TOPIC_ALTER_CONFIGS = Need(Op.ALTER_CONFIGS, Rt.TOPIC, TOPIC_ERROR)
GROUP_READ = Need(Op.READ, Rt.GROUP, GROUP_ERROR)
GROUP_DESCRIBE = Need(Op.DESCRIBE, Rt.GROUP, GROUP_ERROR)
GROUP_DELETE = Need(Op.DELETE, Rt.GROUP, GROUP_ERROR)
GROUP_DESCRIBE_CONFIGS = Need(Op.DESCRIBE_CONFIGS, Rt.GROUP, GROUP_ERROR)
GROUP_ALTER_CONFIGS = Need(Op.ALTER_CONFIGS, Rt.GROUP, GROUP_ERROR)
TXN_WRITE = Need(Op.WRITE, Rt.TRANSACTIONAL_ID, TXN_ERROR)
TXN_DESCRIBE = Need(Op.DESCRIBE, Rt.TRANSACTIONAL_ID, TXN_ERROR)
CLUSTER_CREATE = Need(Op.CREATE, Rt.CLUSTER, CLUSTER_ERROR)
CLUSTER_DESCRIBE = Need(Op.DESCRIBE, Rt.CLUSTER, CLUSTER_ERROR)
CLUSTER_ALTER = Need(Op.ALTER, Rt.CLUSTER, CLUSTER_ERROR)
CLUSTER_DESCRIBE_CONFIGS = Need(Op.DESCRIBE_CONFIGS, Rt.CLUSTER, CLUSTER_ERROR)
CLUSTER_ALTER_CONFIGS = Need(Op.ALTER_CONFIGS, Rt.CLUSTER, CLUSTER_ERROR)
CLUSTER_IDEMPOTENT_WRITE = Need(Op.IDEMPOTENT_WRITE, Rt.CLUSTER, CLUSTER_ERROR)

# What each API needs. A transactional id, where a request may carry none (InitProducerId,
# Produce), is checked only when it is there; an idempotent producer without one needs
# IDEMPOTENT_WRITE on the cluster, or WRITE on any topic (KIP-679).
RULES: Mapping[ApiKey, tuple[Need, ...]] = {
    ApiKey.PRODUCE: (TXN_WRITE, TOPIC_WRITE),
    ApiKey.FETCH: (TOPIC_READ,),
    ApiKey.LIST_OFFSETS: (TOPIC_DESCRIBE,),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (TOPIC_DESCRIBE,),
    ApiKey.METADATA: (TOPIC_DESCRIBE, TOPIC_CREATE),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (TOPIC_DESCRIBE,),
    ApiKey.OFFSET_COMMIT: (GROUP_READ, TOPIC_READ),
    ApiKey.OFFSET_FETCH: (GROUP_DESCRIBE, TOPIC_DESCRIBE),
    ApiKey.OFFSET_DELETE: (GROUP_DELETE, TOPIC_READ),
    ApiKey.FIND_COORDINATOR: (GROUP_DESCRIBE, TXN_DESCRIBE),
    ApiKey.JOIN_GROUP: (GROUP_READ,),
    ApiKey.SYNC_GROUP: (GROUP_READ,),
    ApiKey.HEARTBEAT: (GROUP_READ,),
    ApiKey.LEAVE_GROUP: (GROUP_READ,),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (GROUP_READ,),
    ApiKey.DESCRIBE_GROUPS: (GROUP_DESCRIBE,),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (GROUP_DESCRIBE,),
    ApiKey.LIST_GROUPS: (GROUP_DESCRIBE,),
    ApiKey.DELETE_GROUPS: (GROUP_DELETE,),
    ApiKey.INIT_PRODUCER_ID: (TXN_WRITE, CLUSTER_IDEMPOTENT_WRITE),
    ApiKey.ADD_PARTITIONS_TO_TXN: (TXN_WRITE, TOPIC_WRITE),
    ApiKey.ADD_OFFSETS_TO_TXN: (TXN_WRITE, GROUP_READ),
    ApiKey.END_TXN: (TXN_WRITE,),
    ApiKey.TXN_OFFSET_COMMIT: (TXN_WRITE, GROUP_READ, TOPIC_READ),
    ApiKey.DESCRIBE_TRANSACTIONS: (TXN_DESCRIBE, TOPIC_DESCRIBE),
    ApiKey.LIST_TRANSACTIONS: (TXN_DESCRIBE,),
    ApiKey.DESCRIBE_PRODUCERS: (TOPIC_READ,),
    ApiKey.CREATE_TOPICS: (TOPIC_CREATE, TOPIC_DESCRIBE_CONFIGS),
    ApiKey.DELETE_TOPICS: (TOPIC_DELETE,),
    ApiKey.CREATE_PARTITIONS: (TOPIC_ALTER,),
    ApiKey.DELETE_RECORDS: (TOPIC_DELETE,),
    ApiKey.DESCRIBE_CONFIGS: (
        TOPIC_DESCRIBE_CONFIGS,
        GROUP_DESCRIBE_CONFIGS,
        CLUSTER_DESCRIBE_CONFIGS,
    ),
    ApiKey.ALTER_CONFIGS: (TOPIC_ALTER_CONFIGS, CLUSTER_ALTER_CONFIGS),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (
        TOPIC_ALTER_CONFIGS,
        GROUP_ALTER_CONFIGS,
        CLUSTER_ALTER_CONFIGS,
    ),
    ApiKey.DESCRIBE_LOG_DIRS: (CLUSTER_DESCRIBE,),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (CLUSTER_ALTER,),
    ApiKey.ELECT_LEADERS: (CLUSTER_ALTER,),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (CLUSTER_ALTER,),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (CLUSTER_DESCRIBE,),
    ApiKey.DESCRIBE_ACLS: (CLUSTER_DESCRIBE,),
    ApiKey.CREATE_ACLS: (CLUSTER_ALTER,),
    ApiKey.DELETE_ACLS: (CLUSTER_ALTER,),
    ApiKey.LIST_CONFIG_RESOURCES: (CLUSTER_DESCRIBE_CONFIGS,),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (CLUSTER_DESCRIBE_CONFIGS,),
    ApiKey.ALTER_CLIENT_QUOTAS: (CLUSTER_ALTER_CONFIGS,),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (CLUSTER_DESCRIBE,),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (CLUSTER_ALTER,),
    # Open to every authenticated caller, as in Kafka: DescribeCluster's authorized operations
    # are computed for those who may describe the cluster.
    ApiKey.DESCRIBE_CLUSTER: (),
    ApiKey.API_VERSIONS: (),
    ApiKey.SASL_HANDSHAKE: (),
    ApiKey.SASL_AUTHENTICATE: (),
}


# Where Kafka accepts one need for another: CREATE on the cluster for CREATE on each topic, and
# DESCRIBE on the cluster for DESCRIBE on each group a listing shows.
ALTERNATIVES: Mapping[tuple[ApiKey, Need], Need] = {
    (ApiKey.CREATE_TOPICS, TOPIC_CREATE): CLUSTER_CREATE,
    (ApiKey.METADATA, TOPIC_CREATE): CLUSTER_CREATE,
    (ApiKey.LIST_GROUPS, GROUP_DESCRIBE): CLUSTER_DESCRIBE,
}
