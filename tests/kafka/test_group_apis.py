"""Kafka's group APIs over the coordinator, request by request (tidelog.kafka.groups): the
in-memory stores, with the assignment state machine played whenever a request waits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from kio.index import load_request_schema
from tests.support.groups import Recorder, coordinator

from tidelog.assignors import TopicPartition
from tidelog.groups.consumer.coordinator import ConsumerCoordinator
from tidelog.groups.consumer.heartbeat import Config, Heartbeat
from tidelog.groups.model import JoinRequest, State
from tidelog.kafka.apis import API_VERSIONS, ApiKey
from tidelog.kafka.codec import Request, build, encode_response_as
from tidelog.kafka.consumer_protocol import (
    read_assignment,
    read_subscription,
    write_assignment,
    write_subscription,
)
from tidelog.kafka.groups import LEADER, GroupHandlers
from tidelog.kafka.node import Node
from tidelog.kafka.offsets import OffsetHandlers
from tidelog.kafka.registry import Solo

NONE, UNKNOWN_TOPIC_OR_PARTITION, ILLEGAL_GENERATION, INCONSISTENT_PROTOCOL = 0, 3, 22, 23
UNKNOWN_MEMBER, REBALANCING, INVALID_REQUEST = 25, 27, 42
NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, MEMBER_ID_REQUIRED, FENCED = 68, 69, 79, 82


SUBSCRIPTION = JoinRequest(topics=("t",), session_timeout_ms=6000, rebalance_timeout_ms=10_000)


def tps(*partitions: int) -> list[TopicPartition]:
    return [TopicPartition("t", p) for p in partitions]


OWNS: frozenset[TopicPartition] = frozenset()  # a joining consumer-protocol member's


def join_body(member_id="", *, protocols=("range",), topics=("t",), **extra) -> dict:
    return {
        "group_id": "g",
        "session_timeout": 6000,
        "rebalance_timeout": 10_000,
        "member_id": member_id,
        "protocol_type": "consumer",
        "protocols": [{"name": p, "metadata": write_subscription(topics)} for p in protocols],
        **extra,
    }


class Agent:
    """GroupHandlers over an in-memory coordinator. A waiting request's sleep lets the clock
    run and plays the state machine, then ``meanwhile`` (what other members do)."""

    def __init__(self, partitions: int = 4) -> None:
        self.coord, self.rebalancer, self.topics, self.clock, self.meta = coordinator()
        self.topics.create("t", partitions, {})
        self.meanwhile: Callable[[], None] = lambda: None
        self.consumer = ConsumerCoordinator(
            self.meta, self.topics, Recorder(), clock_ms=self.clock, config=Config()
        )
        self.groups = GroupHandlers(
            Solo(Node(7, "agent.local", 9092)),
            coordinator=lambda: self.coord,
            consumer_groups=lambda: self.consumer,
            monotonic=lambda: self.clock.now / 1000,
            sleep=self._sleep,
        )
        self.offsets = OffsetHandlers(coordinator=lambda: self.coord)

    def _sleep(self, seconds: float) -> None:
        self.clock.now += int(seconds * 1000)
        self.rebalancer.run()
        self.meanwhile()

    def call(self, key: ApiKey, version: int, body: dict) -> dict:
        entity = build(load_request_schema(key, version), body)
        request = Request(key, version, 1, "app-1", entity, client_host="/10.0.0.9")
        answer = self._handler(key)(request)
        low, high = API_VERSIONS[key]
        for fits in range(low, high + 1):  # answers are version-free: each fits every version
            encode_response_as(key, fits, 1, answer)
        return answer

    def _handler(self, key: ApiKey) -> Callable[[Request], dict]:
        return {
            ApiKey.JOIN_GROUP: self.groups.join_group,
            ApiKey.SYNC_GROUP: self.groups.sync_group,
            ApiKey.HEARTBEAT: self.groups.heartbeat,
            ApiKey.LEAVE_GROUP: self.groups.leave_group,
            ApiKey.OFFSET_COMMIT: self.offsets.offset_commit,
            ApiKey.OFFSET_FETCH: self.offsets.offset_fetch,
            ApiKey.FIND_COORDINATOR: self.groups.find_coordinator,
            ApiKey.DESCRIBE_GROUPS: self.groups.describe_groups,
            ApiKey.LIST_GROUPS: self.groups.list_groups,
            ApiKey.DELETE_GROUPS: self.groups.delete_groups,
        }[key]

    def join(self, member_id="", *, protocols=("range",), topics=("t",), **extra) -> dict:
        body = join_body(member_id, protocols=protocols, topics=topics, **extra)
        answer = self.call(ApiKey.JOIN_GROUP, 7, body)
        if answer["error_code"] == MEMBER_ID_REQUIRED:  # as every client does: join with it
            answer = self.call(ApiKey.JOIN_GROUP, 7, {**body, "member_id": answer["member_id"]})
        return answer

    def sync(self, member_id: str, generation: int) -> dict:
        body = {"group_id": "g", "generation_id": generation, "member_id": member_id}
        answer = self.call(ApiKey.SYNC_GROUP, 5, {**body, "assignments": []})
        if answer["error_code"] == NONE:
            answer["partitions"] = read_assignment(answer["assignment"])
        return answer

    def beat(self, member_id: str, generation: int) -> int:
        body = {"group_id": "g", "generation_id": generation, "member_id": member_id}
        return self.call(ApiKey.HEARTBEAT, 4, body)["error_code"]

    def member(self) -> tuple[str, int]:
        """A member of a Stable group, alone in it: its id and generation."""
        joined = self.join()
        assert self.sync(joined["member_id"], joined["generation_id"])["error_code"] == NONE
        return joined["member_id"], joined["generation_id"]

    def commit(self, member_id: str, generation: int, offsets: dict, version: int = 8) -> dict:
        body = {
            "group_id": "g",
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": p, "committed_offset": o, "committed_metadata": "m"}
                        for p, o in partitions.items()
                    ],
                }
                for topic, partitions in offsets.items()
            ],
        }
        answer = self.call(ApiKey.OFFSET_COMMIT, version, body)
        return {
            (t["name"], p["partition_index"]): p["error_code"]
            for t in answer["topics"]
            for p in t["partitions"]
        }


# -- the consumer protocol's bytes -------------------------------------------------------


def test_the_consumer_protocol_round_trips_and_reads_newer_versions():
    assert read_subscription(write_subscription(["a", "b"])) == ("a", "b")
    assigned = [TopicPartition("a", 2), TopicPartition("a", 0), TopicPartition("b", 1)]
    assert read_assignment(write_assignment(assigned)) == sorted(assigned)
    # A v3 subscription (user data, owned partitions, generation, rack) reads as its topics;
    # bytes past the newest version known are a newer client's fields, and are ignored.
    v9 = "0009" + "00000001" + "0001" + "61" + "ffffffff" + "00000000" + "00000005" + "ffff"
    assert read_subscription(bytes.fromhex(v9) + b"\x00\x01") == ("a",)


@pytest.mark.parametrize("bad", [b"", b"\xff\xff", b"\x00\x00\x00\x00\x00\x09"])
def test_a_malformed_subscription_is_refused_and_joins_nothing(bad):
    agent = Agent()
    body = {
        "group_id": "g",
        "session_timeout": 6000,
        "rebalance_timeout": 6000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": bad}],
    }
    assert agent.call(ApiKey.JOIN_GROUP, 2, body)["error_code"] == INVALID_REQUEST
    assert not agent.coord.describe("g").exists


# -- joining, syncing, heartbeats --------------------------------------------------------


def test_a_lone_member_joins_syncs_and_is_given_every_partition():
    agent = Agent()
    joined = agent.join()
    assert joined["error_code"] == NONE
    assert joined["leader"] == LEADER != joined["member_id"]  # no client runs an assignor
    assert (joined["generation_id"], joined["protocol_name"], joined["members"]) == (1, "range", [])
    synced = agent.sync(joined["member_id"], 1)
    assert (synced["partitions"], synced["protocol_name"]) == (tps(0, 1, 2, 3), "range")
    assert agent.beat(joined["member_id"], 1) == NONE


def test_a_new_member_is_given_its_id_first_and_joins_with_it():
    """KIP-394: JoinGroup v4+ without a member id answers MEMBER_ID_REQUIRED with one, and
    nothing joins until the client comes back with it, within its session timeout."""
    agent = Agent()
    body = join_body()
    first = agent.call(ApiKey.JOIN_GROUP, 4, body)
    assert first["error_code"] == MEMBER_ID_REQUIRED
    assert first["member_id"].startswith("app-1-")  # Kafka's shape: the client id, a uuid
    group = agent.coord.load("g")
    assert (group.members, group.generation) == ({}, 0)
    joined = agent.call(ApiKey.JOIN_GROUP, 4, {**body, "member_id": first["member_id"]})
    assert (joined["error_code"], joined["member_id"]) == (NONE, first["member_id"])
    assert agent.coord.load("g").pending == {}
    invented = agent.call(ApiKey.JOIN_GROUP, 4, {**body, "member_id": "app-1-invented"})
    assert invented["error_code"] == UNKNOWN_MEMBER
    late = agent.call(ApiKey.JOIN_GROUP, 7, body)["member_id"]
    agent.clock.now += 6001  # its session timeout passed before it came back
    assert agent.call(ApiKey.JOIN_GROUP, 7, {**body, "member_id": late})["error_code"] == (
        UNKNOWN_MEMBER
    )
    agent.coord.describe("g")  # the next operation on the group drops the id, as a session
    assert agent.coord.load("g").pending == {}
    # Before v4, and for static members, a join needs no second round.
    assert agent.call(ApiKey.JOIN_GROUP, 3, body)["error_code"] == NONE


def test_a_join_waits_at_the_barrier_until_the_other_member_has_rejoined():
    agent = Agent()
    a, _ = agent.member()
    rejoined = []

    def a_meanwhile():  # a's heartbeat says rebalance; a gives its partitions up and rejoins
        if not rejoined:
            assert agent.beat(a, 1) == REBALANCING
            rejoined.append(agent.join(a))

    agent.meanwhile = a_meanwhile
    b = agent.join()
    assert (b["error_code"], b["generation_id"]) == (NONE, 2)
    assert (rejoined[0]["member_id"], rejoined[0]["generation_id"]) == (a, 2)
    got = {m: agent.sync(m, 2)["partitions"] for m in (a, b["member_id"])}
    assert got == {a: tps(0, 1), b["member_id"]: tps(2, 3)}


def test_a_join_waiting_when_a_consumer_member_upgrades_the_group_is_told_to_rejoin():
    """As Kafka completes waiting joins at the upgrade: the member joins again, this time as a
    classic member of the consumer group."""
    agent = Agent()
    a, _ = agent.member()
    upgraded = []

    def upgrade():
        assert agent.beat(a, 1) == REBALANCING  # a lives on, told to rejoin (and does not)
        if not upgraded:
            beat = Heartbeat("kip848", 0, rebalance_timeout_ms=10_000, topics=("t",), owned=OWNS)
            upgraded.append(agent.consumer.heartbeat("g", beat))

    agent.meanwhile = upgrade
    first = agent.call(ApiKey.JOIN_GROUP, 7, join_body())
    assert first["error_code"] == MEMBER_ID_REQUIRED
    b = first["member_id"]
    body = join_body(b)
    waiting = agent.call(ApiKey.JOIN_GROUP, 7, body)  # b waits for a at the barrier ...
    assert waiting["error_code"] == REBALANCING  # ... and the group is upgraded meanwhile
    again = agent.call(ApiKey.JOIN_GROUP, 7, body)  # a classic member of a consumer group now
    assert again["error_code"] == NONE, again
    group = agent.consumer.describe("g")
    assert {m.member_id for m in group.members.values() if m.is_classic} == {a, b}
    assert agent.beat(a, 1) == REBALANCING  # a, too, is told to catch up


def test_a_member_that_never_rejoins_is_removed_and_the_waiting_join_completes():
    agent = Agent()
    gone, _ = agent.member()  # never heartbeats again, never rejoins
    fresh = agent.join()  # waits out the rebalance timeout (10 s), its own session being 6 s
    assert fresh["error_code"] == NONE
    assert agent.sync(fresh["member_id"], fresh["generation_id"])["partitions"] == tps(0, 1, 2, 3)
    assert agent.beat(gone, 1) == UNKNOWN_MEMBER


def test_a_join_outlasting_its_rebalance_timeout_by_the_barriers_poll_still_completes():
    """The state machine asks the barrier once a second: the laggard is removed just after the
    rebalance timeout, and the join waiting on it is answered then, as Kafka answers it at the
    timeout, never REBALANCE_IN_PROGRESS."""
    agent = Agent()
    gone, _ = agent.member()
    start = agent.clock.now
    run = agent.rebalancer.run

    def polled():  # the barrier asked at the start, then first 0.9 s past the deadline
        elapsed = agent.clock.now - start
        return run() if elapsed < 1_000 or elapsed >= 10_900 else []

    agent.rebalancer.run = polled
    fresh = agent.join()
    assert fresh["error_code"] == NONE, fresh
    assert agent.clock.now - start >= 10_900
    assert agent.sync(fresh["member_id"], fresh["generation_id"])["partitions"] == tps(0, 1, 2, 3)
    assert agent.beat(gone, 1) == UNKNOWN_MEMBER


def test_sync_and_heartbeat_for_a_generation_not_the_groups():
    agent = Agent()
    a, generation = agent.member()
    assert agent.sync(a, generation + 1)["error_code"] == ILLEGAL_GENERATION
    assert agent.sync("stranger", generation)["error_code"] == UNKNOWN_MEMBER
    assert agent.beat("stranger", generation) == UNKNOWN_MEMBER
    # The group moved on, keeping a (it rejoins under the same id, not as a new member).
    b = agent.coord.join("g", SUBSCRIPTION)
    agent.coord.rejoin("g", a, SUBSCRIPTION)
    agent.rebalancer.run()
    assert agent.sync(a, generation)["error_code"] == REBALANCING
    assert agent.beat(a, generation) == REBALANCING
    assert agent.sync(b.member_id, generation + 1)["error_code"] == NONE


def test_a_sync_group_finds_a_written_assignment_without_reading_the_group_whole(monkeypatch):
    """Its own items, the meta item and the assignment, by key: 100 members' SyncGroups each
    waited for two reads of a 100-member group."""
    agent = Agent()
    joined = agent.join()  # answered once the state machine has written the assignment
    real = agent.meta.query
    whole: list[str] = []

    def query(pk, *args, **kwargs):
        whole.extend([pk] if pk == "group#g" else [])
        return real(pk, *args, **kwargs)

    monkeypatch.setattr(agent.meta, "query", query)
    answer = agent.sync(joined["member_id"], joined["generation_id"])
    assert answer["partitions"] == tps(0, 1, 2, 3)
    assert whole == []


def test_a_torn_view_is_left_to_a_read_of_the_whole_group(monkeypatch):
    """Items read by key are each as they were when read: here the meta item after the next
    generation began, the assignment before it was written. The view says the member is
    behind; the group, read whole, has its assignment."""
    agent = Agent()
    joined = agent.join()
    real = agent.meta.get_many

    def torn(keys):
        found = dict(real(keys))
        for key, item in list(found.items()):
            if key[1] == "assignment":
                del found[key]
            elif key[1] == "meta":
                found[key] = {**item, "generation": item["generation"] + 1}
        return found

    monkeypatch.setattr(agent.meta, "get_many", torn)
    answer = agent.sync(joined["member_id"], joined["generation_id"])
    assert answer["error_code"] == NONE
    assert answer["partitions"] == tps(0, 1, 2, 3)


def test_a_cooperative_member_learns_what_it_gives_up_though_the_hand_over_has_begun():
    """Generation 2 takes partitions from a and gives them to nobody; the follow-up generation
    that hands them to b starts at once. a's SyncGroup for 2 must still answer what a keeps:
    were it told to rejoin instead, a would join 3 still owning everything, and generation 3
    would give b partitions a never gave up."""
    agent = Agent()
    first = agent.join(protocols=("cooperative-sticky",))
    a = first["member_id"]
    assert agent.sync(a, 1)["partitions"] == tps(0, 1, 2, 3)
    cooperative = replace(SUBSCRIPTION, assignors=("cooperative-sticky",))
    b = agent.coord.join("g", cooperative).member_id  # generation 2
    assert agent.join(a, protocols=("cooperative-sticky",))["generation_id"] == 2
    assert agent.coord.load("g").generation == 3  # the hand-over has begun
    kept = agent.sync(a, 2)
    assert (kept["error_code"], kept["partitions"]) == (NONE, tps(0, 1))
    assert agent.beat(a, 2) == REBALANCING  # then a rejoins without 2 and 3, and so does b
    agent.meanwhile = lambda: agent.coord.rejoin("g", b, cooperative)
    assert agent.join(a, protocols=("cooperative-sticky",))["generation_id"] == 3
    assert agent.sync(a, 3)["partitions"] == tps(0, 1)
    assert agent.sync(b, 3)["partitions"] == tps(2, 3)


def test_a_heartbeat_while_the_assignment_is_computed_carries_on():
    agent = Agent()
    agent.coord.join("g", SUBSCRIPTION)
    joined = agent.coord.join("g", SUBSCRIPTION)  # generation 1 gathering: both joined it
    # The state machine's first step: every member has joined, the assignor is running.
    agent.coord._mutate(
        "g", lambda group: (replace(group, state=State.COMPLETING_REBALANCE), [], None)
    )
    assert agent.beat(joined.member_id, 1) == NONE  # Kafka's CompletingRebalance
    assert agent.beat(joined.member_id, 0) == REBALANCING


# -- what a join may ask for -------------------------------------------------------------


def test_a_group_tidelog_cannot_assign_is_assigned_by_its_leader_as_in_kafka():
    """Kafka Connect's workers, Kafka Streams, a client's own assignor: the state machine
    elects a leader; JoinGroup hands it every member's metadata, its SyncGroup brings each
    member's assignment, which the others receive byte for byte."""
    agent = Agent()
    first = agent.join(protocols=("my-own-assignor", "range"))
    assert first["error_code"] == NONE
    # One member, preferring its own assignor: Kafka's selectProtocol picks that one.
    assert (first["protocol_name"], first["leader"]) == ("my-own-assignor", first["member_id"])
    assert [m["member_id"] for m in first["members"]] == [first["member_id"]]
    assert read_subscription(first["members"][0]["metadata"]) == ("t",)
    sent = write_assignment(tps(0, 1, 2, 3)) + b"\x00\x00\x00\x02my"  # with user data
    body = {"group_id": "g", "generation_id": 1, "member_id": first["member_id"]}
    assignments = [{"member_id": first["member_id"], "assignment": sent}]
    led = agent.call(ApiKey.SYNC_GROUP, 5, {**body, "assignments": assignments})
    assert (led["error_code"], led["assignment"], led["protocol_name"]) == (
        NONE,
        sent,
        "my-own-assignor",
    )
    described = agent.call(
        ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["g"], "include_authorized_operations": False}
    )["groups"][0]
    assert described["protocol_data"] == "my-own-assignor"
    assert described["members"][0]["member_assignment"] == sent
    wrong = {**body, "protocol_type": "consumer", "protocol_name": "range", "assignments": []}
    assert agent.call(ApiKey.SYNC_GROUP, 5, wrong)["error_code"] == INCONSISTENT_PROTOCOL
    # A worker of Kafka Connect is a member of another kind of group: refused here.
    assert agent.join(protocol_type="connect")["error_code"] == INCONSISTENT_PROTOCOL
    assert agent.join(protocols=())["error_code"] == INCONSISTENT_PROTOCOL


