"""Classic members in consumer groups (tidelog.groups.consumer.classic over the coordinator),
and the online upgrade of a classic group that a consumer-protocol member joins: what Kafka 4
serves as mixed groups. Safety throughout: no partition is held by two members."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest
from kio.index import load_request_schema
from tests.support.groups import Recorder, coordinator

from tidelog.assignors import TopicPartition
from tidelog.errors import TidelogError
from tidelog.groups.consumer.classic import ClassicJoin
from tidelog.groups.consumer.coordinator import ConsumerCoordinator
from tidelog.groups.consumer.heartbeat import Config, Heartbeat
from tidelog.groups.consumer.model import ConsumerGroup, GroupState, MemberState
from tidelog.groups.model import JoinRequest
from tidelog.groups.offsets import OffsetCommit
from tidelog.kafka.apis import ApiKey
from tidelog.kafka.codec import Request, build
from tidelog.kafka.consumer_protocol import write_subscription
from tidelog.kafka.mixed_groups import ClassicMembers
from tidelog.storage import Put

CONFIG = Config(session_timeout_ms=10_000, heartbeat_interval_ms=5_000)


@pytest.fixture
def s():
    classic, queued, topics, clock, meta = coordinator()
    recorder = Recorder()
    consumer = ConsumerCoordinator(meta, topics, recorder, clock_ms=clock, config=CONFIG)
    topics.create("t", 4, {})
    return SimpleNamespace(
        consumer=consumer,
        classic=classic,
        queued=queued,
        recorder=recorder,
        clock=clock,
        topics=topics,
    )


def cjoin(s, member_id, owned=(), session_ms=6_000, instance_id=None):
    request = ClassicJoin(
        member_id=member_id,
        instance_id=instance_id,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=30_000,
        protocols=("range",),
        topics=("t",),
        owned=tuple(owned),
    )
    return s.consumer.classic_join("g", request)


def join(s, member_id):
    return s.consumer.heartbeat(
        "g", Heartbeat(member_id, 0, rebalance_timeout_ms=30_000, topics=("t",), owned=frozenset())
    )


def beat(s, member_id, epoch, owned):
    return s.consumer.heartbeat("g", Heartbeat(member_id, epoch, owned=frozenset(owned)))


def assign_latest(s) -> None:
    s.consumer.assign("g", s.consumer.describe("g").epoch)


def by_name(partitions) -> list[TopicPartition]:
    return sorted(TopicPartition("t", p) for _, p in partitions)


def never_twice(group: ConsumerGroup) -> None:
    held = Counter(tp for m in group.members.values() for tp in m.held)
    assert not [tp for tp, n in held.items() if n > 1], group


def test_a_classic_member_gets_what_a_consumer_member_gives_up(s):
    a = join(s, "a")
    assign_latest(s)
    a = beat(s, "a", a.epoch, ())
    assert len(a.assignment) == 4
    c = cjoin(s, "c")
    assert c.group.members["c"].is_classic
    assign_latest(s)  # half each
    c = cjoin(s, "c")  # what it waits for, "a" still holds
    assert c.group.members["c"].state == MemberState.UNRELEASED_PARTITIONS
    assert s.consumer.classic_sync("g", "c", None, c.epoch) == []
    assert s.consumer.classic_heartbeat("g", "c", None, c.epoch) is False  # nothing to do yet
    never_twice(s.consumer.describe("g"))
    told = beat(s, "a", a.epoch, a.assignment)  # "a" must give two up ...
    beat(s, "a", told.epoch, told.assignment)  # ... and has
    assert s.consumer.classic_heartbeat("g", "c", None, c.epoch) is True  # rejoin: it is free
    c = cjoin(s, "c")
    synced = s.consumer.classic_sync("g", "c", None, c.epoch)
    assert len(synced) == 2
    assert {tp.topic for tp in synced} == {"t"}  # by name, as a classic client reads them
    assert s.consumer.classic_heartbeat("g", "c", None, c.epoch) is False
    group = s.consumer.describe("g")
    never_twice(group)
    assert group.state == GroupState.STABLE


def test_a_classic_member_rejoins_and_revokes_before_its_partitions_move(s):
    c = cjoin(s, "c")
    assign_latest(s)
    c = cjoin(s, "c")
    assert len(s.consumer.classic_sync("g", "c", None, c.epoch)) == 4
    a = join(s, "a")
    assert s.consumer.classic_heartbeat("g", "c", None, c.epoch) is True  # the epoch moved
    with pytest.raises(TidelogError) as moved:
        s.consumer.classic_sync("g", "c", None, c.epoch)
    assert moved.value.kafka_error.name == "REBALANCE_IN_PROGRESS"
    assign_latest(s)
    waiting = beat(s, "a", a.epoch, ())
    assert waiting.group.members["a"].assigned == frozenset()  # "c" still holds them all
    # A cooperative client rejoins owning its four: it keeps two and must give two up.
    c = cjoin(s, "c", owned=[("t", p) for p in range(4)])
    assert c.group.members["c"].state == MemberState.UNREVOKED_PARTITIONS
    kept = s.consumer.classic_sync("g", "c", None, c.epoch)
    assert len(kept) == 2
    assert s.consumer.classic_heartbeat("g", "c", None, c.epoch) is True  # revoke, rejoin
    never_twice(s.consumer.describe("g"))
    c = cjoin(s, "c", owned=[(tp.topic, tp.partition) for tp in kept])
    assert c.group.members["c"].state == MemberState.STABLE
    got = beat(s, "a", a.epoch, ())
    assert len(got.group.members["a"].assigned) == 2
    group = s.consumer.describe("g")
    never_twice(group)
    assert group.state == GroupState.STABLE


def test_a_classic_member_lives_by_its_own_session_and_leaves_with_leave_group(s):
    join(s, "a")
    cjoin(s, "short", session_ms=3_000)
    cjoin(s, "long", session_ms=30_000)
    s.clock.now += 4_000  # past the short session, not the group's 10 s
    assert set(s.consumer.describe("g").members) == {"a", "long"}
    s.consumer.classic_leave("g", "long", None)
    assert set(s.consumer.describe("g").members) == {"a"}
    with pytest.raises(TidelogError) as gone:
        s.consumer.classic_heartbeat("g", "long", None, 1)
    assert gone.value.kafka_error.name == "UNKNOWN_MEMBER_ID"


def test_classic_requests_are_checked_as_kafka_checks_them(s):
    a = join(s, "a")
    c = cjoin(s, "c", instance_id="i-c")
    cases = [
        (lambda: s.consumer.classic_sync("g", "c", None, c.epoch + 1), "ILLEGAL_GENERATION"),
        (lambda: s.consumer.classic_sync("g", "nobody", None, 1), "UNKNOWN_MEMBER_ID"),
        # A consumer-protocol member is no classic one.
        (lambda: s.consumer.classic_heartbeat("g", "a", None, a.epoch), "UNKNOWN_MEMBER_ID"),
        (lambda: s.consumer.classic_heartbeat("g", "x", "i-c", c.epoch), "FENCED_INSTANCE_ID"),
        (lambda: s.consumer.classic_leave("g", "c", "i-other"), "UNKNOWN_MEMBER_ID"),
    ]
    for call, error in cases:
        with pytest.raises(TidelogError) as refused:
            call()
        assert refused.value.kafka_error.name == error
    # The same instance, restarted under a new id, replaces its old self.
    cjoin(s, "c-new", instance_id="i-c")
    assert set(s.consumer.describe("g").members) == {"a", "c-new"}


def test_a_consumer_member_upgrades_a_classic_group_whose_members_keep_their_partitions(s):
    first = s.classic.join("g", JoinRequest(topics=("t",), session_timeout_ms=6_000))
    second = s.classic.join("g", JoinRequest(topics=("t",), session_timeout_ms=6_000))
    while s.queued.started:
        s.queued.run()
    stable = s.classic.load("g")
    generation = stable.generation
    owned = {m: stable.assignment.of(m) for m in (first.member_id, second.member_id)}
    s.classic.commit("g", first.member_id, generation, [OffsetCommit("t", 0, 5)])
    a = join(s, "a")  # the upgrade
    group = s.consumer.describe("g")
    assert isinstance(group, ConsumerGroup)
    for member_id, partitions in owned.items():
        member = group.members[member_id]
        assert (member.is_classic, member.epoch) == (True, generation)
        assert by_name(member.assigned) == sorted(partitions)
    assert a.epoch == generation + 1
    # The classic members carry on at their generation, and are told to rejoin.
    assert s.consumer.classic_heartbeat("g", first.member_id, None, generation) is True
    s.classic.commit("g", first.member_id, generation, [OffsetCommit("t", 0, 6)])
    with pytest.raises(TidelogError) as stale:
        s.classic.commit("g", first.member_id, generation - 1, [OffsetCommit("t", 0, 7)])
    assert stale.value.kafka_error.name == "ILLEGAL_GENERATION"  # a classic member's error
    assert s.classic.committed("g")[("t", 0)].offset == 6
    assign_latest(s)
    for member_id in owned:  # eager clients rejoin having given everything up
        cjoin(s, member_id)
    got = beat(s, "a", a.epoch, ())
    assert got.group.members["a"].assigned
    group = s.consumer.describe("g")
    never_twice(group)
    assert sum(len(m.assigned) for m in group.members.values()) == 4
    # A classic execution still under way changes nothing now.
    assert s.classic.assign("g", generation)["stale"] is True
    assert isinstance(s.consumer.describe("g"), ConsumerGroup)


def request(key: ApiKey, version: int, body: dict) -> Request:
    return Request(key, version, 1, "app-1", build(load_request_schema(key, version), body))


def test_a_classic_join_waits_for_its_target_then_syncs_its_partitions(s):
    join(s, "a")
    assign_latest(s)
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the state machine answers while the join waits
        slept.append(seconds)
        assign_latest(s)

    members = ClassicMembers(coordinator=lambda: s.consumer, sleep=sleep)
    body = {
        "group_id": "g",
        "session_timeout": 6_000,
        "rebalance_timeout": 30_000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": write_subscription(["t"])}],
        "reason": None,
    }
    join_request = request(ApiKey.JOIN_GROUP, 9, body)
    read = JoinRequest(topics=("t",), session_timeout_ms=6_000, rebalance_timeout_ms=30_000)
    first = members.join(join_request, read, (), "")
    assert first["error_code"] != 0  # MEMBER_ID_REQUIRED
    member_id = first["member_id"]
    answer = members.join(join_request, read, (), member_id)
    assert slept  # it waited for the target of the epoch it started
    assert answer["error_code"] == 0
    assert answer["generation_id"] == s.consumer.describe("g").epoch
    assert (answer["leader"], answer["protocol_name"]) == ("", "range")


def test_a_topic_that_grows_makes_a_classic_member_rejoin_for_its_new_partitions(s):
    c = cjoin(s, "c")
    assign_latest(s)
    c = cjoin(s, "c")
    assert s.consumer.classic_heartbeat("g", "c", None, c.epoch) is False
    s.topics.add_partitions("t", 6)
    s.clock.now += 2_000  # past the coordinator's one-second view of the topics
    assert s.consumer.classic_heartbeat("g", "c", None, c.epoch) is True  # the epoch moved
    assert s.recorder.started[-1][1] == c.epoch + 1  # and the state machine computes it
    assign_latest(s)
    c = cjoin(s, "c")
    assert len(s.consumer.classic_sync("g", "c", None, c.epoch)) == 6


def test_a_classic_group_too_big_to_convert_in_one_transaction_is_refused_and_kept(s):
    for _ in range(99):
        s.classic.join("g", JoinRequest(topics=("t",), session_timeout_ms=60_000))
    with pytest.raises(TidelogError) as refused:
        join(s, "a")
    assert refused.value.kafka_error.name == "GROUP_ID_NOT_FOUND"
    assert "Cannot upgrade" in refused.value.message
    assert len(s.classic.load("g").members) == 99  # still the classic group it was


def test_a_classic_join_landing_during_an_upgrade_leaves_the_group_readable(monkeypatch):
    """An upgrade replaces the classic group's items as it read them, on condition of the meta
    item's version; a new member's join writes only its own items and leaves that version as
    it is (a wave of joins would otherwise conflict). A join landing between the upgrade's read
    and its write leaves its member item behind: in the consumer group it is no member, and
    the client, told to join again, joins as a classic member of the consumer group."""
    classic, _, topics, clock, meta = coordinator()
    consumer = ConsumerCoordinator(meta, topics, Recorder(), clock_ms=clock, config=CONFIG)
    topics.create("t", 4, {})
    s = SimpleNamespace(consumer=consumer)
    wanted = JoinRequest(topics=("t",), assignors=("range",), session_timeout_ms=6_000)
    classic.rejoin("g", classic.reserve_member_id("g", wanted), wanted)  # a generation gathers
    late = classic.reserve_member_id("g", wanted)
    landed = []
    transact = meta.transact

    def racing(writes):
        upgrading = any(
            isinstance(w, Put) and w.item["sk"] == "meta" and w.item.get("type") == "consumer"
            for w in writes
        )
        if upgrading and not landed:
            landed.append(classic.rejoin("g", late, wanted))
        return transact(writes)

    monkeypatch.setattr(meta, "transact", racing)
    join(s, "a")  # the upgrade
    assert [j.member_id for j in landed] == [late]
    assert (meta.get("group#g", f"member#{late}") or {}).get("protocol") is None  # left behind
    group = consumer.describe("g")
    assert isinstance(group, ConsumerGroup)
    assert late not in group.members
    cjoin(s, late)
    assert consumer.describe("g").members[late].is_classic
