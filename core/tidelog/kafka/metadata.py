"""Metadata and DescribeCluster: which agents serve the cluster and which topics it holds,
creating the topics a client names on first use where the cluster allows it.

Any agent serves any partition; a partition's "leader" is the agent its traffic gathers on
(tidelog.kafka.placement), shown to each client among the live agents of its zone.
"""

from __future__ import annotations

import uuid
from typing import Any

from tidelog import runtime
from tidelog.cluster import describe_cluster
from tidelog.errors import TidelogError
from tidelog.kafka.codec import NONE, Answer, Request, code, field
from tidelog.kafka.node import Node
from tidelog.kafka.placement import client_zone, owner, partition_key, visible
from tidelog.kafka.registry import Brokers
from tidelog.log.topics import Topic

UNKNOWN_OPERATIONS = -(2**31)  # authorized operations, when not asked for
BROKERS, CONTROLLERS = 1, 2  # DescribeCluster's endpoint types


class MetadataHandlers:
    def __init__(self, brokers: Brokers) -> None:
        self.brokers = brokers
        self._cluster: str | None = None

    def metadata(self, request: Request) -> Answer:
        body = request.body
        wanted = field(body, "topics")
        nodes = self.shown(request)
        if wanted is None or (request.api_version == 0 and not wanted):
            topics = [topic_metadata(t, nodes) for t in runtime.topics().list()]
        else:
            # Versions before 4 have no flag: they always asked for creation, as Kafka reads them.
            create = bool(field(body, "allow_auto_topic_creation", True))
            topics = [self._named(str(t.name), nodes, create) for t in wanted]
        return {
            "throttle_time": 0,
            "brokers": [
                {"node_id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack}
                for node in nodes
            ],
            "cluster_id": self.cluster_id(),
            "controller_id": controller(nodes),
            "topics": topics,
            "cluster_authorized_operations": UNKNOWN_OPERATIONS,
        }

    def describe_cluster(self, request: Request) -> Answer:
        """The agents, as brokers (v1's endpoint type 1). There are no controllers to list, as
        a broker's endpoint has none: 2 is MISMATCHED_ENDPOINT_TYPE, others unsupported."""
        endpoint = int(field(request.body, "endpoint_type", BROKERS))
        if endpoint != BROKERS:
            error = (
                "MISMATCHED_ENDPOINT_TYPE"
                if endpoint == CONTROLLERS
                else "UNSUPPORTED_ENDPOINT_TYPE"
            )
            return {
                "throttle_time": 0,
                "error_code": code("INVALID_REQUEST" if request.api_version == 0 else error),
                "error_message": f"this endpoint lists brokers (1), not type {endpoint}",
                "endpoint_type": endpoint,
                "cluster_id": self.cluster_id(),
                "controller_id": -1,
                "brokers": [],
                "cluster_authorized_operations": UNKNOWN_OPERATIONS,
            }
        nodes = self.shown(request)
        return {
            "throttle_time": 0,
            "error_code": NONE,
            "error_message": None,
            "endpoint_type": BROKERS,
            "cluster_id": self.cluster_id(),
            "controller_id": controller(nodes),
            "brokers": [
                {"broker_id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack}
                for node in nodes
            ],
            "cluster_authorized_operations": UNKNOWN_OPERATIONS,
        }

    def shown(self, request: Request) -> tuple[Node, ...]:
        """The agents this client is shown: live ones in its zone, else all live ones."""
        return visible(self.brokers.live(), client_zone(request.client_id))

    def cluster_id(self) -> str:
        """Created once per cluster and never changed: read once per agent."""
        if self._cluster is None:
            self._cluster = describe_cluster(
                runtime.metadata_store(),
                clock_ms=runtime.clock_ms,
                random_bytes=runtime.random_bytes,
            ).cluster_id
        return self._cluster

    @staticmethod
    def _named(name: str, nodes: tuple[Node, ...], create: bool) -> Answer:
        try:
            return topic_metadata(runtime.topic_or_create(name, create=create), nodes)
        except TidelogError as exc:
            return {
                "error_code": exc.kafka_error.code,
                "name": name,
                "topic_id": uuid.UUID(int=0),
                "is_internal": False,
                "partitions": [],
            }


def topic_metadata(topic: Topic, nodes: tuple[Node, ...]) -> Answer:
    partitions: list[Any] = []
    for p in range(topic.partitions):
        leader = owner(nodes, partition_key(topic.topic_id, p)).node_id
        partitions.append(
            {
                "error_code": NONE,
                "partition_index": p,
                "leader_id": leader,
                "leader_epoch": 0,
                "replica_nodes": [leader],
                "isr_nodes": [leader],
                "offline_replicas": [],
            }
        )
    return {
        "error_code": NONE,
        "name": topic.name,
        "topic_id": uuid.UUID(topic.topic_id),
        "is_internal": False,
        "partitions": partitions,
    }


def controller(nodes: tuple[Node, ...]) -> int:
    """There is no controller; admin tools want one, and the lowest id is as good as any and
    the same from every agent."""
    return min(node.node_id for node in nodes)
