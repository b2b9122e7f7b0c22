"""tidelog's Python client for the HTTP API (`pip install 'tidelog[client]'`): signed for the
deployed stack, unsigned for `tidelog dev`. See docs/client.md."""

from tidelog.client.admin import (
    Admin,
    KafkaAcl,
    KafkaUser,
    OffsetAt,
    PartitionOffsets,
    TopicInfo,
)
from tidelog.client.consumed import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    ConsumerRecord,
    TopicPartition,
)
from tidelog.client.consumer import Consumer
from tidelog.client.errors import AuthorizationError
from tidelog.client.http import Http
from tidelog.client.kafka_login import (
    aiokafka_token_provider,
    aws_oauth_cb,
    aws_token,
    kafka_python_token_provider,
)
from tidelog.client.producer import Producer, RecordMetadata
from tidelog.client.transactional import GroupMetadata, OffsetToCommit

__all__ = [
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "Admin",
    "AuthorizationError",
    "Consumer",
    "ConsumerRecord",
    "GroupMetadata",
    "Http",
    "KafkaAcl",
    "KafkaUser",
    "OffsetAt",
    "OffsetToCommit",
    "PartitionOffsets",
    "Producer",
    "RecordMetadata",
    "TopicInfo",
    "TopicPartition",
    "aiokafka_token_provider",
    "aws_oauth_cb",
    "aws_token",
    "kafka_python_token_provider",
]
