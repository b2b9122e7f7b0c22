"""KIP-848's consumer groups over the in-memory table (tidelog.groups.consumer.coordinator and
the Kafka handlers): epochs and fencing, the state machine's target, static members, sessions
and rebalance timeouts, offsets fenced by member epoch, and the name space a consumer group
shares with classic groups."""

from __future__ import annotations

import uuid

import pytest
from kio.index import load_request_schema
from tests.support.groups import Recorder, consumer_stack

from tidelog.errors import TidelogError
from tidelog.groups.consumer.coordinator import RESTART_MS, STALL_MS
from tidelog.groups.consumer.heartbeat import Config, Heartbeat
from tidelog.groups.consumer.model import GroupState, MemberState
from tidelog.groups.model import JoinRequest
from tidelog.groups.offsets import OffsetCommit
from tidelog.groups.stored import ConsumerProtocolGroupError
from tidelog.kafka.apis import API_VERSIONS, ApiKey
from tidelog.kafka.codec import Request, build, encode_response_as
from tidelog.kafka.consumer_groups import ConsumerGroupHandlers
from tidelog.kafka.offsets import OffsetHandlers
from tidelog.transactions.offsets import check_member

CONFIG = Config(session_timeout_ms=10_000, heartbeat_interval_ms=5_000)


@pytest.fixture
def stack():
    return consumer_stack(CONFIG)


def join(consumer, member_id, topics=("t",), **extra):
    beat = Heartbeat(member_id, 0, rebalance_timeout_ms=30_000, topics=topics, owned=frozenset())
    for key, value in extra.items():
        beat = Heartbeat(**{**beat.__dict__, key: value})
    return consumer.heartbeat("g", beat)


def beat(consumer, member_id, epoch, owned=frozenset()):
    return consumer.heartbeat("g", Heartbeat(member_id, epoch, owned=owned))


def test_a_member_joins_at_the_group_epoch_and_gets_its_target_from_the_state_machine(stack):
    consumer, _, recorder, _, _ = stack
    joined = join(consumer, "a")
    assert (joined.epoch, joined.assignment) == (1, frozenset())  # never 0: it is a member
    (started,) = recorder.started
    assert started[:2] == ("g", 1)
    assert started[2]["protocol"] == "consumer"
    assert consumer.describe("g").state == GroupState.ASSIGNING
    assert consumer.assign("g", 1)["stale"] is False
    assert consumer.assign("g", 1)["stale"] is True  # a repeated execution changes nothing
    settled = beat(consumer, "a", 1)
    assert len(settled.assignment) == 4
    assert settled.epoch == 1
    assert consumer.describe("g").state == GroupState.STABLE


def test_a_partition_moves_only_once_its_owner_has_given_it_up(stack):
    consumer, _, _, _, _ = stack
    join(consumer, "a")
    consumer.assign("g", 1)
    a = beat(consumer, "a", 1)
    b = join(consumer, "b")
    consumer.assign("g", b.epoch)
    assert beat(consumer, "b", b.epoch).assignment in (None, frozenset())  # a still holds
    told = beat(consumer, "a", 1, owned=a.assignment)
    group = consumer.describe("g")
    assert group.members["a"].state == MemberState.UNREVOKED_PARTITIONS
    assert len(told.assignment) == 2  # keeps two, at its epoch
    assert told.epoch == 1
    revoked = beat(consumer, "a", 1, owned=told.assignment)
    assert revoked.epoch == 2
    given = beat(consumer, "b", 2)
    assert given.assignment == consumer.describe("g").target.of("b")
    assert not given.assignment & told.assignment


def test_epochs_are_fenced_except_the_previous_one_when_its_answer_was_lost(stack):
    consumer, _, _, _, _ = stack
    join(consumer, "a")
    consumer.assign("g", 1)
    a = beat(consumer, "a", 1)
    with pytest.raises(TidelogError) as ahead:
        beat(consumer, "a", 7)
    assert ahead.value.kafka_error.name == "FENCED_MEMBER_EPOCH"
    b = join(consumer, "b")
    consumer.assign("g", b.epoch)
    told = beat(consumer, "a", 1, owned=a.assignment)  # told what it keeps: revoke the rest
    moved = beat(consumer, "a", 1, owned=told.assignment)
    assert moved.epoch == 2
    # Its answer lost, it sends epoch 1 again with what it kept: accepted.
    assert beat(consumer, "a", 1, owned=told.assignment).epoch == 2
    with pytest.raises(TidelogError) as behind:
        beat(consumer, "a", 1, owned=a.assignment)  # ... but not with more than it has
    assert behind.value.kafka_error.name == "FENCED_MEMBER_EPOCH"
    # A fenced member rejoins under its id at epoch 0 (KAFKA-19233).
    assert join(consumer, "a").member_id == "a"
    with pytest.raises(TidelogError) as unknown:
        beat(consumer, "nobody", 3)
    assert unknown.value.kafka_error.name == "UNKNOWN_MEMBER_ID"


