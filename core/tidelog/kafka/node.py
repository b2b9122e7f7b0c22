"""How clients reach an agent."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    """This agent, as Metadata lists its broker and FindCoordinator names the coordinator."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