def test_a_connect_group_hands_its_leader_the_workers_metadata():
    agent = Agent()
    body = {
        **join_body(protocol_type="connect"),
        "protocols": [{"name": "sessioned", "metadata": b"worker-1"}],
    }
    reserved = agent.call(ApiKey.JOIN_GROUP, 7, body)
    joined = agent.call(ApiKey.JOIN_GROUP, 7, {**body, "member_id": reserved["member_id"]})
    assert (joined["protocol_type"], joined["leader"]) == ("connect", reserved["member_id"])
    assert [m["metadata"] for m in joined["members"]] == [b"worker-1"]
    listed = agent.call(ApiKey.LIST_GROUPS, 4, {"states_filter": []})["groups"]
    assert [(g["group_id"], g["protocol_type"]) for g in listed] == [("g", "connect")]


def test_a_static_member_restarting_keeps_its_partitions_and_fences_its_old_self():
    agent = Agent()
    first = agent.join(group_instance_id="host-1")
    old = first["member_id"]
    assert agent.sync(old, first["generation_id"])["partitions"] == tps(0, 1, 2, 3)
    again = agent.join(group_instance_id="host-1")  # restarted: no member id yet
    assert again["member_id"] != old
    assert again["generation_id"] == first["generation_id"]  # no rebalance
    assert agent.sync(again["member_id"], again["generation_id"])["partitions"] == tps(0, 1, 2, 3)
    assert agent.beat(old, first["generation_id"]) == FENCED
    assert agent.sync(old, first["generation_id"])["error_code"] == FENCED
    assert agent.join(again["member_id"], group_instance_id="host-2")["error_code"] == FENCED


