"""Requests that list topics and partitions, split by what the caller may do to each topic: the
handler answers the topics allowed, and the others are answered here with the error, in the
same answer. This is how Kafka's ``KafkaApis`` merges its ``unauthorizedTopicResponses``.

A topic named by an id nobody knows is left to the handler, which answers UNKNOWN_TOPIC_ID; a
topic named by name is refused whether it exists or not, so a caller learns nothing of topics
it may not see.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidelog.kafka.codec import Answer, Request, items
from tidelog.kafka.topicrefs import TopicRef, topic_ref


@dataclass(frozen=True)
class Fanout:
    """Where a request lists its topics and partitions, and where its answer does."""

    topics: str  # the request's topics
    name: str  # a topic's name field (an id in ``topic_id`` instead, from KIP-516's versions)
    partitions: str  # a topic's partitions
    index: str | None  # a partition's index field; None when partitions are bare indexes
    answer: str  # the answer's topics
    answer_name: str
    answer_partitions: str
    answer_index: str
    base: Mapping[str, Any]  # the answer when no topic is left for the handler
    refused: Mapping[str, Any] = field(default_factory=dict)  # a refused partition's others
    error_field: str = "error_code"


Allowed = Callable[[str], bool]


def by_topic(
    base: Mapping[str, Any],
    refused: Mapping[str, Any] | None = None,
    *,
    partitions: str = "partitions",
    index: str | None = "partition_index",
) -> Fanout:
    """The most common shape: ``topics`` by ``name``, each with its partitions, asked and
    answered alike (``partitions`` and ``index`` say how the request lists them)."""
    return Fanout(
        "topics",
        "name",
        partitions,
        index,
        "topics",
        "name",
        "partitions",
        "partition_index",
        base=base,
        refused=refused or {},
    )


def with_body(request: Request, **fields: Any) -> Request:
    """The request with some of its body's fields replaced."""
    return dataclasses.replace(request, body=dataclasses.replace(request.body, **fields))


def gate(
    request: Request,
    call: Callable[[Request], Answer],
    spec: Fanout,
    allowed: Allowed,
    error: int,
) -> Answer:
    """The handler's answer for the allowed topics, and ``error`` for each partition of the
    others."""
    kept, refused = split(request.body, spec, allowed)
    if not refused:
        return call(request)
    answer = (
        dict(call(with_body(request, **{spec.topics: tuple(kept)}))) if kept else dict(spec.base)
    )
    answer[spec.answer] = [*answer.get(spec.answer, []), *refusals(spec, refused, error)]
    return answer


def refuse_all(request: Request, spec: Fanout, error: int) -> Answer:
    """Every partition of the request answered ``error``: a check on the whole request failed."""
    refused = [(topic_ref(t, spec.name), t) for t in items(getattr(request.body, spec.topics))]
    return {**spec.base, spec.answer: refusals(spec, refused, error)}


def split(
    body: Any, spec: Fanout, allowed: Allowed
) -> tuple[list[Any], list[tuple[TopicRef, Any]]]:
    """The topics ``body`` lists: those the handler answers, and those refused."""
    kept: list[Any] = []
    refused: list[tuple[TopicRef, Any]] = []
    for entry in items(getattr(body, spec.topics)):
        ref = topic_ref(entry, spec.name)
        if ref.error is None and not allowed(ref.name):
            refused.append((ref, entry))
        else:
            kept.append(entry)
    return kept, refused


def refusals(spec: Fanout, refused: Sequence[tuple[TopicRef, Any]], error: int) -> list[Answer]:
    return [
        {
            spec.answer_name: ref.name,
            "topic_id": ref.topic_id,
            spec.answer_partitions: [
                {
                    spec.answer_index: int(p if spec.index is None else getattr(p, spec.index)),
                    spec.error_field: error,
                    **spec.refused,
                }
                for p in items(getattr(entry, spec.partitions))
            ],
        }
        for ref, entry in refused
    ]