def test_leaving_frees_partitions_and_a_static_member_is_waited_for(stack):
    consumer, _, _, _, _ = stack
    a = join(consumer, "a", instance_id="i-a")
    b = join(consumer, "b")
    consumer.assign("g", b.epoch)
    held = beat(consumer, "a", a.epoch).assignment
    assert held
    paused = consumer.heartbeat("g", Heartbeat("a", -2, instance_id="i-a"))
    assert paused.epoch == -2
    group = consumer.describe("g")
    assert group.epoch == b.epoch  # nobody rebalances for a static member's absence
    assert group.members["a"].assigned == held  # its partitions wait for it
    join(consumer, "c", instance_id="i-c")
    with pytest.raises(TidelogError) as unreleased:
        join(consumer, "c2", instance_id="i-c")  # i-c has not left
    assert unreleased.value.kafka_error.name == "UNRELEASED_INSTANCE_ID"
    back = join(consumer, "a-new", instance_id="i-a")  # the same instance, restarted
    assert back.assignment == held  # its partitions, at once
    assert "a" not in consumer.describe("g").members
    left = consumer.heartbeat("g", Heartbeat("b", -1))
    assert left.epoch == -1
    assert "b" not in consumer.describe("g").members


def test_a_heartbeat_sent_before_a_static_leave_and_landing_after_it_is_fenced(stack, monkeypatch):
    """A closing consumer's last heartbeat, read before its leave (-2) was written and written
    after it, must not bring the member back: the new instance of it could then never take its
    place (UNRELEASED_INSTANCE_ID until the session ran out). Kafka serializes the two; here the
    leave restarts the member's session, which the heartbeat's write is conditional on."""
    consumer, _, _, _, clock = stack
    a = join(consumer, "a", instance_id="i-a")
    consumer.assign("g", a.epoch)
    held = beat(consumer, "a", a.epoch).assignment
    clock.now += 1_000
    transact = consumer._meta.transact
    left = []

    def leave_lands_first(writes):
        if not left:
            left.append(None)  # the leave's own write goes straight through
            left[0] = consumer.heartbeat("g", Heartbeat("a", -2, instance_id="i-a"))
        return transact(writes)

    monkeypatch.setattr(consumer._meta, "transact", leave_lands_first)
    clock.now += 1
    with pytest.raises(TidelogError) as late:
        consumer.heartbeat("g", Heartbeat("a", a.epoch, instance_id="i-a", owned=held))
    monkeypatch.undo()
    assert [x.epoch for x in left] == [-2]
    assert late.value.kafka_error.name == "FENCED_MEMBER_EPOCH"
    assert consumer.describe("g").members["a"].epoch == -2
    back = join(consumer, "a-new", instance_id="i-a")  # the same instance, restarted
    assert back.assignment == held


def test_a_silent_member_and_one_that_never_revokes_are_removed(stack):
    consumer, _, _, _, clock = stack
    join(consumer, "a", rebalance_timeout_ms=5_000)
    consumer.assign("g", 1)
    a = beat(consumer, "a", 1)
    b = join(consumer, "b")
    consumer.assign("g", b.epoch)
    beat(consumer, "a", 1, owned=a.assignment)  # to revoke within its rebalance timeout
    clock.now += 6_000
    beat(consumer, "b", b.epoch)  # b's session holds; a's rebalance timeout ran out
    assert set(consumer.describe("g").members) == {"b"}
    clock.now += CONFIG.session_timeout_ms + 1
    assert consumer.describe("g").members == {}


