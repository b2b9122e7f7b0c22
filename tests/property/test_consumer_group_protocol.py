"""KIP-848's consumer groups (tidelog.groups.consumer), as random histories of clients that
follow the protocol: members join, heartbeat, take their time to revoke, lose answers, change
their subscriptions and leave, while topics grow and the state machine computes targets when
it gets to it. Some clients speak the classic protocol (tidelog.groups.consumer.classic):
eager ones give everything up when they rejoin, cooperative ones say what they still own, and
each learns its partitions from a SyncGroup of its own.

- Safety: no partition is ever held by two members, as the coordinator sees them, nor owned
  by two clients, as the clients see themselves.
- Liveness: once the churn stops, a few rounds of heartbeats and one target bring every member
  to the group's epoch, Stable, holding exactly its target, and every subscribed partition is
  someone's.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.assignors import TopicPartition
from tidelog.errors import TidelogError
from tidelog.groups.consumer import classic
from tidelog.groups.consumer.heartbeat import (
    Config,
    Heartbeat,
    expire,
    heartbeat,
    validate,
)
from tidelog.groups.consumer.model import (
    ConsumerGroup,
    GroupState,
    MemberState,
    subscribed_topics,
)
from tidelog.groups.consumer.target import compute_target

CONFIG = Config()
NAMES = ["a", "b"]  # few topics: members meet on them
MAX_CLIENTS = 4  # a join beyond is a heartbeat: few clients meet more often


@dataclass
class Client:
    """A consumer: what it owns, its epoch, and what it has been told to give up."""

    member_id: str
    topics: tuple[str, ...]
    epoch: int = 0
    owned: frozenset = frozenset()
    joined: bool = False
    pending_revocation: frozenset = frozenset()
    full: bool = False  # the next heartbeat says everything (after a change, or no answer)
    classic: str = ""  # "eager" or "cooperative": a member of the classic protocol
    rejoin: bool = True  # a classic client: its next step is a JoinGroup
    synced: bool = True  # a classic client: its last JoinGroup's SyncGroup is done


class History:
    def __init__(self, partitions: dict[str, int]) -> None:
        self.topics = {name: (f"id-{name}", n) for name, n in partitions.items()}
        self.group = ConsumerGroup("g")
        self.clients: dict[str, Client] = {}
        self.now = 1_000

    def step(self, client: Client, *, lose_answer: bool = False) -> None:
        if client.classic:
            self.classic_step(client, lose_answer=lose_answer)
        else:
            self.beat(client, lose_answer=lose_answer)

    def beat(self, client: Client, *, lose_answer: bool = False) -> None:
        request = Heartbeat(
            member_id=client.member_id,
            epoch=client.epoch,
            rebalance_timeout_ms=60_000,
            topics=client.topics if not client.joined or client.full else None,
            owned=client.owned if client.joined else frozenset(),
        )
        validate(request, CONFIG)
        self.now += 10
        try:
            outcome = heartbeat(
                expire(self.group, CONFIG, self.now), request, self.topics, CONFIG, self.now
            )
        except TidelogError as exc:
            refused = exc
        else:
            refused = None
        if refused is not None:
            assert refused.kafka_error.name in ("FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID")
            self.fenced(client)
            return
        self.group = outcome.group
        self.check_server()
        if lose_answer:  # as after a request timeout, the client's next heartbeat is full
            client.full = True
            return
        client.joined, client.full = True, False
        client.epoch = outcome.epoch
        if outcome.assignment is not None:
            # Revoke what is no longer ours (perhaps later), take what is new at once.
            client.pending_revocation = client.owned - outcome.assignment
            client.owned = client.owned | (outcome.assignment - client.owned)
        self.check_clients()

    def revoke(self, client: Client) -> None:
        if client.classic:
            self.sync(client)
            return
        client.owned = client.owned - client.pending_revocation
        client.pending_revocation = frozenset()

    def classic_step(self, client: Client, *, lose_answer: bool = False) -> None:
        """A classic client's JoinGroup when it must join, its Heartbeat otherwise."""
        self.now += 10
        group = expire(self.group, CONFIG, self.now)
        if client.rejoin or lose_answer:
            if client.classic == "eager":
                client.owned = frozenset()  # onPartitionsRevoked, before it joins
            request = classic.ClassicJoin(
                member_id=client.member_id,
                instance_id=None,
                session_timeout_ms=45_000,
                rebalance_timeout_ms=60_000,
                protocols=("range",),
                topics=client.topics,
                owned=tuple(TopicPartition(t[3:], p) for t, p in client.owned),
            )
            outcome = classic.join(group, request, self.topics, CONFIG, self.now)
            self.group = outcome.group
            self.check_server()
            if lose_answer:  # it joins again, as after a request timeout
                client.rejoin = True
            else:
                client.epoch, client.rejoin, client.synced = outcome.epoch, False, False
            return
        try:
            self.group, client.rejoin = classic.beat(
                group, client.member_id, None, client.epoch, topics=self.topics, now_ms=self.now
            )
        except TidelogError as exc:
            refused: TidelogError | None = exc
        else:
            refused = None
        if refused is not None:
            assert refused.kafka_error.name in ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID")
            self.fenced(client)
        self.check_server()

    def sync(self, client: Client) -> None:
        """A classic client's SyncGroup: it owns what it is told, and gives up the rest."""
        if client.synced:
            return
        try:
            member = classic.sync(self.group, client.member_id, None, client.epoch)
        except TidelogError as exc:
            refused: TidelogError | None = exc
        else:
            refused = None
        if refused is not None:
            error = refused.kafka_error.name
            assert error in ("REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID")
            if error != "REBALANCE_IN_PROGRESS":
                self.fenced(client)
            client.rejoin = True
            return
        client.owned, client.synced = member.assigned, True
        self.check_clients()

    def fenced(self, client: Client) -> None:
        """A fenced client gives everything up and joins again under its id (epoch 0)."""
        client.owned, client.pending_revocation = frozenset(), frozenset()
        client.epoch, client.joined, client.rejoin = 0, False, True

    def leave(self, client: Client) -> None:
        client.owned = frozenset()
        request = Heartbeat(member_id=client.member_id, epoch=-1)
        with contextlib.suppress(TidelogError):  # never joined: nothing to leave
            if client.classic:
                self.group = classic.leave(self.group, client.member_id, None)
            else:
                self.group = heartbeat(self.group, request, self.topics, CONFIG, self.now).group
        del self.clients[client.member_id]
        self.check_server()

    def assign(self) -> None:
        if self.group.epoch > self.group.target.epoch:
            target = compute_target(self.group, self.topics)
            self.group = ConsumerGroup(
                self.group.name, self.group.epoch, self.group.version, self.group.members, target
            )

    def check_server(self) -> None:
        held = [tp for m in self.group.members.values() for tp in m.held]
        assert len(held) == len(set(held)), "a partition held by two members"

    def check_clients(self) -> None:
        owned = [tp for c in self.clients.values() for tp in c.owned]
        assert len(owned) == len(set(owned)), "a partition owned by two clients"


