"""How clients reach an agent."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from tidelog.kafka.listeners import PLAINTEXT


@dataclass(frozen=True)
class Node:
    """This agent, as Metadata lists its broker and FindCoordinator names the coordinator:
    ``port`` is its first listener's; ``listeners`` names each listener's port."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    listeners: tuple[tuple[str, int], ...] = field(default=(), compare=False)

    def on(self, listener: str) -> Node | None:
        """This node as a client of ``listener`` reaches it; None if it has no such listener
        (an agent registered before listeners were named has PLAINTEXT only)."""
        ports = dict(self.listeners) or {PLAINTEXT: self.port}
        port = ports.get(listener)
        return None if port is None else replace(self, port=port)


def reachable(nodes: Iterable[Node], listener: str) -> tuple[Node, ...]:
    """The nodes that serve ``listener``, each at that listener's port."""
    return tuple(n for n in (node.on(listener) for node in nodes) if n is not None)
