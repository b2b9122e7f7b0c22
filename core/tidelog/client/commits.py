"""A consumer's offset commits: one at a time and in order on a thread of their own, fenced by
the member and generation the consumer holds, reported to ``on_commit``; and auto-commit every
``auto.commit.interval.ms`` of what changed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import httpx2

from tidelog.client.consumed import TopicPartition
from tidelog.client.consumer_config import ConsumerConfig
from tidelog.client.http import Http
from tidelog.client.membership import TopicPartitionKey
from tidelog.errors import RetriableError, TidelogError

log = logging.getLogger(__name__)

CommitCallback = Callable[[TidelogError | None, list[TopicPartition]], None]
Fence = Callable[[], tuple[str | None, int, int]]
"""The member committing (None: no group membership), the generation it holds, and the one it
has joined."""
Regenerate = Callable[[str, int], int | None]
"""Ask the group which generation a member is in: None if it is in none it may commit in."""

_STALE_GENERATION = ("ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", "STALE_MEMBER_EPOCH")


class Commits:
    def __init__(
        self,
        http: Http,
        config: ConsumerConfig,
        *,
        fence: Fence,
        regenerate: Regenerate,
        on_commit: CommitCallback | None,
    ) -> None:
        self._http = http
        self._config = config
        self._path = f"/v1/groups/{quote(config.group_id, safe='')}/offsets"
        self._fence = fence
        self._regenerate = regenerate
        self._on_commit = on_commit
        self._committed: dict[TopicPartitionKey, int] = {}  # what this consumer last committed
        self._next_auto = time.monotonic() + config.auto_commit_interval_ms / 1000
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="tidelog-commit")

    def submit(self, offsets: list[TopicPartition]) -> Future[list[TopicPartition]]:
        return self._thread.submit(self._now, offsets)

    def quietly(self, offsets: list[TopicPartition]) -> None:
        """A commit on the way out of a partition: failing it must not stop the rebalance
        (Kafka logs it); the next owner starts from the last commit that held."""
        if not offsets:
            return
        try:
            self.submit(offsets).result()
        except TidelogError as exc:
            log.warning("commit before giving up partitions: %s", exc)

    def maybe_auto(self, consumed: Callable[[], list[TopicPartition]]) -> None:
        """With auto-commit, once an interval: what was consumed since the last commit."""
        if not self._config.enable_auto_commit or time.monotonic() < self._next_auto:
            return
        self._next_auto = time.monotonic() + self._config.auto_commit_interval_ms / 1000
        changed = [tp for tp in consumed() if self._committed.get(tp.key) != tp.offset]
        if changed:
            self.submit(changed)

    def stored(self) -> dict[TopicPartitionKey, tuple[int, str]]:
        """The group's committed offsets and their metadata."""
        try:
            answer = self._http.get(self._path)
        except TidelogError as exc:
            if exc.kafka_error.name in ("GROUP_ID_NOT_FOUND",) or exc.http_status == 404:
                return {}
            raise
        return {
            (o["topic"], o["partition"]): (o["offset"], o["metadata"]) for o in answer["offsets"]
        }

    def shutdown(self) -> None:
        self._thread.shutdown(wait=True)

    def _now(self, offsets: list[TopicPartition]) -> list[TopicPartition]:
        """On the commit thread (one at a time, in order)."""
        result: list[TopicPartition] = []
        error: TidelogError | None = None
        try:
            if offsets:
                answer = self._post(offsets)
                for item, tp in zip(answer["offsets"], offsets, strict=True):
                    failed = None
                    if item.get("error"):
                        failed = TidelogError(item.get("message") or "", kafka_error=item["error"])
                        error = error or failed
                    else:
                        self._committed[tp.key] = tp.offset
                    result.append(TopicPartition(tp.topic, tp.partition, tp.offset, error=failed))
        except (TidelogError, httpx2.TransportError) as exc:
            error = exc if isinstance(exc, TidelogError) else RetriableError(str(exc))
        if self._on_commit is not None:
            try:
                self._on_commit(error, result or list(offsets))
            except Exception:
                log.exception("on_commit raised")
        if error is not None:
            raise error
        return result

    def _post(self, offsets: list[TopicPartition]) -> Any:
        """The commit, fenced by the generation this member holds. A member can be in a
        generation it has not heard of yet (it joined, and the group moved on before a
        heartbeat brought the answer); refused for that, it asks the group once and commits
        as the generation the group says it is in."""
        member, generation, joined = self._fence()
        body = {
            "member_id": member or "",
            "generation_id": generation if member else -1,
            "offsets": [
                {
                    "topic": t.topic,
                    "partition": t.partition,
                    "offset": t.offset,
                    "metadata": t.metadata,
                }
                for t in offsets
            ],
        }
        try:
            return self._http.post(self._path, body)
        except TidelogError as exc:
            if member is None or exc.kafka_error.name not in _STALE_GENERATION:
                raise
            current = self._regenerate(member, joined)
            if current is None or current == generation:
                raise
            return self._http.post(self._path, {**body, "generation_id": current})
