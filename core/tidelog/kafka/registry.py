"""The agent registry (the seed's broker registry), in the cluster's table.

Items::

    ("agents", "<node id, 10 digits>")   host, port, each listener's port, zone, the instance
                                          holding the id, and when it expires unless
                                          heartbeated
    ("agents", "view")                   the members clients are shown, and their epoch

An agent claims a random int32 node id that no live agent holds, heartbeats every
``HEARTBEAT_MS`` and is dropped from every answer ``SESSION_MS`` after its last heartbeat: the
defaults of KRaft's ``broker.heartbeat.interval.ms`` and ``broker.session.timeout.ms``. An agent
that stops deletes its item; one that dies expires. DynamoDB's TTL removes expired items for
good, days later; until then readers skip them.

Nothing depends on the registry for correctness: every agent serves every partition and group.
It decides only where clients are sent (tidelog.kafka.placement).

Clients trust leader epochs: a Metadata answer whose epoch is not above the one a client holds
is taken as stale, so an epoch shown with one leader and later with another strands the
client on the first (librdkafka#5593). So agents show clients a *view*: a member set with an
epoch, one item that moves only by compare-and-set, its epoch one higher each time. An agent
that reads a live set other than the view's writes the next view; leaders are computed over
the view's members and shown with its epoch, so an epoch always stands for one member set and
each partition's leader under it, whichever agent answers. The epoch is every partition's
leader epoch: it rises whenever any agent comes or goes, whether or not that partition's
leader moved, which clients take as a leader change to the same leader.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple, Protocol

from tidelog import runtime, threads
from tidelog.errors import TidelogError
from tidelog.kafka.node import Node
from tidelog.storage import (
    Compare,
    ConditionFailedError,
    Delete,
    Item,
    ItemAbsent,
    MetadataStore,
    Put,
    StorageUnavailableError,
    any_of,
)

AGENTS_PK = "agents"
VIEW_SK = "view"
NO_EPOCH = -1  # shown before this agent has read a view: clients compare no epoch with it
HEARTBEAT_MS = 2000
SESSION_MS = 9000
READ_EVERY_MS = 1000
"""How stale the list of live agents may be: a Metadata request reads it at most this often."""
TTL_SLACK_S = 24 * 3600
"""DynamoDB's TTL deletes long after expiry; it only keeps dead agents from piling up."""
CLAIM_ATTEMPTS = 20
STORE_ATTEMPTS = 8  # a claim the store could not answer, tried again for about 10 s

log = logging.getLogger(__name__)


def random_node_id() -> int:
    """A positive int32, as Kafka's broker ids are."""
    return 1 + secrets.randbelow(2**31 - 1)


class View(NamedTuple):
    """The agents clients are shown, and the epoch that stands for them."""

    epoch: int
    nodes: tuple[Node, ...]


class Brokers(Protocol):
    """This agent and the live agents of its cluster."""

    @property
    def me(self) -> Node: ...

    def live(self) -> tuple[Node, ...]: ...

    def view(self) -> View: ...


class Solo:
    """One agent and no registry: the in-memory stores of tests."""

    def __init__(self, node: Node) -> None:
        self.me = node

    def live(self) -> tuple[Node, ...]:
        return (self.me,)

    def view(self) -> View:
        return View(0, (self.me,))