@st.composite
def histories(draw):
    partitions = {name: draw(st.integers(1, 4)) for name in NAMES}
    events = draw(
        st.lists(
            st.tuples(
                st.sampled_from(
                    [
                        "join",
                        "eager",
                        "cooperative",
                        "cooperative",
                        "beat",
                        "beat",
                        "beat",
                        "beat",
                        "revoke",
                        "revoke",
                        "lost",
                        "assign",
                        "assign",
                        "leave",
                        "resubscribe",
                        "grow",
                    ]
                ),
                st.integers(0, 5),
                st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True),
            ),
            min_size=40,
            max_size=120,
        )
    )
    return partitions, events


@settings(max_examples=300, deadline=None)
@given(histories())
def test_no_partition_is_ever_held_twice_and_every_group_settles(history_spec):
    partitions, events = history_spec
    history = History(partitions)
    ids = itertools.count()
    for kind, who, topics in events:
        clients = sorted(history.clients.values(), key=lambda c: c.member_id)
        client = clients[who % len(clients)] if clients else None
        joins = kind in ("join", "eager", "cooperative")
        if (joins and len(clients) < MAX_CLIENTS) or client is None:
            joining = Client(
                f"m{next(ids)}",
                tuple(sorted(topics)),
                classic=kind if kind in ("eager", "cooperative") else "",
            )
            history.clients[joining.member_id] = joining
            history.step(joining)
        elif kind == "beat" or joins:
            history.step(client)
        elif kind == "revoke":
            history.revoke(client)
        elif kind == "lost":
            history.step(client, lose_answer=True)
        elif kind == "assign":
            history.assign()
        elif kind == "leave":
            history.leave(client)
        elif kind == "resubscribe":
            client.topics, client.full = tuple(sorted(topics)), True
            client.rejoin = True  # a classic client says it with a JoinGroup
            history.step(client)
        elif kind == "grow":
            name = topics[0]
            topic_id, count = history.topics[name]
            history.topics[name] = (topic_id, count + 1)
    # The churn stops: clients revoke promptly, the state machine answers.
    for _ in range(8):
        history.assign()
        for client in sorted(history.clients.values(), key=lambda c: c.member_id):
            history.step(client)
            history.revoke(client)
            history.step(client)
            history.revoke(client)
    group = history.group
    if not history.clients:
        assert group.state == GroupState.EMPTY
        return
    assert group.state == GroupState.STABLE, group
    for client in history.clients.values():
        member = group.members[client.member_id]
        assert member.state == MemberState.STABLE
        assert member.epoch == group.epoch == client.epoch
        assert member.assigned == group.target.of(client.member_id) == client.owned
    every = {
        (topic_id, p)
        for topic_id, count in subscribed_topics(group.members.values(), history.topics).items()
        for p in range(count)
    }
    assert {tp for m in group.members.values() for tp in m.assigned} == every
