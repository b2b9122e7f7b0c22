"""KIP-848's consumer protocol over HTTP (``POST /v1/groups/{group}/heartbeat``), measured as
``benchmarks.groups`` measures the classic one, on the same stack in the same run: time from
a join to the member owning every partition, and from a member's death to the survivor owning
its partitions."""

from __future__ import annotations

import time
import uuid
from typing import Any

from benchmarks.http import call

SESSION_MS = 1000  # TIDELOG_CONSUMER_SESSION_TIMEOUT_MS, set by benchmarks.groups.run
HEARTBEAT_MS = 333  # TIDELOG_CONSUMER_HEARTBEAT_INTERVAL_MS: a third, as the classic run's


class Member:
    """A member as a client runs it: it owns what it is assigned, and says so."""

    def __init__(self, api: str, group: str, topic: str) -> None:
        self.api, self.group, self.owned = api, group, set[tuple[str, int]]()
        answer = self._beat({"member_epoch": 0, "topics": [topic]})
        self.member_id, self.epoch = str(answer["member_id"]), int(answer["member_epoch"])

    def beat(self) -> int:
        """One heartbeat; how many partitions it owns after."""
        said = [{"topic": t, "partitions": [p]} for t, p in sorted(self.owned)]
        answer = self._beat(
            {"member_id": self.member_id, "member_epoch": self.epoch, "owned": said}
        )
        self.epoch = int(answer["member_epoch"])
        if answer["assignment"] is not None:
            self.owned = {(a["topic"], p) for a in answer["assignment"] for p in a["partitions"]}
        return len(self.owned)

    def _beat(self, body: dict[str, Any]) -> Any:
        path = f"/v1/groups/{self.group}/heartbeat"
        status, answer = call(self.api, "POST", path, body)
        if status != 200:
            raise RuntimeError(f"heartbeat failed: {status} {answer}")
        return answer


def join_to_assigned(api: str, topic: str, partitions: int, pause: float) -> float:
    """From the first heartbeat to owning every partition, heartbeating every ``pause`` (the
    client's interval while it has nothing: tidelog.client heartbeats at 0.1 s then)."""
    start = time.perf_counter()
    member = Member(api, f"bench-{uuid.uuid4().hex[:8]}", topic)
    deadline = start + 60
    while member.beat() < partitions:
        if time.perf_counter() > deadline:
            raise RuntimeError("the member never owned every partition")
        time.sleep(pause)
    return (time.perf_counter() - start) * 1000


def death_to_reassigned(api: str, topic: str, partitions: int) -> float:
    group = f"bench-{uuid.uuid4().hex[:8]}"
    members = [Member(api, group, topic), Member(api, group, topic)]
    deadline = time.perf_counter() + 60
    while sum(m.beat() for m in members) < partitions or not all(m.owned for m in members):
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{group} never settled")
        time.sleep(0.01)
    survivor = members[0]
    died = time.perf_counter()  # the other member's last heartbeat
    while time.perf_counter() - died < 60:
        time.sleep(HEARTBEAT_MS / 1000)
        if survivor.beat() == partitions:
            return (time.perf_counter() - died) * 1000
    raise RuntimeError(f"{group}: the survivor never got every partition")
