"""A wave of new members joining at once with the ids they were handed (KIP-394), each read of
its own items and the meta item (tidelog.groups.sessions), against every store: all of them
members of the one generation gathering, every reservation claimed, one rebalance; and then
one assignment that gives each partition to exactly one of them."""

from __future__ import annotations

import threading

import pytest
from tests.support.groups import coordinator
from tests.support.resources import new_table

from tidelog.assignors import TopicPartition
from tidelog.groups.model import JoinRequest, Limits, State
from tidelog.local.stack import aws_client
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.memory import MemoryMetadataStore

MEMBERS = 30
PARTITIONS = 60


@pytest.fixture(params=["memory", "emulator", "dynamodb-local"])
def meta(request, template):
    if request.param == "memory":
        return MemoryMetadataStore()
    if request.param == "emulator":
        client = request.getfixturevalue("dev_client")("dynamodb")
    else:
        client = aws_client("dynamodb", request.getfixturevalue("dynamodb_local").url, "us-east-1")
    return DynamoMetadataStore(client, new_table(client, template))


def test_a_wave_of_new_members_joins_one_generation(meta):
    coord, rebalancer, topics, _, _ = coordinator(
        limits=Limits(min_session_timeout_ms=100, max_session_timeout_ms=60_000), meta=meta
    )
    topics.create("t", PARTITIONS, {})
    wanted = JoinRequest(
        topics=("t",),
        assignors=("range", "roundrobin"),
        session_timeout_ms=30_000,
        rebalance_timeout_ms=30_000,
    )
    first = coord.rejoin("g", coord.reserve_member_id("g", wanted), wanted)
    reserved = [coord.reserve_member_id("g", wanted) for _ in range(MEMBERS - 1)]
    at_once = threading.Barrier(len(reserved))
    joined, failed = [], []

    def join(member_id: str) -> None:
        at_once.wait()
        try:
            joined.append(coord.rejoin("g", member_id, wanted))
        except Exception as exc:  # reported below, with the member
            failed.append(f"{member_id}: {exc!r}")

    threads = [threading.Thread(target=join, args=(m,)) for m in reserved]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == []
    assert sorted(j.member_id for j in joined) == sorted(reserved)
    assert {(j.generation, j.state) for j in [first, *joined]} == {
        (first.generation, State.PREPARING_REBALANCE)
    }
    group = coord.load("g")
    assert set(group.members) == {first.member_id, *reserved}
    assert {m.joined_generation for m in group.members.values()} == {first.generation}
    assert group.pending == {}
    assert [s[1] for s in rebalancer.started] == [first.generation]
    rebalancer.run()
    given = [
        tp
        for member_id in group.members
        for tp in coord.heartbeat("g", member_id, first.generation).assignment
    ]
    assert sorted(given) == [TopicPartition("t", p) for p in range(PARTITIONS)]
