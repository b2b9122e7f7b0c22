"""Starting a generation's assignment: one execution of the assignment state machine.

The execution's name derives from the group, its incarnation and the generation (a consumer
group's epoch), so starting the same one twice (a retried request) is harmless: Step Functions
refuses the duplicate name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
from typing import Any, Protocol

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def execution_name(group: str, generation: int, incarnation: str = "", protocol: str = "") -> str:
    """At most 80 of ``[A-Za-z0-9_-]``: a readable prefix, a digest of the exact group id (two
    ids that read the same after escaping stay apart), the group's incarnation (a group deleted
    and created again counts its generations from 1 again, and Step Functions refuses a name
    for 90 days), and the generation: ``g`` a classic one, ``e`` a consumer group's epoch."""
    digest = hashlib.sha256(group.encode()).hexdigest()[:12]
    kind = "e" if protocol == CONSUMER else "g"
    return f"{_UNSAFE.sub('_', group)[:40]}-{digest}-{incarnation or '0'}-{kind}{generation}"


CONSUMER = "consumer"  # the protocol of KIP-848's groups, whose epochs the machine assigns


class Rebalancer(Protocol):
    """Starts the computation of a generation's assignment (the state machine, in AWS):
    ``protocol`` "consumer" for a consumer group's epoch (KIP-848)."""

    def start(
        self,
        group: str,
        generation: int,
        delay_ms: int,
        *,
        incarnation: str = "",
        protocol: str = "classic",
    ) -> None: ...


class StepFunctionsRebalancer:
    def __init__(self, client: Any, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def start(
        self,
        group: str,
        generation: int,
        delay_ms: int,
        *,
        incarnation: str = "",
        protocol: str = "classic",
    ) -> None:
        # A duplicate name: this generation's rebalance is already under way, or done.
        with contextlib.suppress(self._client.exceptions.ExecutionAlreadyExists):
            self._client.start_execution(
                stateMachineArn=self._arn,
                name=execution_name(group, generation, incarnation, protocol),
                input=json.dumps(
                    {
                        "group": group,
                        "generation": generation,
                        "protocol": protocol,
                        "delay_seconds": math.ceil(delay_ms / 1000),
                    }
                ),
            )
