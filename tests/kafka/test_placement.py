"""Where clients are sent: the agent registry, zones, and rendezvous leaders and coordinators
(tidelog.kafka.placement, tidelog.kafka.registry), over the in-memory table."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_request_schema

from tidelog import runtime
from tidelog.kafka import registry as registry_module
from tidelog.kafka.apis import ApiKey
from tidelog.kafka.codec import Request, build, encode_response_as
from tidelog.kafka.handlers import Handlers
from tidelog.kafka.metadata import MetadataHandlers
from tidelog.kafka.node import Node
from tidelog.kafka.placement import (
    client_zone,
    group_key,
    owner,
    partition_key,
    visible,
)
from tidelog.kafka.registry import (
    AGENTS_PK,
    READ_EVERY_MS,
    SESSION_MS,
    VIEW_SK,
    Registry,
    Solo,
    View,
)
from tidelog.log.topics import TopicCache, Topics
from tidelog.storage import StorageUnavailableError
from tidelog.storage.faults import FaultPlan, FaultyMetadataStore
from tidelog.storage.memory import MemoryMetadataStore

# Zones ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client_id", "zone"),
    [
        ("orders,tidelog_az=use1-az1", "use1-az1"),
        ("tidelog_az=eu-west-1b", "eu-west-1b"),
        ("orders tidelog_az=use1-az2 v3", "use1-az2"),
        ("orders;tidelog_az=use1-az3", "use1-az3"),
        ("orders", None),
        ("", None),
        (None, None),
        ("mytidelog_az=use1-az1", None),  # not the tag, only a name that ends like it
        ("orders,tidelog_az=", None),
    ],
)
def test_a_client_names_its_zone_in_its_client_id(client_id, zone):
    assert client_zone(client_id) == zone


AGENTS = (
    Node(30, "c", 9092, "az2"),
    Node(10, "a", 9092, "az1"),
    Node(20, "b", 9092, "az1"),
    Node(40, "d", 9092, None),
)


def test_a_client_is_shown_the_agents_of_its_zone_else_all():
    assert [n.node_id for n in visible(AGENTS, "az1")] == [10, 20]
    assert [n.node_id for n in visible(AGENTS, "az2")] == [30]
    assert [n.node_id for n in visible(AGENTS, "az9")] == [10, 20, 30, 40]
    assert [n.node_id for n in visible(AGENTS, None)] == [10, 20, 30, 40]


# Rendezvous -----------------------------------------------------------------------------

node_sets = st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=12, unique=True).map(
    lambda ids: [Node(i, f"h{i}", 9092) for i in ids]
)
keys = st.lists(st.text(max_size=20), min_size=1, max_size=50)


@given(node_sets, keys, st.randoms())
def test_an_owner_depends_on_the_agents_not_their_order(nodes, names, rng):
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    assert [owner(nodes, k) for k in names] == [owner(shuffled, k) for k in names]


@given(node_sets.filter(lambda nodes: len(nodes) > 1), keys, st.data())
def test_an_agent_leaving_moves_only_what_it_owned(nodes, names, data):
    gone = data.draw(st.sampled_from(nodes))
    rest = [n for n in nodes if n != gone]
    for key in names:
        before, after = owner(nodes, key), owner(rest, key)
        assert before in (after, gone)


@given(node_sets, keys)
def test_an_agent_joining_takes_only_what_it_comes_to_own(nodes, names):
    new = Node(max(n.node_id for n in nodes) + 1, "new", 9092)
    for key in names:
        before, after = owner(nodes, key), owner([*nodes, new], key)
        assert after in (before, new)


def test_partitions_spread_evenly_over_agents():
    nodes = [Node(i, f"h{i}", 9092) for i in (3, 17, 101, 2**31 - 1, 5, 64)]
    counts = Counter(
        owner(nodes, partition_key(f"topic-{t}", p)).node_id
        for t, p in itertools.product(range(100), range(60))
    )
    assert set(counts) == {n.node_id for n in nodes}
    assert all(800 <= c <= 1200 for c in counts.values()), counts  # 1,000 each, evenly


def test_one_topic_spreads_its_partitions_and_groups_spread_too():
    nodes = [Node(i, f"h{i}", 9092) for i in range(1, 4)]
    leaders = {owner(nodes, partition_key("5f2b1c1e", p)).node_id for p in range(12)}
    coordinators = {owner(nodes, group_key(f"g{i}")).node_id for i in range(12)}
    assert leaders == coordinators == {1, 2, 3}


def test_rendezvous_over_no_agent_is_refused():
    with pytest.raises(ValueError, match="no agents"):
        owner([], "k")


# The registry ---------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def agent_items(store) -> list[str]:
    return [item["sk"] for item in store.query(AGENTS_PK) if item["sk"] != VIEW_SK]


def registry(store, clock, ids, host="a", zone=None) -> Registry:
    ids = iter(ids)
    return Registry(store, host=host, zone=zone, clock_ms=clock, random_id=lambda: next(ids))


def test_agents_see_each_other_and_one_that_stops_is_gone():
    store, clock = MemoryMetadataStore(), Clock()
    a, b = registry(store, clock, [11], "a", "az1"), registry(store, clock, [22], "b", "az2")
    a._port, b._port = 9092, 9093
    a.register(), b.register()
    assert a.live() == (Node(11, "a", 9092, "az1"), Node(22, "b", 9093, "az2"))
    assert b.live() == (Node(22, "b", 9093, "az2"), Node(11, "a", 9092, "az1"))
    b.deregister()
    clock.now += READ_EVERY_MS
    assert a.live() == (Node(11, "a", 9092, "az1"),)
    assert agent_items(store) == ["0000000011"]


def test_an_agent_that_stops_heartbeating_expires_and_one_that_beats_does_not():
    store, clock = MemoryMetadataStore(), Clock()
    a, b, c = (registry(store, clock, [i]) for i in (1, 2, 3))
    for r in (a, b, c):
        r.register()
    clock.now += SESSION_MS - 1
    a.heartbeat()
    assert {n.node_id for n in a.live()} == {1, 2, 3}
    clock.now += 1  # b and c are a session past their last heartbeat
    assert {n.node_id for n in a.live()} == {1, 2, 3}, "read at most every READ_EVERY_MS"
    clock.now += READ_EVERY_MS
    assert {n.node_id for n in a.live()} == {1}
    assert {n.node_id for n in b.live()} == {1, 2}, "an agent always lists itself"


def test_a_live_agents_id_is_never_claimed_and_an_expired_ones_is():
    store, clock = MemoryMetadataStore(), Clock()
    first = registry(store, clock, [5])
    first.register()
    second = registry(store, clock, [5, 5, 6])
    assert second.register().node_id == 6
    clock.now += SESSION_MS + 1
    second.heartbeat()  # late, but nobody took its id: it keeps it
    assert second.me.node_id == 6
    third = registry(store, clock, [5])
    assert third.register().node_id == 5  # first expired: its id is free
    # first comes back (a long pause): its heartbeat finds the id taken and claims another.
    first._random_id = lambda: 7
    first.heartbeat()
    assert first.me.node_id == 7
    clock.now += READ_EVERY_MS
    assert sorted(n.node_id for n in third.live()) == [5, 6, 7]
    first.deregister()  # removes its own item only, not the one that took its old id
    assert store.get(AGENTS_PK, "0000000005") is not None


def test_an_agent_with_no_free_id_says_so():
    store, clock = MemoryMetadataStore(), Clock()
    registry(store, clock, [1]).register()
    with pytest.raises(RuntimeError, match="no free node id"):
        registry(store, clock, itertools.repeat(1)).register()


@pytest.mark.parametrize("fault", ["before", "after"])
def test_a_claim_the_store_could_not_answer_is_tried_again_under_the_same_id(fault):
    # Found by the chaos runs: one refused registry write stopped an agent's start. A claim
    # that landed with its answer lost is this agent's, not an orphan under another id.
    store, clock = MemoryMetadataStore(), Clock()
    plan = FaultPlan(seed=5, **{fault: 1.0})
    r = Registry(
        FaultyMetadataStore(store, plan), host="a", zone=None, clock_ms=clock,
        random_id=iter([41, 42]).__next__, sleep=lambda _: setattr(plan, fault, 0.0),
    )  # fmt: skip
    assert r.register().node_id == 41
    assert agent_items(store) == ["0000000041"]


def test_a_store_down_for_good_stops_the_registration():
    store, clock = MemoryMetadataStore(), Clock()
    r = Registry(
        FaultyMetadataStore(store, FaultPlan(seed=5, before=1.0)), host="a", zone=None,
        clock_ms=clock, random_id=lambda: 41, sleep=lambda _: None,
    )  # fmt: skip
    with pytest.raises(StorageUnavailableError):
        r.register()


def test_heartbeats_go_on_through_store_failures_and_stop_removes_the_agent(monkeypatch):
    monkeypatch.setattr(registry_module, "HEARTBEAT_MS", 5)
    store, clock = MemoryMetadataStore(), Clock()
    plan = FaultPlan(seed=7)
    r = registry(FaultyMetadataStore(store, plan), clock, [9])
    r.start(9092)
    plan.before = plan.after = 0.4  # from now on, most heartbeats fail (before or after)
    deadline = time.monotonic() + 10
    while plan.injected < 50:
        assert time.monotonic() < deadline, "the heartbeat thread stopped beating"
        time.sleep(0.005)
    plan.before = plan.after = 0.0
    clock.now += 5 * SESSION_MS
    while int(store.get(AGENTS_PK, "0000000009")["expires_ms"]) <= clock.now:
        assert time.monotonic() < deadline, "no heartbeat after the failures ended"
        time.sleep(0.005)
    r.stop()
    assert agent_items(store) == []


def test_a_failed_registry_read_answers_from_the_last_one_and_stop_still_stops():
    store, clock = MemoryMetadataStore(), Clock()
    plan = FaultPlan(seed=3)
    a = registry(FaultyMetadataStore(store, plan), clock, [1])
    b = registry(store, clock, [2])
    a.register(), b.register()
    assert {n.node_id for n in a.live()} == {1, 2}
    plan.before = 1.0  # the table is unreachable from here on
    clock.now += READ_EVERY_MS
    assert {n.node_id for n in a.live()} == {1, 2}
    a.stop()  # its item stays, and expires
    assert store.get(AGENTS_PK, "0000000001") is not None


# What clients are shown -----------------------------------------------------------------


class Brokers:
    def __init__(self, me: Node, others: tuple[Node, ...], epoch: int = 3) -> None:
        self.me, self._others, self.epoch = me, others, epoch

    def live(self) -> tuple[Node, ...]:
        return (self.me, *self._others)

    def view(self) -> View:
        return View(self.epoch, self.live())


@pytest.fixture
def handlers(monkeypatch):
    store = MemoryMetadataStore()
    topics = Topics(store, lambda: 42)
    for name in ("clicks", "orders"):
        topics.create(name, 12, {})
    monkeypatch.setattr(runtime, "topics", lambda: topics)
    cache = TopicCache(topics, ttl_s=0, clock_s=time.monotonic)
    monkeypatch.setattr(runtime, "topic_cache", lambda: cache)
    monkeypatch.setattr(MetadataHandlers, "cluster_id", lambda self: "cluster-1")
    me, *others = AGENTS
    return Handlers(Brokers(me, tuple(others)))


NO_AUTHORIZED_OPERATIONS = {
    "allow_auto_topic_creation": False,
    "include_cluster_authorized_operations": False,
    "include_topic_authorized_operations": False,
}


def call(handlers: Handlers, key: ApiKey, version: int, body: dict, client_id: str) -> dict:
    entity = build(load_request_schema(key, version), body)
    answer = handlers.handle(Request(key, version, 1, client_id, entity))
    encode_response_as(key, version, 1, answer)
    return answer


def leaders_of(answer: dict) -> dict[tuple[str, int], int]:
    return {
        (t["name"], p["partition_index"]): p["leader_id"]
        for t in answer["topics"]
        for p in t["partitions"]
    }


def rendezvous_leaders(shown: Sequence[Node]) -> dict[tuple[str, int], int]:
    """Each partition's leader as the rendezvous hash over the agents a client is shown picks
    it (the topics' ids are random, so which agents lead is known only through the hash)."""
    leaders = {}
    for topic in runtime.topics().list():
        for partition in range(topic.partitions):
            key = partition_key(topic.topic_id, partition)
            leaders[topic.name, partition] = owner(shown, key).node_id
    return leaders


def test_metadata_shows_a_zoned_client_its_zones_agents_as_leaders(handlers):
    body = {"topics": None, **NO_AUTHORIZED_OPERATIONS}
    answer = call(handlers, ApiKey.METADATA, 11, body, "app,tidelog_az=az1")
    assert [b["node_id"] for b in answer["brokers"]] == [10, 20]
    assert answer["controller_id"] == 10
    assert leaders_of(answer) == rendezvous_leaders(visible(AGENTS, "az1"))
    for topic in answer["topics"]:
        for p in topic["partitions"]:
            assert p["replica_nodes"] == p["isr_nodes"] == [p["leader_id"]]


def test_metadata_shows_every_agent_to_a_client_with_no_zone_or_an_empty_one(handlers):
    for client_id in ("app", "app,tidelog_az=az7"):
        answer = call(handlers, ApiKey.METADATA, 1, {"topics": None}, client_id)
        assert [b["node_id"] for b in answer["brokers"]] == [10, 20, 30, 40]
        assert leaders_of(answer) == rendezvous_leaders(AGENTS)


def test_every_agent_names_the_same_leaders_and_coordinators(handlers):
    me, *others = AGENTS
    elsewhere = Handlers(Brokers(others[0], (me, *others[1:])))
    for version in (0, 9):
        body = {"topics": [{"name": "clicks"}], **NO_AUTHORIZED_OPERATIONS}
        here = call(handlers, ApiKey.METADATA, version, body, "app")
        there = call(elsewhere, ApiKey.METADATA, version, body, "app")
        assert here["topics"] == there["topics"]
    find = {"key_type": 0, "coordinator_keys": [f"g{i}" for i in range(8)]}
    here = call(handlers, ApiKey.FIND_COORDINATOR, 4, find, "app,tidelog_az=az1")
    there = call(elsewhere, ApiKey.FIND_COORDINATOR, 4, find, "app,tidelog_az=az1")
    assert here == there
    assert {c["node_id"] for c in here["coordinators"]} == {10, 20}
    assert {(c["host"], c["port"]) for c in here["coordinators"]} == {("a", 9092), ("b", 9092)}


def test_describe_cluster_lists_what_metadata_lists(handlers):
    answer = call(
        handlers,
        ApiKey.DESCRIBE_CLUSTER,
        0,
        {"include_cluster_authorized_operations": False},
        "app,tidelog_az=az2",
    )
    assert [(b["broker_id"], b["rack"]) for b in answer["brokers"]] == [(30, "az2")]
    assert answer["controller_id"] == 30


@pytest.mark.parametrize(
    ("version", "endpoint", "error"),
    [(1, 1, 0), (1, 2, 114), (1, 7, 115), (0, 1, 0)],  # NONE, MISMATCHED_, UNSUPPORTED_ENDPOINT
)
def test_describe_cluster_lists_brokers_and_no_controllers(handlers, version, endpoint, error):
    """A broker's endpoint lists brokers; asked for controllers it says so, as Kafka's does."""
    fields = {"include_cluster_authorized_operations": False}
    if version >= 1:
        fields["endpoint_type"] = endpoint
    answer = call(handlers, ApiKey.DESCRIBE_CLUSTER, version, fields, "app")
    assert answer["error_code"] == error
    assert bool(answer["brokers"]) == (error == 0)


def test_one_agent_alone_leads_everything():
    assert Solo(Node(1, "h", 1)).live() == (Node(1, "h", 1),)


# Leader epochs: one view, one epoch ---------------------------------------------------------


def test_the_epoch_rises_whenever_an_agent_comes_or_goes():
    store, clock = MemoryMetadataStore(), Clock()
    a = registry(store, clock, [1])
    a.register()
    first = a.view()
    assert [n.node_id for n in first.nodes] == [1]
    b = registry(store, clock, [2])
    b.register()
    clock.now += READ_EVERY_MS
    joined = a.view()
    assert [n.node_id for n in joined.nodes] == [1, 2]
    assert joined.epoch > first.epoch
    assert b.view().epoch == joined.epoch  # the other agent reads the same view
    b.deregister()
    clock.now += READ_EVERY_MS
    left = a.view()
    assert [n.node_id for n in left.nodes] == [1]
    assert left.epoch > joined.epoch


ACTIONS = st.lists(
    st.tuples(st.sampled_from(["start", "stop", "beat", "view", "tick"]), st.integers(0, 3)),
    max_size=60,
)


@given(ACTIONS)
def test_an_epoch_stands_for_one_set_of_agents_whichever_agent_shows_it(actions):
    """The rule clients rely on (librdkafka#5593): never the same epoch with other leaders.
    Agents start, stop, miss heartbeats and read views in any order; every view any of them
    shows maps its epoch to one member set, and no agent's epochs ever go back."""
    store, clock = MemoryMetadataStore(), Clock()
    agents = {i: registry(store, clock, itertools.repeat(i + 1)) for i in range(4)}
    started: set[int] = set()
    members_of: dict[int, frozenset[int]] = {}
    last: dict[int, int] = {}
    for action, i in actions:
        agent = agents[i]
        if action == "start" and i not in started:
            agent.register()
            started.add(i)
        elif action == "stop" and i in started:
            agent.deregister()
            started.discard(i)
            last.pop(i, None)  # a stopped agent starts again as a new one
        elif action == "beat" and i in started:
            agent.heartbeat()
        elif action == "tick":
            clock.now += READ_EVERY_MS * (i + 1) * 2
        elif action == "view" and i in started:
            view = agent.view()
            shown = frozenset(n.node_id for n in view.nodes)
            assert members_of.setdefault(view.epoch, shown) == shown, (view.epoch, shown)
            assert view.epoch >= last.get(i, view.epoch)
            last[i] = view.epoch


def test_agents_racing_to_write_the_next_view_agree_on_it():
    store, clock = MemoryMetadataStore(), Clock()
    a, b = registry(store, clock, [1]), registry(store, clock, [2])
    a.register()
    assert a.view().epoch == 1
    b.register()
    stale = list(store.query(AGENTS_PK))  # b read before a wrote the next view
    clock.now += READ_EVERY_MS
    written = a.view()
    assert written.epoch == 2
    assert [n.node_id for n in written.nodes] == [1, 2]
    # b's own write of the next view loses: it shows the view it read, whose epoch still
    # stands for that view's members, never its own members under that epoch.
    lost = b._settled(stale, b.me, clock.now)
    assert lost.epoch == 1
    assert [n.node_id for n in lost.nodes] == [1]
    clock.now += READ_EVERY_MS
    again = b.view()
    assert again.epoch == 2
    assert [n.node_id for n in again.nodes] == [2, 1]  # the same view, this agent first
