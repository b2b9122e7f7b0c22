"""OffsetForLeaderEpoch (KIP-320): where a leader epoch's records end, so a consumer can check
that its position survived a leader change.

A tidelog partition has no replicas, so its log never diverges and is never truncated: every
epoch's records end where the log ends. Each partition is answered with the epoch asked
about and the log end offset, and a consumer whose position lies at or below it goes on
where it was; one past it (the topic was deleted and made again, shorter) sees truncation
and resets, as Kafka's clients do when a log was truncated. The epochs clients ask about come
from committed offsets, which clients may carry over from another cluster: any epoch is
answered, never FENCED_LEADER_EPOCH, as every agent serves every partition.
"""

from __future__ import annotations

from tidelog import runtime
from tidelog.errors import TidelogError
from tidelog.kafka.codec import NONE, Answer, Request, items
from tidelog.kafka.fetch import heads_of
from tidelog.log.read.serve import list_offset


def offset_for_leader_epoch(request: Request) -> Answer:
    wanted = [
        (str(t.topic), int(p.partition), int(p.leader_epoch))
        for t in items(request.body.topics)
        for p in items(t.partitions)
    ]
    # One read for every partition's head; a partition it missed reads its own, and an error
    # is the partition's answer, never an end offset the log does not have.
    heads = heads_of((topic, partition) for topic, partition, _ in wanted)
    reader = runtime.log_reader()
    topics: dict[str, list[Answer]] = {}
    for name, partition, epoch in wanted:
        answer: Answer = {"partition": partition, "error_code": NONE}
        try:
            topic = runtime.topic_cache().get(name, partition)
            topic.check_partition(partition)
            end, _ = list_offset(
                reader, topic, partition, "latest", head=heads.get((name, partition))
            )
            answer.update(leader_epoch=epoch, end_offset=end)
        except TidelogError as exc:
            answer.update(error_code=exc.kafka_error.code, leader_epoch=-1, end_offset=-1)
        topics.setdefault(name, []).append(answer)
    return {
        "throttle_time": 0,
        "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
    }