def test_an_epoch_whose_target_never_comes_is_started_again_then_over(stack):
    consumer, _, recorder, _, clock = stack
    join(consumer, "a")
    for _ in range(STALL_MS // 5_000 + 1):  # a keeps its session; no target comes
        clock.now += 5_000
        latest = beat(consumer, "a", 1)
    started = [s[1] for s in recorder.started]
    # Epoch 1's execution is started again every RESTART_MS (a start that failed is retried;
    # one under way is refused by its name), then the epoch is given up for the next.
    assert started == [1] * (1 + (STALL_MS - RESTART_MS) // RESTART_MS + 1) + [2]
    assert consumer.assign("g", 2)["stale"] is False
    assert beat(consumer, "a", latest.epoch).epoch == 2


class FailingOnce(Recorder):
    """A rebalancer whose first start fails, as a throttled StartExecution does."""

    def start(self, group: str, generation: int, delay_ms: int, **execution) -> None:
        if not getattr(self, "failed", False):
            self.failed = True
            raise RuntimeError("ThrottlingException")
        super().start(group, generation, delay_ms, **execution)


def test_an_execution_that_could_not_start_is_started_at_a_later_heartbeat():
    consumer, _, recorder, _, clock = consumer_stack(CONFIG, FailingOnce())
    joined = join(consumer, "a")  # its start fails (logged): the epoch stands
    clock.now += 5_000
    beat(consumer, "a", joined.epoch)
    assert recorder.started == []  # not late yet
    clock.now += RESTART_MS
    beat(consumer, "a", joined.epoch)
    assert [s[1] for s in recorder.started] == [joined.epoch]
    beat(consumer, "a", joined.epoch)  # at most once per RESTART_MS from one process
    assert len(recorder.started) == 1


def test_commits_are_fenced_by_the_member_epoch(stack):
    consumer, classic, _, _, _ = stack
    join(consumer, "a")
    consumer.assign("g", 1)
    beat(consumer, "a", 1)
    (ok,) = classic.commit("g", "a", 1, [OffsetCommit("t", 0, 5)])
    assert ok.error is None
    for member_id, epoch, error in [("a", 0, "STALE_MEMBER_EPOCH"), ("x", 1, "UNKNOWN_MEMBER_ID")]:
        with pytest.raises(TidelogError) as fenced:
            classic.commit("g", member_id, epoch, [OffsetCommit("t", 0, 6)])
        assert fenced.value.kafka_error.name == error
    assert classic.committed("g")[("t", 0)].offset == 5
    group = classic.current("g")
    check_member(group, "a", 1)
    with pytest.raises(TidelogError) as stale:
        check_member(group, "a", 0)
    assert stale.value.kafka_error.name == "ILLEGAL_GENERATION"  # Kafka's, for transactions


def test_a_group_name_serves_one_protocol_at_a_time(stack):
    consumer, classic, _, _, _ = stack
    join(consumer, "a")
    with pytest.raises(ConsumerProtocolGroupError):
        classic.join("g", JoinRequest(topics=("t",), session_timeout_ms=6000))
    assert [type(g).__name__ for g in classic.groups()] == ["ConsumerGroup"]
    consumer.heartbeat("g", Heartbeat("a", -1))
    classic.commit("g", "", -1, [OffsetCommit("t", 1, 9)])  # an empty group takes commits
    joined = classic.join("g", JoinRequest(topics=("t",), session_timeout_ms=6000))
    assert classic.load("g").members.keys() == {joined.member_id}  # classic now
    assert classic.committed("g")[("t", 1)].offset == 9  # offsets stay the group's
    classic.leave("g", joined.member_id)
    assert join(consumer, "b").epoch >= 1  # empty again: a consumer group once more
    assert classic.committed("g")[("t", 1)].offset == 9


def _call(handlers, key, version, body):
    entity = build(load_request_schema(key, version), body)
    request = Request(key, version, 1, "app-1", entity, client_host="/10.0.0.9")
    answer = {
        ApiKey.CONSUMER_GROUP_HEARTBEAT: handlers.heartbeat,
        ApiKey.CONSUMER_GROUP_DESCRIBE: handlers.describe,
    }[key](request)
    low, high = API_VERSIONS[key]
    for fits in range(low, high + 1):
        encode_response_as(key, fits, 1, answer)
    return answer


class Waits:
    """The handlers' clock and sleep: each sleep moves the clock, and may run the state
    machine's task (``during``) as if it answered meanwhile."""

    def __init__(self, during=None) -> None:
        self.now, self.slept, self.during = 0.0, 0.0, during

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds
        if self.during is not None:
            self.during()


def _handlers(consumer, waits: Waits) -> ConsumerGroupHandlers:
    return ConsumerGroupHandlers(
        coordinator=lambda: consumer, monotonic=waits.monotonic, sleep=waits.sleep
    )


JOIN_BODY = {
    "group_id": "g",
    "member_id": "m-1",
    "member_epoch": 0,
    "rebalance_timeout": 30_000,
    "subscribed_topic_names": ["t"],
    "topic_partitions": [],
}


def test_a_joining_heartbeat_waits_for_its_target_and_is_answered_its_partitions(stack):
    """As Kafka's coordinator answers a first heartbeat with the assignment it computed: the
    state machine writes the target while the heartbeat waits, and the member is answered
    reconciled to it instead of an interval later."""
    consumer, _, recorder, _, _ = stack
    waits = Waits(during=lambda: [consumer.assign(g, e) for g, e, _ in recorder.started])
    joined = _call(_handlers(consumer, waits), ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, JOIN_BODY)
    assert (joined["error_code"], joined["member_epoch"]) == (0, 1)
    (assigned,) = joined["assignment"]["topic_partitions"]
    assert assigned["partitions"] == [0, 1, 2, 3]
    assert waits.slept == pytest.approx(0.05)  # one poll: the target was there at once
    assert consumer.describe("g").members["m-1"].assigned == consumer.describe("g").target.of("m-1")


def test_the_wait_ends_at_half_the_heartbeat_interval_and_the_member_is_answered_as_it_was(
    stack,
):
    consumer, _, _, _, _ = stack
    waits = Waits()  # the state machine never answers
    joined = _call(_handlers(consumer, waits), ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, JOIN_BODY)
    assert (joined["error_code"], joined["member_epoch"]) == (0, 1)
    assert joined["assignment"] == {"topic_partitions": []}
    assert waits.slept == pytest.approx(CONFIG.heartbeat_interval_ms / 2 / 1000, abs=0.06)


def test_only_a_heartbeat_that_moved_the_epoch_waits(stack):
    consumer, _, _, _, _ = stack
    waits = Waits()
    handlers = _handlers(consumer, waits)
    _call(handlers, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, JOIN_BODY)
    waited = waits.slept
    steady = {**JOIN_BODY, "member_epoch": 1, "subscribed_topic_names": None}
    again = _call(handlers, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {**steady, "rebalance_timeout": -1})
    assert again["error_code"] == 0
    assert waits.slept == waited  # its target is still to come, but it did not move the epoch


def test_the_kafka_apis_answer_by_topic_id_and_describe_members(stack):
    consumer, _, _, topics, _ = stack
    handlers = _handlers(consumer, Waits())
    topic_id = uuid.UUID(topics.get("t").topic_id)
    body = {
        "group_id": "g",
        "member_id": "m-1",
        "member_epoch": 0,
        "rebalance_timeout": 30_000,
        "subscribed_topic_names": ["t"],
        "server_assignor": "range",
        "topic_partitions": [],
    }
    joined = _call(handlers, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)
    assert (joined["error_code"], joined["member_id"], joined["member_epoch"]) == (0, "m-1", 1)
    consumer.assign("g", 1)
    steady = {**body, "member_epoch": 1, "subscribed_topic_names": None, "rebalance_timeout": -1}
    answer = _call(handlers, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, steady)
    (assigned,) = answer["assignment"]["topic_partitions"]
    assert (assigned["topic_id"], assigned["partitions"]) == (topic_id, [0, 1, 2, 3])
    v0 = _call(handlers, ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {**body, "member_id": ""})
    assert v0["error_code"] == 0
    assert v0["member_id"]  # v0: the coordinator names it
    bad = _call(handlers, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {**body, "server_assignor": "x"})
    assert bad["error_code"] == 112  # UNSUPPORTED_ASSIGNOR
    described = _call(
        handlers,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        1,
        {"group_ids": ["g", "nobody"], "include_authorized_operations": False},
    )["groups"]
    group, nobody = described
    assert (group["group_state"], group["assignor_name"]) == ("Assigning", "range")
    member = next(m for m in group["members"] if m["member_id"] == "m-1")
    assert member["client_host"] == "/10.0.0.9"
    assert member["member_type"] == 1
    (target,) = member["target_assignment"]["topic_partitions"]
    assert (target["topic_name"], target["partitions"]) == ("t", [0, 1, 2, 3])
    assert nobody["error_code"] == 69  # GROUP_ID_NOT_FOUND


def test_offset_fetch_v9_from_a_member_is_checked_against_its_epoch(stack):
    consumer, classic, _, _, _ = stack
    join(consumer, "a")
    consumer.assign("g", 1)
    beat(consumer, "a", 1)
    classic.commit("g", "a", 1, [OffsetCommit("t", 0, 5)])
    handlers = OffsetHandlers(coordinator=lambda: classic)

    def fetch(member_id, epoch):
        group = {"group_id": "g", "member_id": member_id, "member_epoch": epoch, "topics": None}
        body = build(
            load_request_schema(ApiKey.OFFSET_FETCH, 9),
            {"groups": [group], "require_stable": False},
        )
        (answer,) = handlers.offset_fetch(Request(ApiKey.OFFSET_FETCH, 9, 1, "c", body))["groups"]
        return answer

    ok = fetch("a", 1)
    assert (ok["error_code"], ok["topics"][0]["partitions"][0]["committed_offset"]) == (0, 5)
    assert fetch(None, -1)["error_code"] == 0  # an admin client's fetch
    assert fetch("a", 0)["error_code"] == 113  # STALE_MEMBER_EPOCH
    assert fetch("x", 1)["error_code"] == 25  # UNKNOWN_MEMBER_ID
