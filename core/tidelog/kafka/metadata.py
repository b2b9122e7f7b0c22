"""Metadata and DescribeCluster: which agents serve the cluster and which topics it holds,
creating the topics a client names on first use where the cluster allows it.

Any agent serves any partition; a partition's "leader" is the agent its traffic gathers on
(tidelog.kafka.placement), shown to each client among the live agents of its zone.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from tidelog import runtime
from tidelog.cluster import describe_cluster
from tidelog.errors import InvalidRequestError, TidelogError
from tidelog.kafka.codec import NONE, Answer, KeyedPartitions, Request, code, field, items
from tidelog.kafka.node import Node, reachable
from tidelog.kafka.placement import client_zone, owner_id, partition_key, visible
from tidelog.kafka.registry import Brokers, View
from tidelog.kafka.topicrefs import NO_ID, topic_ref
from tidelog.log.topics import Topic

MAX_PAGE_PARTITIONS = 2000  # Kafka's max.request.partition.size.limit
TOPIC_IDS = 12  # the first version that looks topics up by id (v10-11 carry the field only)
UNKNOWN_OPERATIONS = -(2**31)  # authorized operations, when not asked for
BROKERS, CONTROLLERS = 1, 2  # DescribeCluster's endpoint types


class MetadataHandlers:
    def __init__(self, brokers: Brokers) -> None:
        self.brokers = brokers
        self._cluster: str | None = None

    def metadata(self, request: Request) -> Answer:
        body = request.body
        wanted = field(body, "topics")
        view = self.shown(request)
        nodes = view.nodes
        if wanted is None or (request.api_version == 0 and not wanted):
            topics = [topic_metadata(t, view) for t in runtime.topics().list()]
        else:
            # Versions before 4 have no flag: they always asked for creation, as Kafka reads them.
            create = bool(field(body, "allow_auto_topic_creation", True))
            by_id = request.api_version >= TOPIC_IDS
            topics = [self._named(t, view, create, by_id) for t in wanted]
        return {
            "throttle_time": 0,
            "error_code": NONE,
            "brokers": [
                {"node_id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack}
                for node in nodes
            ],
            "cluster_id": self.cluster_id(),
            "controller_id": controller(nodes),
            "topics": topics,
            "cluster_authorized_operations": UNKNOWN_OPERATIONS,
        }

    def describe_topic_partitions(self, request: Request) -> Answer:
        """KIP-966's paged Metadata: the topics named (all, when none is), by name, from the
        cursor's topic and partition on, at most ``response_partition_limit`` partitions (and
        Kafka's 2,000) per answer, with a cursor to the rest. Named topics that are unknown
        answer UNKNOWN_TOPIC_OR_PARTITION; they are never created here."""
        body = request.body
        cursor = field(body, "cursor")
        start = str(cursor.topic_name) if cursor is not None else ""
        named = [str(t.name) for t in items(body.topics)]
        if cursor is not None and (
            int(cursor.partition_index) < 0 or (named and start not in named)
        ):
            error = code("INVALID_REQUEST")  # Kafka's answer to the whole request, per topic
            return {
                "throttle_time": 0,
                "topics": [no_topic(name, error) for name in named],
                "next_cursor": None,
            }
        listed = {t.name: t for t in runtime.topics().list()}
        wanted = sorted({n for n in (named or listed) if n >= start})
        view = self.shown(request)
        room = max(1, min(MAX_PAGE_PARTITIONS, int(body.response_partition_limit)))
        topics: list[Answer] = []
        next_cursor = None
        for name in wanted:
            if room == 0:
                next_cursor = {"topic_name": name, "partition_index": 0}
                break
            topic = listed.get(name)
            if topic is None:
                topics.append(no_topic(name, code("UNKNOWN_TOPIC_OR_PARTITION")))
                continue
            first = int(cursor.partition_index) if cursor is not None and name == start else 0
            shown = topic_metadata(topic, view, first, room)
            topics.append(shown)
            room -= len(shown["partitions"])
            end = first + len(shown["partitions"])
            if end < topic.partitions:
                next_cursor = {"topic_name": name, "partition_index": end}
                break
        return {"throttle_time": 0, "topics": topics, "next_cursor": next_cursor}

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
        nodes = self.shown(request).nodes
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

    def shown(self, request: Request) -> View:
        """The agents this client is shown, at the ports of the listener it came in on: live
        ones in its zone, else all live ones; with the epoch of the view they are taken from."""
        view = self.brokers.view()
        live = reachable(view.nodes, request.listener)
        return View(view.epoch, visible(live, client_zone(request.client_id)))

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
    def _named(wanted: Any, view: View, create: bool, by_id: bool) -> Answer:
        """A topic the request names: by name, created if it may be; or by id (v12+), which
        is never created, and answers UNKNOWN_TOPIC_ID with no name when unknown."""
        ref = topic_ref(wanted, "name")
        named = field(wanted, "name") is not None
        try:
            if not named and not by_id:  # v10-11: the field, no lookup
                raise InvalidRequestError("name topics by name before Metadata v12")
            if ref.error is not None:
                raise ref.error
            if ref.found is not None:
                return topic_metadata(ref.found, view)
            return topic_metadata(runtime.topic_or_create(ref.name, create=create), view)
        except TidelogError as exc:
            return {
                "error_code": exc.kafka_error.code,
                # Null only where the version allows it: Kafka's error answer sends "".
                "name": ref.name if named else (None if by_id else ""),
                "topic_id": ref.topic_id,
                "is_internal": False,
                "partitions": [],
            }


def topic_metadata(topic: Topic, view: View, first: int = 0, most: int | None = None) -> Answer:
    """The topic and its partitions from ``first`` on, ``most`` of them at most; each led by
    its rendezvous agent among the view's, under the view's epoch (tidelog.kafka.registry)."""
    last = topic.partitions if most is None else min(topic.partitions, first + most)
    node_ids = tuple(node.node_id for node in view.nodes)
    shown = leaders(topic.topic_id, first, last, node_ids)

    def entry(i: int) -> Answer:
        leader = shown[i]
        return {
            "error_code": NONE,
            "partition_index": first + i,
            "leader_id": leader,
            "leader_epoch": view.epoch,
            "replica_nodes": [leader],
            "isr_nodes": [leader],
            "offline_replicas": [],
            "eligible_leader_replicas": [],  # DescribeTopicPartitions' (KIP-966): no ELR
            "last_known_elr": [],
        }

    key = (topic.topic_id, first, last, node_ids, view.epoch)
    partitions = KeyedPartitions(key, last - first, entry)
    return {
        "error_code": NONE,
        "name": topic.name,
        "topic_id": uuid.UUID(topic.topic_id),
        "is_internal": False,
        "partitions": partitions,
    }


@functools.lru_cache(maxsize=256)
def leaders(topic_id: str, first: int, last: int, node_ids: tuple[int, ...]) -> tuple[int, ...]:
    """Each partition's leader among ``node_ids``: a rendezvous hash per partition and agent,
    40 ms for a 10,000-partition topic, the same until an agent comes or goes."""
    return tuple(owner_id(node_ids, partition_key(topic_id, p)) for p in range(first, last))


def controller(nodes: tuple[Node, ...]) -> int:
    """There is no controller; admin tools want one, and the lowest id is as good as any and
    the same from every agent."""
    return min(node.node_id for node in nodes)


def no_topic(name: str | None, error: int) -> Answer:
    """A topic answered with an error and the zero id: unknown, or hidden from the caller (a
    name is null where an id named it)."""
    return {
        "error_code": error,
        "name": name,
        "topic_id": NO_ID,
        "is_internal": False,
        "partitions": [],
    }
