"""What an append of a transaction must still find true of its transactional id when it
commits, checked inside the commit's own DynamoDB transaction.

A data batch commits only into the transaction it was sent in: the same producer id and epoch,
the same transaction of that id (``begun`` counts them), still Ongoing, and the partition added
(checked when the request arrives; a transaction's partitions only grow). A marker commits only
while the transaction it ends is still being ended. A request delayed past its transaction's
end, in any agent, matches nothing and is refused, so it can never land in the next one (the
hazard of KAFKA-17754).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tidelog.storage import Check, Compare, all_of
from tidelog.txn import keys
from tidelog.txn.state import State, Txn


@dataclass(frozen=True)
class TxnGuard:
    transactional_id: str
    producer_id: int
    epoch: int
    begun: int
    state: State  # ONGOING for data; PREPARE_COMMIT or PREPARE_ABORT for a marker

    @classmethod
    def of(cls, txn: Txn) -> TxnGuard:
        return cls(txn.transactional_id, txn.producer_id, txn.epoch, txn.begun, txn.state)

    @property
    def key(self) -> tuple[str, str]:
        return keys.pk(self.transactional_id), keys.sk(self.transactional_id)

    def holds(self, txn: Txn | None) -> bool:
        return txn is not None and TxnGuard.of(txn) == self

    def check(self) -> Check:
        return Check(
            *self.key,
            all_of(
                Compare("producer_id", "=", self.producer_id),
                Compare("epoch", "=", self.epoch),
                Compare("begun", "=", self.begun),
                Compare("state", "=", self.state.value),
            ),
        )


def read_txns(
    items: Mapping[tuple[str, str], Mapping[str, object]], guards: list[TxnGuard]
) -> dict[str, Txn | None]:
    """The transactional ids ``guards`` name, as ``items`` (read by their keys) hold them."""
    out: dict[str, Txn | None] = {}
    for guard in guards:
        item = items.get(guard.key)
        out[guard.transactional_id] = None if item is None else Txn.from_attributes(item)
    return out
