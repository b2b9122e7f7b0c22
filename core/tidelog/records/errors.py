"""What can be wrong with record bytes, in Kafka's words."""

from __future__ import annotations

from collections.abc import Sequence

from tidelog.errors import InvalidRequestError


class CorruptRecordError(InvalidRequestError):
    """The bytes are not a well-formed batch: bad CRC, sizes, varints or record count."""

    default_kafka_error = "CORRUPT_MESSAGE"


class InvalidRecordError(InvalidRequestError):
    """Well-formed bytes that break a rule (unsupported magic, illegal attributes).
    ``record_errors`` names the records that broke it, by their index in the batch, each with
    what is wrong (KIP-467): a producer drops those and may send the others again."""

    default_kafka_error = "INVALID_RECORD"

    def __init__(
        self,
        message: str,
        *,
        kafka_error: str | None = None,
        record_errors: Sequence[tuple[int, str]] = (),
    ) -> None:
        super().__init__(message, kafka_error=kafka_error)
        self.record_errors = tuple(record_errors)

    def to_dict(self) -> dict[str, object]:
        out = super().to_dict()
        if self.record_errors:
            out["record_errors"] = [
                {"batch_index": index, "message": message} for index, message in self.record_errors
            ]
        return out


class UnsupportedCompressionError(InvalidRequestError):
    default_kafka_error = "UNSUPPORTED_COMPRESSION_TYPE"


class RecordTooLargeError(InvalidRequestError):
    """Decompressing would exceed the cap: a decompression bomb, or simply too big."""

    default_kafka_error = "MESSAGE_TOO_LARGE"
