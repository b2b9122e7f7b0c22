"""The replica and log-directory APIs, answered as a Kafka cluster of one replica per partition
answers them. tidelog keeps no replicas: S3 holds each partition's data redundantly, and any
agent serves any partition. So there is never a leader to elect or a replica to move, and every
agent has one log directory, the cluster's bucket (tidelog.kafka.broker_configs.log_dir).

Tools call these while surveying a cluster (kafka-reassign-partitions, kafka-leader-election,
UIs), so each is answered, never refused at the version level.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from tidelog import runtime
from tidelog.errors import TidelogError
from tidelog.kafka.broker_configs import log_dir
from tidelog.kafka.codec import NONE, Answer, Request, code, items
from tidelog.kafka.node import Node
from tidelog.log.head import sizes
from tidelog.log.topics import Topic

NOT_NEEDED = "Leader election not needed for topic partition: tidelog partitions have no replicas"
NO_REPLICAS = "tidelog partitions have no replicas to move: S3 keeps each partition's copies"


def elect_leaders(request: Request) -> Answer:
    """Every named partition: ELECTION_NOT_NEEDED. Null (every partition) answers none, as
    Kafka leaves out the partitions that already have their leader."""
    wanted = request.body.topic_partitions
    results = []
    for entry in items(wanted):
        name = str(entry.topic)
        partitions = [_not_needed(name, int(p)) for p in items(entry.partitions)]
        results.append({"topic": name, "partition_result": partitions})
    return {"throttle_time": 0, "error_code": NONE, "replica_election_results": results}


def _not_needed(name: str, partition: int) -> Answer:
    error = _partition_error(name, partition)
    return {
        "partition_id": partition,
        "error_code": code("ELECTION_NOT_NEEDED") if error is None else error.kafka_error.code,
        "error_message": NOT_NEEDED if error is None else error.message,
    }


def alter_partition_reassignments(
    request: Request, live: Callable[[], Sequence[Node]] = tuple
) -> Answer:
    """A cancellation (null replicas) finds no reassignment in progress. A reassignment to one
    live agent is to the replica the partition has already (each agent serves every
    partition), done with nothing to do, as Kafka answers a reassignment to the current
    replicas; any other names replicas tidelog does not have: INVALID_REPLICA_ASSIGNMENT."""
    agents = {node.node_id for node in live()}
    responses = []
    for topic in items(request.body.topics):
        name = str(topic.name)
        partitions = []
        for p in items(topic.partitions):
            index = int(p.partition_index)
            error = _partition_error(name, index)
            answer: tuple[int, str | None]
            if error is not None:
                answer = (error.kafka_error.code, error.message)
            elif p.replicas is None:
                answer = (code("NO_REASSIGNMENT_IN_PROGRESS"), "no reassignment is in progress")
            elif len(p.replicas) == 1 and int(p.replicas[0]) in agents:
                answer = (NONE, None)
            else:
                answer = (code("INVALID_REPLICA_ASSIGNMENT"), NO_REPLICAS)
            partitions.append(
                {"partition_index": index, "error_code": answer[0], "error_message": answer[1]}
            )
        responses.append({"name": name, "partitions": partitions})
    return {
        "throttle_time": 0,
        "error_code": NONE,
        "error_message": None,
        "responses": responses,
    }


def list_partition_reassignments(request: Request) -> Answer:
    return {"throttle_time": 0, "error_code": NONE, "error_message": None, "topics": []}


def alter_replica_log_dirs(request: Request) -> Answer:
    """Moving a partition to the one log directory it is in is done already; any other
    directory is LOG_DIR_NOT_FOUND."""
    here = log_dir()
    results = []
    for move in items(request.body.dirs):
        for topic in items(move.topics):
            name = str(topic.name)
            partitions = []
            for p in items(topic.partitions):
                error = _partition_error(name, int(p))
                if error is not None:
                    error_code = error.kafka_error.code
                else:
                    error_code = NONE if str(move.path) == here else code("LOG_DIR_NOT_FOUND")
                partitions.append({"partition_index": int(p), "error_code": error_code})
            results.append({"topic_name": name, "partitions": partitions})
    return {"throttle_time": 0, "results": results}


def describe_log_dirs(request: Request) -> Answer:
    """The one log directory, with each partition's stored size (the HTTP API's ?sizes=true),
    read from the partitions' heads, a hundred a call. Partitions that do not exist are left
    out, as a broker leaves out those it does not host."""
    described = list(_described(request.body.topics))
    wanted = [(topic.topic_id, p) for topic, partitions in described for p in partitions]
    sized = sizes(runtime.metadata_store(), wanted)
    return {
        "throttle_time": 0,
        "error_code": NONE,
        "results": [
            {
                "error_code": NONE,
                "log_dir": log_dir(),
                "topics": [
                    {
                        "name": topic.name,
                        "partitions": [
                            {
                                "partition_index": p,
                                "partition_size": sized[(topic.topic_id, p)],
                                "offset_lag": 0,
                                "is_future_key": False,
                            }
                            for p in partitions
                        ],
                    }
                    for topic, partitions in described
                ],
                "total_bytes": -1,  # S3 has no volume to measure
                "usable_bytes": -1,
            }
        ],
    }


def _described(wanted: object) -> Iterator[tuple[Topic, list[int]]]:
    if wanted is None:
        for topic in runtime.topics().list():
            yield topic, list(range(topic.partitions))
        return
    for entry in items(wanted):  # type: ignore[arg-type]
        try:
            topic = runtime.topics().get(str(entry.topic))
        except TidelogError:
            continue
        partitions = [int(p) for p in items(entry.partitions) if 0 <= int(p) < topic.partitions]
        if partitions:
            yield topic, partitions


def _partition_error(name: str, partition: int) -> TidelogError | None:
    try:
        runtime.topic_cache().get(name, partition).check_partition(partition)
    except TidelogError as exc:
        return exc
    return None