def test_leaving_by_member_id_and_by_instance_id():
    agent = Agent()
    a, _ = agent.member()
    left = agent.call(ApiKey.LEAVE_GROUP, 2, {"group_id": "g", "member_id": a})
    assert left["error_code"] == NONE
    assert agent.call(ApiKey.LEAVE_GROUP, 0, {"group_id": "g", "member_id": a})["error_code"] == (
        UNKNOWN_MEMBER
    )
    static = agent.join(group_instance_id="host-1")
    members = [
        {"member_id": "", "group_instance_id": "host-1"},
        {"member_id": "stranger", "group_instance_id": None},
    ]
    answer = agent.call(ApiKey.LEAVE_GROUP, 4, {"group_id": "g", "members": members})
    assert [m["error_code"] for m in answer["members"]] == [NONE, UNKNOWN_MEMBER]
    assert static["member_id"] not in agent.coord.load("g").members


# -- offsets -----------------------------------------------------------------------------


def test_commits_are_fenced_for_the_whole_request_then_judged_per_partition():
    agent = Agent()
    a, generation = agent.member()
    assert agent.commit(a, generation, {"t": {0: 5, 1: 0}, "nope": {0: 1}}) == {
        ("t", 0): NONE,
        ("t", 1): NONE,
        ("nope", 0): UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert agent.commit(a, generation - 1, {"t": {0: 9, 2: 9}}, version=2) == {
        ("t", 0): ILLEGAL_GENERATION,
        ("t", 2): ILLEGAL_GENERATION,
    }
    assert agent.commit("stranger", generation, {"t": {0: 9}}) == {("t", 0): UNKNOWN_MEMBER}
    assert agent.coord.committed("g")[("t", 0)].offset == 5  # the refused changed nothing


def test_an_empty_group_takes_commits_from_simple_consumers():
    agent = Agent()
    assert agent.commit("", -1, {"t": {3: 42}}, version=2) == {("t", 3): NONE}
    assert agent.coord.committed("g")[("t", 3)].offset == 42


def test_fetching_committed_offsets_one_group_or_many():
    agent = Agent()
    agent.commit("", -1, {"t": {0: 5, 2: 7}})
    named = {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]}
    answer = agent.call(ApiKey.OFFSET_FETCH, 1, named)
    assert [
        (p["partition_index"], p["committed_offset"], p["metadata"])
        for p in answer["topics"][0]["partitions"]
    ] == [
        (0, 5, "m"),
        (1, -1, ""),  # nothing committed
    ]
    every = agent.call(ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "topics": None})
    assert [p["partition_index"] for p in every["topics"][0]["partitions"]] == [0, 2]
    groups = [{"group_id": "g", "topics": None}, {"group_id": "other", "topics": None}]
    many = agent.call(ApiKey.OFFSET_FETCH, 8, {"groups": groups})
    assert [(g["group_id"], len(g["topics"]), g["error_code"]) for g in many["groups"]] == [
        ("g", 1, NONE),
        ("other", 0, NONE),
    ]
    invalid = agent.call(ApiKey.OFFSET_FETCH, 7, {"group_id": "", "topics": None})
    assert invalid["error_code"] == 24  # INVALID_GROUP_ID


