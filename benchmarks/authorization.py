"""What ACLs cost an agent: each request's gate (tidelog.kafka.authorization), in process,
against what every request already pays to be read and answered (decoding its frame and
encoding its answer), from the same run.

Produce and Fetch of one topic's 6 partitions, ListOffsets and Metadata of 10 topics, by a
principal with 10 or 1,000 ACLs in the cluster (the rest other principals' and other topics',
literal and prefixed). A gate asks its decisions of a snapshot of the ACLs read at most every
5 s and memoized within it: "warm" is every request after the first in a snapshot, "cold" a
snapshot's first, whose decisions look the ACLs up. Reading the snapshot is timed apart, from the
in-memory table (a lower bound: the cluster's table adds a query's round trips per 1 MB page).
"""

from __future__ import annotations

import datetime
import io
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from kio.index import load_request_schema
from kio.serial import entity_writer
from kio.static.primitive import Records

from benchmarks.report import Section
from tidelog.acl_store import AclStore
from tidelog.acls import Acl, Operation, PatternType, Permission, ResourceType
from tidelog.kafka import authorization
from tidelog.kafka.apis import ApiKey
from tidelog.kafka.authorizer import Access, Authorizer, AuthorizerSettings
from tidelog.kafka.codec import Request, RequestHeaderV2, decode_request, encode_response
from tidelog.kafka.codec import build as build_entity
from tidelog.storage.memory import MemoryMetadataStore

PRINCIPAL = "User:bench"
REPEATS = 2000
COLD = 200


def run(progress: Any = print) -> Section:
    section = Section(
        "What ACLs cost a request",
        "Each API's gate in front of its handler, in process, per request: warm (decisions "
        "memoized in the 5 s snapshot) and cold (a snapshot's first request), with 10 and 1,000 "
        "ACLs in the cluster; the ratio is to decoding the request's frame and encoding its "
        f"answer, which every request pays. Medians of {REPEATS:,} requests.",
        ("request", "ACLs", "read + answer, µs", "gate warm, µs (ratio)", "gate cold, µs"),
    )
    for count in (10, 1000):
        store = AclStore(MemoryMetadataStore())
        store.add(_acls(count))
        for name, (request, answer) in _requests().items():
            progress(f"  {name}, {count} ACLs")
            section.rows.append((name, f"{count:,}", *_costs(request, answer, store)))
        load = _median(store.all, repeats=50)
        section.notes.append(f"reading a snapshot of {count:,} ACLs: {load / 1000:.2f} ms")
    return section


def _costs(request: Request, answer: dict[str, Any], store: AclStore) -> tuple[str, ...]:
    frame = _frame(request)
    codec = _median(lambda: encode_response(decode_request(frame), answer))
    access = Access(Authorizer(AuthorizerSettings(), store), request)
    warm = _median(lambda: authorization.authorize(request, access, lambda r: answer))

    snapshots = []
    for _ in range(COLD):  # each read now, so the timing is the first decisions' alone
        access = Access(Authorizer(AuthorizerSettings(), store), request)
        access.allows(Operation.DESCRIBE, ResourceType.CLUSTER)
        snapshots.append(access)
    cold = iter(snapshots)
    cold_us = _median(lambda: authorization.authorize(request, next(cold), lambda r: answer), COLD)
    return f"{codec:.1f}", f"{warm:.1f} ({warm / codec:.2f}x)", f"{cold_us:.1f}"


def _acls(count: int) -> list[Acl]:
    """The principal's own (write and read on its topics, a prefix for its groups), then other
    principals' on other topics, half of them prefixed."""
    mine = [
        Acl(ResourceType.TOPIC, "bench", PatternType.PREFIXED, PRINCIPAL, "*", op, Permission.ALLOW)
        for op in (Operation.WRITE, Operation.READ)
    ]
    mine.append(
        Acl(
            ResourceType.GROUP,
            "bench",
            PatternType.PREFIXED,
            PRINCIPAL,
            "*",
            Operation.READ,
            Permission.ALLOW,
        )
    )
    others = [
        Acl(
            ResourceType.TOPIC,
            f"other-{i}",
            PatternType.PREFIXED if i % 2 else PatternType.LITERAL,
            f"User:app-{i % 50}",
            "*",
            Operation.READ,
            Permission.ALLOW,
        )
        for i in range(count - len(mine))
    ]
    return mine + others


def _requests() -> dict[str, tuple[Request, dict[str, Any]]]:
    partitions = range(6)
    produce = {
        "transactional_id": None,
        "acks": -1,
        "timeout": datetime.timedelta(seconds=30),
        "topic_data": [
            {
                "name": "bench-0",
                "partition_data": [
                    {"index": p, "records": Records(b"x" * 1024)} for p in partitions
                ],
            }
        ],
    }
    fetch = {
        "max_wait": datetime.timedelta(milliseconds=500),
        "min_bytes": 1,
        "topics": [
            {
                "topic": "bench-0",
                "partitions": [
                    {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    for p in partitions
                ],
            }
        ],
        "forgotten_topics_data": [],
    }
    list_offsets = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {"name": f"bench-{t}", "partitions": [{"partition_index": 0, "timestamp": -1}]}
            for t in range(10)
        ],
    }
    metadata = {
        "topics": [{"topic_id": uuid.UUID(int=0), "name": f"bench-{t}"} for t in range(10)],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    produced = [
        {
            "index": p,
            "error_code": 0,
            "base_offset": 0,
            "log_append_time": -1,
            "log_start_offset": 0,
            "record_errors": [],
            "error_message": None,
        }
        for p in partitions
    ]
    fetched = [
        {
            "partition_index": p,
            "error_code": 0,
            "high_watermark": 0,
            "last_stable_offset": 0,
            "log_start_offset": 0,
            "aborted_transactions": [],
            "preferred_read_replica": -1,
            "records": b"",
        }
        for p in partitions
    ]
    return {
        "Produce v9, 6 partitions": (
            _request(ApiKey.PRODUCE, 9, produce),
            {
                "throttle_time": 0,
                "responses": [{"name": "bench-0", "partition_responses": produced}],
            },
        ),
        "Fetch v12, 6 partitions": (
            _request(ApiKey.FETCH, 12, fetch),
            {
                "throttle_time": 0,
                "error_code": 0,
                "session_id": 0,
                "responses": [{"topic": "bench-0", "partitions": fetched}],
            },
        ),
        "ListOffsets v7, 10 topics": (
            _request(ApiKey.LIST_OFFSETS, 7, list_offsets),
            {"throttle_time": 0, "topics": []},
        ),
        "Metadata v12, 10 topics": (
            _request(ApiKey.METADATA, 12, metadata),
            {
                "throttle_time": 0,
                "brokers": [],
                "cluster_id": "c",
                "controller_id": 1,
                "topics": [],
            },
        ),
    }


def _request(api: ApiKey, version: int, body: dict[str, Any]) -> Request:
    entity = build_entity(load_request_schema(api, version), body)
    return Request(api, version, 1, "bench", entity, "/127.0.0.1", principal=PRINCIPAL)


def _frame(request: Request) -> bytes:
    out = io.BytesIO()
    header = RequestHeaderV2(
        request_api_key=request.api_key,
        request_api_version=request.api_version,
        correlation_id=request.correlation_id,
        client_id="bench",
    )
    entity_writer(RequestHeaderV2)(out, header)
    entity_writer(type(request.body))(out, request.body)
    return out.getvalue()


def _median(operation: Callable[[], object], repeats: int = REPEATS) -> float:
    """Microseconds per call, the median of ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6
