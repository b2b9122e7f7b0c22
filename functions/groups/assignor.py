"""The assignment state machine's task: compute and write one generation's assignment.

Input ``{"group", "generation", ...}``; it writes only if the generation is still current, so
a late or repeated execution changes nothing.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from tidelog import runtime

logger = Logger(service="tidelog-assignor")


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    answer = runtime.coordinator().assign(str(event["group"]), int(event["generation"]))
    logger.info("assignment", extra=answer)
    return answer