# -- describing, listing, finding --------------------------------------------------------


def test_groups_are_described_and_listed_as_kafkas_admin_tools_read_them():
    agent = Agent()
    a, _ = agent.member()
    described = agent.call(
        ApiKey.DESCRIBE_GROUPS,
        5,
        {"groups": ["g", "nobody"], "include_authorized_operations": False},
    )["groups"]
    group, nobody = described
    assert (group["group_state"], group["protocol_type"], group["protocol_data"]) == (
        "Stable",
        "consumer",
        "range",
    )
    (member,) = group["members"]
    assert (member["member_id"], member["client_id"], member["client_host"]) == (
        a,
        "app-1",
        "/10.0.0.9",
    )
    assert read_subscription(member["member_metadata"]) == ("t",)
    assert read_assignment(member["member_assignment"]) == tps(0, 1, 2, 3)
    assert (nobody["error_code"], nobody["group_state"], nobody["members"]) == (NONE, "Dead", [])
    listed = agent.call(ApiKey.LIST_GROUPS, 4, {"states_filter": []})["groups"]
    assert [(g["group_id"], g["protocol_type"], g["group_state"]) for g in listed] == [
        ("g", "consumer", "Stable")
    ]
    assert agent.call(ApiKey.LIST_GROUPS, 4, {"states_filter": ["Empty"]})["groups"] == []


