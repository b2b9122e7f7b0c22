"""Producer ids, handed out once each (Kafka's InitProducerId without a transactional id)."""

from __future__ import annotations

from tidelog.errors import RetriableError
from tidelog.log import keys
from tidelog.storage import Compare, ConditionFailedError, ItemAbsent, MetadataStore, Put

NEXT_ID_SK = "next-id"


def allocate_producer_id(meta: MetadataStore, attempts: int = 50) -> tuple[int, int]:
    """(producer id, epoch 0): a compare-and-set on one counter item."""
    for _ in range(attempts):
        item = meta.get(keys.PRODUCERS_PK, NEXT_ID_SK)
        current = int(str(item["next"])) if item else 0
        condition = ItemAbsent() if item is None else Compare("next", "=", current)
        try:
            meta.write(
                Put({"pk": keys.PRODUCERS_PK, "sk": NEXT_ID_SK, "next": current + 1}, condition)
            )
        except ConditionFailedError:
            continue
        return current, 0
    raise RetriableError("producer id allocation is contended; retry")
