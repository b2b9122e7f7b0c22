"""Starting a generation's assignment: one execution of the assignment state machine.

The execution's name derives from the group and the generation, so starting the same
generation twice (a retried request) is harmless: Step Functions refuses the duplicate name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def execution_name(group: str, generation: int) -> str:
    """At most 80 of ``[A-Za-z0-9_-]``: a readable prefix, a digest of the exact group id (two
    ids that read the same after escaping stay apart), the generation."""
    digest = hashlib.sha256(group.encode()).hexdigest()[:12]
    return f"{_UNSAFE.sub('_', group)[:48]}-{digest}-g{generation}"


class StepFunctionsRebalancer:
    def __init__(self, client: Any, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def start(self, group: str, generation: int, delay_ms: int) -> None:
        # A duplicate name: this generation's rebalance is already under way, or done.
        with contextlib.suppress(self._client.exceptions.ExecutionAlreadyExists):
            self._client.start_execution(
                stateMachineArn=self._arn,
                name=execution_name(group, generation),
                input=json.dumps(
                    {
                        "group": group,
                        "generation": generation,
                        "delay_seconds": math.ceil(delay_ms / 1000),
                    }
                ),
            )
