"""A transactional producer's side of Kafka's protocol over the HTTP API: the calls
confluent-kafka's Producer makes (``init_transactions``, ``begin_transaction``,
``send_offsets_to_transaction``, ``commit_transaction``, ``abort_transaction``) and the state
between them. The producer asks it for its identity, tells it of each partition before the
first batch it sends there (AddPartitionsToTxn), and of each delivery failure (which leaves the
transaction able only to abort)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from tidelog.client.http import Http
from tidelog.errors import InvalidRequestError, TidelogError


class TransactionStateError(InvalidRequestError):
    """A transactional call out of order (Kafka's IllegalStateException)."""

    default_kafka_error = "INVALID_TXN_STATE"


@dataclass(frozen=True)
class GroupMetadata:
    """A consumer's group, member and generation (confluent-kafka's
    ``consumer_group_metadata()``), which its offsets in a transaction are fenced by
    (KIP-447)."""

    group_id: str
    member_id: str = ""
    generation_id: int = -1


@dataclass(frozen=True)
class OffsetToCommit:
    topic: str
    partition: int
    offset: int
    metadata: str = ""


class Transactions:
    def __init__(self, http: Http, transactional_id: str, timeout_ms: int) -> None:
        self._http = http
        self._base = f"/v1/transactions/{quote(transactional_id, safe='')}"
        self.transactional_id = transactional_id
        self._timeout_ms = timeout_ms
        self._lock = threading.Lock()
        self.identity: tuple[int, int] | None = None
        self._open = False
        self._added: set[tuple[str, int]] = set()
        self._offsets_sent = False
        self._failed: TidelogError | None = None

    def init(self) -> tuple[int, int]:
        """InitProducerId: this instance's identity, fencing older ones (their open
        transaction is aborted); a producer that had one resumes it (KIP-360)."""
        body: dict[str, Any] = {"transaction_timeout_ms": self._timeout_ms}
        if self.identity is not None:
            body |= {"producer_id": self.identity[0], "producer_epoch": self.identity[1]}
        answer = self._http.post(f"{self._base}/init", body)
        with self._lock:
            self.identity = (int(answer["producer_id"]), int(answer["producer_epoch"]))
            self._open, self._added, self._offsets_sent, self._failed = False, set(), False, None
            return self.identity

    def begin(self) -> None:
        with self._lock:
            if self.identity is None:
                raise TransactionStateError("call init_transactions() first")
            if self._open:
                raise TransactionStateError("a transaction is already open")
            self._open, self._added, self._offsets_sent, self._failed = True, set(), False, None

    def require_open(self) -> None:
        with self._lock:
            if not self._open:
                raise TransactionStateError("produce inside a transaction: begin_transaction()")

    def add(self, topic: str, partition: int) -> None:
        """AddPartitionsToTxn, once per partition per transaction, before its first batch."""
        with self._lock:
            if (topic, partition) in self._added:
                return
            identity = self._identity()
        self._http.post(
            f"{self._base}/partitions",
            {
                "producer_id": identity[0],
                "producer_epoch": identity[1],
                "partitions": [{"topic": topic, "partition": partition}],
            },
        )
        with self._lock:
            self._added.add((topic, partition))

    def failed(self, error: TidelogError) -> None:
        with self._lock:
            if self._open and self._failed is None:
                self._failed = error

    def send_offsets(self, offsets: Iterable[OffsetToCommit], group: GroupMetadata) -> None:
        with self._lock:
            if not self._open:
                raise TransactionStateError("send offsets inside a transaction")
            identity = self._identity()
        self._http.post(
            f"{self._base}/offsets",
            {
                "producer_id": identity[0],
                "producer_epoch": identity[1],
                "group": group.group_id,
                "member_id": group.member_id,
                "generation_id": group.generation_id,
                "offsets": [
                    {
                        "topic": o.topic,
                        "partition": o.partition,
                        "offset": o.offset,
                        "metadata": o.metadata,
                    }
                    for o in offsets
                ],
            },
        )
        with self._lock:
            self._offsets_sent = True

    def end(self, *, commit: bool) -> None:
        """EndTxn, once everything sent has been answered. A commit after a failed delivery
        is refused (the transaction can only abort); an abort after one also takes a new epoch
        (KIP-360), since the sequence of what failed is not known to have been written."""
        with self._lock:
            if not self._open:
                raise TransactionStateError("no transaction is open")
            if commit and self._failed is not None:
                raise TransactionStateError(
                    f"a record of this transaction failed ({self._failed.message}): abort it"
                )
            identity, failed = self._identity(), self._failed
            begun = bool(self._added) or self._offsets_sent
        if begun:  # a transaction the server never heard of has nothing to end
            self._http.post(
                f"{self._base}/end",
                {"producer_id": identity[0], "producer_epoch": identity[1], "commit": commit},
            )
        with self._lock:
            self._open, self._added = False, set()
        if failed is not None:
            self.init()

    def _identity(self) -> tuple[int, int]:
        if self.identity is None:
            raise TransactionStateError("call init_transactions() first")
        return self.identity


class TransactionCalls:
    """confluent-kafka's transactional calls, for a producer that has ``_txn`` (None unless it
    has a transactional.id) and ``flush``."""

    _txn: Transactions | None
    flush: Callable[[float | None], int]

    def init_transactions(self, timeout: float | None = None) -> None:
        """Take the transactional id, fencing any older producer of it (whose open transaction
        is aborted)."""
        self._transactions().init()

    def begin_transaction(self) -> None:
        self._transactions().begin()

    def send_offsets_to_transaction(
        self,
        offsets: Iterable[OffsetToCommit | tuple[str, int, int]],
        group: GroupMetadata | str,
        timeout: float | None = None,
    ) -> None:
        """The consumer's positions (the next offset to read, per partition) commit with the
        transaction, fenced by its group metadata (KIP-447) when given."""
        wanted = [o if isinstance(o, OffsetToCommit) else OffsetToCommit(*o) for o in offsets]
        metadata = group if isinstance(group, GroupMetadata) else GroupMetadata(group)
        self._transactions().send_offsets(wanted, metadata)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit: every record of the transaction becomes visible at once."""
        self.flush(timeout)
        self._transactions().end(commit=True)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Wait for what was sent, then abort: none of the transaction's records is ever read
        by a read_committed consumer."""
        self.flush(timeout)
        self._transactions().end(commit=False)

    def _transactions(self) -> Transactions:
        if self._txn is None:
            raise InvalidRequestError("a transactional producer needs transactional.id")
        return self._txn