def test_groups_are_deleted_once_empty_with_their_offsets():
    agent = Agent()
    a, generation = agent.member()
    agent.commit(a, generation, {"t": {0: 5}})
    deleted = agent.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g", "nobody"]})["results"]
    assert [(r["group_id"], r["error_code"]) for r in deleted] == [
        ("g", NON_EMPTY_GROUP),
        ("nobody", GROUP_ID_NOT_FOUND),
    ]
    agent.call(ApiKey.LEAVE_GROUP, 2, {"group_id": "g", "member_id": a})
    deleted = agent.call(ApiKey.DELETE_GROUPS, 0, {"groups_names": ["g"]})["results"]
    assert [(r["group_id"], r["error_code"]) for r in deleted] == [("g", NONE)]
    assert agent.coord.committed("g") == {}


def test_every_group_and_transactional_id_is_coordinated_here():
    agent = Agent()
    v0 = agent.call(ApiKey.FIND_COORDINATOR, 0, {"key": "g"})
    assert (v0["error_code"], v0["node_id"], v0["host"], v0["port"]) == (
        NONE,
        7,
        "agent.local",
        9092,
    )
    v4 = agent.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["a", "b"]})
    assert [(c["key"], c["node_id"]) for c in v4["coordinators"]] == [("a", 7), ("b", 7)]
    txn = agent.call(ApiKey.FIND_COORDINATOR, 3, {"key": "tx", "key_type": 1})
    assert (txn["error_code"], txn["node_id"]) == (NONE, 7)


