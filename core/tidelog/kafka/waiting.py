"""Members waiting in JoinGroup and SyncGroup, however many join at once.

Kafka parks them in a purgatory and answers them when the group moves. Here the group lives in
DynamoDB, so a waiting member reads it until it finds what it waits for. Each member reading it
for itself, a wave of 100 joins read a 100-member group 500 times a second, and renewing each
session through a full heartbeat read it again. So an agent reads each group about once per
``POLL_S`` however many of its members wait (each sees a read that began after the one it saw
last, the first after its own join), and a waiting member's session is renewed by one
conditional write of its own item; a rebalance that stalled is still restarted by a heartbeat.
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
        self, name: str, member_id: str, timeout_ms: int, ready: Callable[[Group], _R | None]
    ) -> _R:
        """What ``ready`` finds in the group, looked for every POLL_S until it finds something.
        The member's session is kept alive meanwhile (a third of its timeout apart, as a
        consumer heartbeats); past ``timeout_ms`` (its rebalance timeout, by which the barrier
        has removed the laggards) the client is told to join again."""
        coordinator = self._coordinator()
        touched = self._monotonic()
        deadline = touched + timeout_ms / 1000
        seen = self._begun()  # the first read must begin after the member's own write
        while True:
            seen, group = self.group(name, seen)
            member = group.members.get(member_id)
            if member is None:
                raise _gone(group, member_id)
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
        or one another thread began), and that read's number."""
        while True:
            with self._lock:
                read = self._read.get(name)
                if read is not None and read[0] > seen:
                    return read[0], _unwrap(read[1])
                reading = self._reading.get(name)
                if reading is None or reading[0] <= seen:
                    self._reads += 1
                    number, done = self._reads, threading.Event()
                    self._reading[name] = (number, done)
                    break
                done = reading[1]
            done.wait()
        result = self._load(name)
        with self._lock:
            if name not in self._read or self._read[name][0] < number:
                self._read[name] = (number, result)
            if self._reading.get(name, (0, None))[1] is done:
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
