"""One Kafka request over a socket of its own, encoded and decoded by kafka-python's protocol
classes: what a client would send, with nothing of a client's own logic in between."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kafka.protocol.metadata import MetadataRequest, MetadataResponse


def receive(sock: socket.socket, size: int) -> bytes:
    """``size`` bytes, fewer only if the peer closes first. ``recv(size, MSG_WAITALL)`` is not
    that on a socket with a timeout: Python makes such a socket non-blocking, where the flag
    does nothing, and an answer larger than what has arrived comes back short."""
    parts, left = [], size
    while left:
        part = sock.recv(left)
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def receive_frame(sock: socket.socket) -> bytes:
    """One answer frame without its size prefix; b"" if the peer closed instead."""
    prefix = receive(sock, 4)
    if len(prefix) < 4:
        return b""
    return receive(sock, struct.unpack(">i", prefix)[0])


def exchange(bootstrap: str, request: Any, response_type: Any, version: int, client_id="raw"):
    host, port = bootstrap.split(":")
    request.with_header(correlation_id=11, client_id=client_id)
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        return response_type.decode(receive_frame(sock), version=version, header=True)


def brokers(bootstrap: str, client_id: str = "raw") -> dict[int, tuple[str, int]]:
    """The agents Metadata lists to a client named ``client_id``, by node id."""
    answer = exchange(
        bootstrap, MetadataRequest[1](topics=[]), MetadataResponse, 1, client_id=client_id
    )
    return {broker.node_id: (broker.host, broker.port) for broker in answer.brokers}


def leaders(bootstrap: str, topic: str) -> dict[int, int]:
    """Each partition of ``topic`` and the node id Metadata names its leader."""
    wanted = [MetadataRequest.MetadataRequestTopic(name=topic)]
    answer = exchange(bootstrap, MetadataRequest[1](topics=wanted), MetadataResponse, 1)
    (found,) = answer.topics
    return {p.partition_index: p.leader_id for p in found.partitions}