def test_a_join_of_version_0_waits_as_long_as_its_session():
    agent = Agent()
    joined = agent.call(ApiKey.JOIN_GROUP, 0, join_body(session_timeout=7000))
    assert joined["error_code"] == NONE
    member = agent.coord.load("g").members[joined["member_id"]]
    assert (member.session_timeout_ms, member.rebalance_timeout_ms) == (7000, 7000)


def test_describe_groups_v6_answers_group_id_not_found_for_a_group_never_seen():
    agent = Agent()
    agent.member()
    request = {"groups": ["g", "nobody"], "include_authorized_operations": False}
    group, nobody = agent.call(ApiKey.DESCRIBE_GROUPS, 6, request)["groups"]
    assert (group["error_code"], group["group_state"]) == (NONE, "Stable")
    assert (nobody["error_code"], nobody["group_state"]) == (GROUP_ID_NOT_FOUND, "Dead")
    assert nobody["error_message"] == "Group nobody not found."


def test_list_groups_v5_names_each_groups_type_and_filters_by_it():
    agent = Agent()
    agent.member()
    listed = agent.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    assert [(g["group_id"], g["group_type"]) for g in listed["groups"]] == [("g", "classic")]
    classic = agent.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["Classic"]})
    assert [g["group_id"] for g in classic["groups"]] == ["g"]
    other = agent.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer"]})
    assert other["groups"] == []