class Registry:
    """This agent's entry in the registry, kept alive by ``start()`` until ``stop()``."""

    def __init__(
        self,
        store: MetadataStore,
        *,
        host: str,
        zone: str | None,
        clock_ms: Callable[[], int] = runtime.clock_ms,
        random_id: Callable[[], int] = random_node_id,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._store = store
        self._sleep = sleep
        self._host, self._port, self._zone = host, 0, zone
        self._listeners: tuple[tuple[str, int], ...] = ()
        self._clock_ms = clock_ms
        self._random_id = random_id
        self._instance = str(uuid.uuid4())
        self._me: Node | None = None
        self._view: View | None = None
        self._read_ms: int | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def me(self) -> Node:
        if self._me is None:
            raise RuntimeError("the agent has not registered")
        return self._me

    def register(self) -> Node:
        """Claim a node id no live agent holds (an expired agent's may be taken over). A claim
        the store could not answer is tried again under the same id, and counts as this
        agent's if an earlier try of it landed; a store down for longer stops the start."""
        for _ in range(CLAIM_ATTEMPTS):
            node = Node(self._random_id(), self._host, self._port, self._zone, self._listeners)
            try:
                self._claim(node)
            except ConditionFailedError:
                continue
            self._me = node
            self._read_ms = None  # the next answer includes this agent's new id
            return node
        raise RuntimeError(f"no free node id after {CLAIM_ATTEMPTS} attempts")

    def _claim(self, node: Node) -> None:
        for attempt in range(STORE_ATTEMPTS):
            now = self._clock_ms()
            free = any_of(
                ItemAbsent(),
                Compare("expires_ms", "<", now),
                Compare("instance", "=", self._instance),  # an earlier try of ours landed
            )
            try:
                self._store.write(Put(self._item(node, now), free))
                return
            except StorageUnavailableError:
                if attempt == STORE_ATTEMPTS - 1:
                    raise
                self._sleep(min(2.0, 0.1 * 2**attempt))

    def heartbeat(self) -> None:
        """Push this agent's expiry on. If the id was taken over while this agent could not
        heartbeat (it was expired by then), claim a new one."""
        node = self.me
        try:
            self._store.write(
                Put(self._item(node, self._clock_ms()), Compare("instance", "=", self._instance))
            )
        except ConditionFailedError:
            log.warning("node id %d was taken over once expired; claiming another", node.node_id)
            self.register()

    def deregister(self) -> None:
        if self._me is not None:
            self._store.write(
                Delete(
                    AGENTS_PK, node_sk(self._me.node_id), Compare("instance", "=", self._instance)
                )
            )

    def live(self) -> tuple[Node, ...]:
        """The agents clients are shown (the view's), this one first when among them."""
        return self.view().nodes

    def view(self) -> View:
        """The agents heartbeating within their session, this one always among them (it is
        answering), as the cluster's view holds them with its epoch; read at most every
        ``READ_EVERY_MS``, and the view moved on when it holds other agents."""
        now = self._clock_ms()
        me = self.me
        with self._lock:
            if self._read_ms is None or now - self._read_ms >= READ_EVERY_MS:
                try:
                    self._view = self._settled(list(self._store.query(AGENTS_PK)), me, now)
                    self._read_ms = now
                except TidelogError as exc:  # answer from what was last read; read next time
                    log.warning("reading the agent registry failed: %s", exc)
            return self._view or View(NO_EPOCH, (me,))

    def _settled(self, items: list[Item], me: Node, now_ms: int) -> View:
        """The view as read, or the next one if the agents live now are others; a view another
        agent wrote first is taken as it is (it too stands for its members)."""
        nodes = {node.node_id: node for node in agent_nodes(items)}
        nodes[me.node_id] = me
        alive = {node.node_id for node in live_nodes(items, now_ms)} | {me.node_id}
        found = next((item for item in items if item["sk"] == VIEW_SK), None)
        epoch = 0 if found is None else int(str(found["epoch"]))
        listed = found["members"] if found is not None else ()
        members = {int(str(m)) for m in listed} if isinstance(listed, list | tuple) else set()
        if members != alive:
            try:
                self._store.write(
                    Put(
                        {
                            "pk": AGENTS_PK,
                            "sk": VIEW_SK,
                            "epoch": epoch + 1,
                            "members": sorted(alive),
                        },
                        ItemAbsent() if found is None else Compare("epoch", "=", epoch),
                    )
                )
                epoch, members = epoch + 1, alive
            except ConditionFailedError:
                if found is None:  # no view yet: none to show but the last this agent had
                    return self._view or View(NO_EPOCH, (me,))
        # A member whose item is gone (it stopped) is left out until the next view drops it;
        # this agent comes first when it is a member, as it lists itself.
        shown = sorted((m for m in members if m in nodes), key=lambda m: (m != me.node_id, m))
        return View(epoch, tuple(nodes[m] for m in shown))

    def start(self, port: int, listeners: Mapping[str, int] | None = None) -> Node:
        """Register as listening on ``port`` (each listener's port in ``listeners``, the
        first's being ``port``) and heartbeat until ``stop()``."""
        self._port = port
        self._listeners = tuple((listeners or {}).items())
        node = self.register()
        self.view()  # the first view, before any client is answered
        self._thread = threads.thread(self._beat, name="tidelog-registry")
        self._thread.start()
        return node

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        try:
            self.deregister()
        except ConditionFailedError:
            pass  # taken over once expired: nothing of this agent's is left
        except TidelogError as exc:  # the agent stops all the same; its item expires
            log.warning("leaving the agent registry failed: %s", exc)

    def _beat(self) -> None:
        while not self._stopping.wait(HEARTBEAT_MS / 1000):
            try:
                self.heartbeat()
            except Exception:  # a missed beat is retried; the agent serves on
                log.exception("registry heartbeat failed")

    def _item(self, node: Node, now_ms: int) -> Item:
        expires_ms = now_ms + SESSION_MS
        item: dict[str, object] = {
            "pk": AGENTS_PK,
            "sk": node_sk(node.node_id),
            "node_id": node.node_id,
            "host": node.host,
            "port": node.port,
            "instance": self._instance,
            "expires_ms": expires_ms,
            "expires_at": expires_ms // 1000 + TTL_SLACK_S,
        }
        if node.rack is not None:
            item["zone"] = node.rack
        if node.listeners:
            item["listeners"] = dict(node.listeners)
        return item


def node_sk(node_id: int) -> str:
    return f"{node_id:010d}"


def live_nodes(items: Iterable[Item], now_ms: int) -> tuple[Node, ...]:
    """The registry's agents still within their session, as nodes."""
    alive = [
        item for item in items if item["sk"] != VIEW_SK and int(str(item["expires_ms"])) > now_ms
    ]
    return agent_nodes(alive)


def agent_nodes(items: Iterable[Item]) -> tuple[Node, ...]:
    """The registry's agents, expired or not, as nodes."""
    nodes = []
    for item in items:
        if item["sk"] == VIEW_SK:
            continue
        zone = item.get("zone")
        listeners = item.get("listeners")
        nodes.append(
            Node(
                int(str(item["node_id"])),
                str(item["host"]),
                int(str(item["port"])),
                str(zone) if zone is not None else None,
                tuple((str(k), int(str(v))) for k, v in listeners.items())
                if isinstance(listeners, Mapping)
                else (),
            )
        )
    return tuple(nodes)
