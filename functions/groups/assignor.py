"""The assignment state machine's task: compute and write one generation's assignment.

Input ``{"group", "generation", "protocol", ...}``: a classic group's generation, or a
consumer group's epoch (protocol "consumer", KIP-848). It writes only if the generation is
still current, so a late or repeated execution changes nothing (nor does a classic
generation's, once its group has become a consumer group).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from tidelog import runtime
from tidelog.groups.rebalancer import CONSUMER

logger = Logger(service="tidelog-assignor")


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    group, generation = str(event["group"]), int(event["generation"])
    if event.get("protocol") == CONSUMER:
        answer = runtime.consumer_groups().assign(group, generation)
    else:
        answer = runtime.coordinator().assign(group, generation)
    logger.info("assignment", extra=answer)
    return answer