def test_join_and_leave_with_a_reason_kip_800():
    agent = Agent()
    body = join_body(reason="rebalance needed")
    first = agent.call(ApiKey.JOIN_GROUP, 9, body)
    assert first["error_code"] == MEMBER_ID_REQUIRED
    joined = agent.call(ApiKey.JOIN_GROUP, 9, {**body, "member_id": first["member_id"]})
    assert (joined["error_code"], joined["skip_assignment"]) == (NONE, False)
    member = {"member_id": joined["member_id"], "group_instance_id": None, "reason": "bye"}
    left = agent.call(ApiKey.LEAVE_GROUP, 5, {"group_id": "g", "members": [member]})
    assert [m["error_code"] for m in left["members"]] == [NONE]
    assert agent.coord.load("g").members == {}


def test_a_leave_group_whose_members_array_is_null_leaves_no_one():
    """kio reads a non-nullable array sent as -1 as null (the protocol fuzzer sent one): v3+
    LeaveGroup answers for no member, where it once took the request for a v0 one."""
    agent = Agent()
    agent.member()
    left = agent.call(ApiKey.LEAVE_GROUP, 3, {"group_id": "g", "members": None})
    assert (left["error_code"], left["members"]) == (NONE, [])
    assert len(agent.coord.load("g").members) == 1
