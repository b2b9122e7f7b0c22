"""What can be wrong with record bytes, in Kafka's words."""

from __future__ import annotations

from tidelog.errors import InvalidRequestError


class CorruptRecordError(InvalidRequestError):
    """The bytes are not a well-formed batch: bad CRC, sizes, varints or record count."""

    default_kafka_error = "CORRUPT_MESSAGE"


class InvalidRecordError(InvalidRequestError):
    """Well-formed bytes that break a rule (unsupported magic, illegal attributes)."""

    default_kafka_error = "INVALID_RECORD"


class UnsupportedCompressionError(InvalidRequestError):
    default_kafka_error = "UNSUPPORTED_COMPRESSION_TYPE"


class RecordTooLargeError(InvalidRequestError):
    """Decompressing would exceed the cap: a decompression bomb, or simply too big."""

    default_kafka_error = "MESSAGE_TOO_LARGE"
