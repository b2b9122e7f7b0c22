"""Kafka's producer configs, checked, with Kafka's defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tidelog.client import config as settings
from tidelog.errors import InvalidRequestError
from tidelog.records.compression import CODECS


@dataclass(frozen=True)
class ProducerConfig:
    """Kafka's producer configs, with Kafka's defaults (``linger.ms`` as of Kafka 4.0)."""

    linger_ms: int = 5
    batch_size: int = 16_384
    compression_type: str = "none"
    enable_idempotence: bool = True
    retries: int = 2_147_483_647
    delivery_timeout_ms: int = 120_000
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    max_request_size: int = 1_048_576
    buffer_memory: int = 33_554_432
    max_block_ms: int = 60_000
    metadata_max_age_ms: int = 300_000
    transactional_id: str = ""
    transaction_timeout_ms: int = 60_000

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> tuple[ProducerConfig, dict[str, Any]]:
        """Kafka's keys (``linger.ms``...) into a config, and the connection's own keys
        (``url``, ``cluster``, ``sign``, ``region``) apart. Unknown keys are an error."""
        if str(config.get("acks", "all")) not in ("all", "-1"):
            raise InvalidRequestError(
                f"acks={config['acks']!r}: tidelog acknowledges only once a batch is committed "
                "(acks=all); there is no leader-only acknowledgement to ask for"
            )
        parsed, connection = settings.parse(
            cls, config, ignored=("acks", "client.id", "partitioner")
        )
        if parsed.compression_type not in CODECS:
            raise InvalidRequestError(
                f"compression.type={parsed.compression_type!r}: choose one of {sorted(CODECS)}"
            )
        if str(config.get("partitioner", "murmur2_random")) not in ("murmur2_random", "murmur2"):
            raise InvalidRequestError("partitioner: only murmur2 (Kafka's default) is offered")
        if parsed.transactional_id and not parsed.enable_idempotence:
            raise InvalidRequestError(
                "transactional.id needs enable.idempotence=true, as Kafka's producer does"
            )
        return parsed, connection
