"""Members waiting in JoinGroup and SyncGroup, however many join at once.

Kafka parks them in a purgatory and answers them when the group moves. Here the group lives in
DynamoDB, so a waiting member reads it until it finds what it waits for. Each member reading it
for itself, a wave of 100 joins read a 100-member group 500 times a second, and renewing each
session through a full heartbeat read it again. So an agent reads each group about once per
``POLL_S`` however many of its members wait, one read at a time (each sees a read that began
after the one it saw last, the first after its own join), and a waiting member's session is
renewed by one conditional write of its own item; a rebalance that stalled is still restarted
by a heartbeat.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from tidelog.groups.coordinator import Coordinator
from tidelog.groups.model import (
    FencedInstanceError,
    Group,
    RebalanceInProgressError,
    State,
    UnknownMemberError,
)
from tidelog.groups.stored import ConsumerProtocolGroupError

POLL_S = 0.2
"""How often the groups members wait on are read (one query per group, per agent)."""
_KEPT = 1024  # groups read lately, kept; older reads are dropped past this many

_R = TypeVar("_R")
_Read = tuple[int, Group | Exception]


class Waiting:
    def __init__(
        self,
        coordinator: Callable[[], Coordinator],
        *,
        monotonic: Callable[[], float],
        sleep: Callable[[float], None],
    ) -> None:
        self._coordinator = coordinator
        self._monotonic = monotonic
        self._sleep = sleep
        self._lock = threading.Lock()
        self._reads = 0  # reads begun: each is numbered
        self._read: dict[str, _Read] = {}  # each group as last read, and the read's number
        self._reading: dict[str, tuple[int, threading.Event]] = {}

    def until(
        self,
        name: str,
        member_id: str,
        ready: Callable[[Group], _R | None],
        timeout_ms: int | None = None,
    ) -> _R:
        """What ``ready`` finds in the group, looked for every POLL_S until it finds something.
        The member's session is kept alive meanwhile (a third of its timeout apart, as a
        consumer heartbeats); past ``timeout_ms`` (by default the member's rebalance timeout,
        by which the barrier has removed the laggards) the client is told to join again."""
        coordinator = self._coordinator()
        touched = self._monotonic()
        deadline = None if timeout_ms is None else touched + timeout_ms / 1000
        seen = self._begun()  # the first read must begin after the member's own write
        while True:
            seen, group = self.group(name, seen)
            member = group.members.get(member_id)
            if member is None:
                raise _gone(group, member_id)
            if deadline is None:
                deadline = touched + member.rebalance_timeout_ms / 1000
            found = ready(group)
            if found is not None:
                return found
            now = self._monotonic()
            if now >= deadline:
                raise moved_on(group)
            if now - touched >= member.session_timeout_ms / 3000:
                coordinator.renew(name, group, member)
                touched = now
            self._sleep(POLL_S)

    def group(self, name: str, seen: int) -> tuple[int, Group]:
        """The group as a read that began after read number ``seen`` found it (this thread's,
        or one another thread began), and that read's number. One read of a group is in
        flight at a time: a waiter that needs a newer one than that waits for it to end, and
        all who gathered meanwhile share the next (a wave of 100 joins arriving during one
        read began 100 reads, and the emulator queued them past the members' sessions)."""
        while True:
            with self._lock:
                read = self._read.get(name)
                if read is not None and read[0] > seen:
                    return read[0], _unwrap(read[1])
                reading = self._reading.get(name)
                if reading is None:
                    self._reads += 1
                    number, done = self._reads, threading.Event()
                    self._reading[name] = (number, done)
                    break
                # In flight: its answer if it began after ``seen``; else the next one, begun
                # (by whichever waiter comes first) once it ends.
                ended = reading[1]
            ended.wait()
        result: Group | Exception = RuntimeError(f"reading group {name} ended unfinished")
        try:
            result = self._load(name)
        finally:  # whatever happened, the next read can begin
            with self._lock:
                self._read[name] = (number, result)
                del self._reading[name]
                if len(self._read) > _KEPT:
                    for old in sorted(self._read, key=lambda n: self._read[n][0])[: _KEPT // 2]:
                        del self._read[old]
            done.set()
        return number, _unwrap(result)

    def _begun(self) -> int:
        with self._lock:
            return self._reads

    def _load(self, name: str) -> Group | Exception:
        try:
            return self._coordinator().load(name)
        except ConsumerProtocolGroupError:
            # Upgraded while the member waited: Kafka completes waiting joins and syncs with
            # REBALANCE_IN_PROGRESS, and the member joins the consumer group as a classic one.
            return RebalanceInProgressError(
                f"group {name} became a consumer group; join again",
                generation=-1,
                state=State.PREPARING_REBALANCE.value,
            )
        except Exception as exc:  # noqa: BLE001 - every waiter of this read hears of it
            return exc


def _unwrap(result: Group | Exception) -> Group:
    if isinstance(result, Exception):
        raise result
    return result


def moved_on(group: Group) -> RebalanceInProgressError:
    """The member must join again: the group moved past its generation (it is kept in the
    new one, so it rejoins under the same id)."""
    return RebalanceInProgressError(
        f"group {group.name} moved on to generation {group.generation}",
        generation=group.generation,
        state=group.state.value,
    )


def _gone(group: Group, member_id: str) -> UnknownMemberError | FencedInstanceError:
    if member_id in group.fenced:
        return FencedInstanceError(f"member {member_id} was replaced by a newer instance")
    return UnknownMemberError(f"member {member_id!r} is not in group {group.name!r}")
