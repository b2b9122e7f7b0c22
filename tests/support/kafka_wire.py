"""One Kafka request over a socket of its own, encoded and decoded by kafka-python's protocol
classes: what a client would send, with nothing of a client's own logic in between."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kafka.protocol.metadata import MetadataRequest, MetadataResponse


def exchange(bootstrap: str, request: Any, response_type: Any, version: int, client_id="raw"):
    host, port = bootstrap.split(":")
    request.with_header(correlation_id=11, client_id=client_id)
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        return response_type.decode(
            sock.recv(size, socket.MSG_WAITALL), version=version, header=True
        )


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
