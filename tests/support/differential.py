"""Differential conformance: the same scripted requests sent to a real Kafka broker and to
tidelog's agent, each answer normalised (what must differ between two clusters: node ids,
hosts, cluster and topic ids, producer and member ids, throttling, error messages' wording) and
compared field by field. A difference is a path and the two values; docs/kafka.md lists each
one tidelog keeps on purpose, with its reason."""

from __future__ import annotations

import json
import re
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.kio_wire import Connection

ABSENT = "absent"

# Lists of entries are compared entry by entry, each found by the first of these it has.
ENTRY_KEYS = (
    "name",
    "topic",
    "topic_name",
    "resource_name",
    "partition_index",
    "partition",
    "api_key",
    "group_id",
    "transactional_id",
    "config_name",
    "index",
    "batch_index",
    "key",
    "base_offset",
)
# Fields whose values are a cluster's own: replaced by a name for each distinct value, in the
# order they are first seen, so that "the same node twice" still compares.
RENAMED = {
    "node_id": "node",
    "leader_id": "node",
    "controller_id": "node",
    "replica_nodes": "node",
    "isr_nodes": "node",
    "offline_replicas": "node",
    "leader": "member",  # JoinGroup's: the member that assigns
    "topic_id": "topic-id",
    "producer_id": "producer",
    "member_id": "member",
    "leader_member_id": "member",
    "cluster_id": "cluster",
}
DROPPED = {
    "throttle_time",
    "error_message",
    "batch_index_error_message",
    "host",
    "port",
    "rack",
    "client_host",
}
NO_ID = {-1, "", None, "00000000-0000-0000-0000-000000000000", "AAAAAAAAAAAAAAAAAAAAAA"}


# Errors every Kafka client retries by sending the same request again.
RETRIED = {"COORDINATOR_LOAD_IN_PROGRESS", "CONCURRENT_TRANSACTIONS", "NOT_COORDINATOR"}
RETRIES = 100


def _error_codes(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key.endswith("error_code") and isinstance(item, str):
                yield item
            else:
                yield from _error_codes(item)
    elif isinstance(value, list):
        for item in value:
            yield from _error_codes(item)


@dataclass
class Script:
    """One run of a sequence against one broker: its answers by step name."""

    bootstrap: str
    token: str
    answers: dict[str, Any] = field(default_factory=dict)
    _conn: Connection | None = None

    def name(self, alias: str) -> str:
        """A topic, group or transactional id, the same on both brokers and new each run."""
        return f"conf-{self.token}-{alias}"

    @property
    def conn(self) -> Connection:
        if self._conn is None:
            self._conn = Connection(self.bootstrap)
        return self._conn

    def call(self, step: str, api: int, version: int, body: dict[str, Any]) -> Any:
        """The answer to one request; one a client would retry (a coordinator still loading,
        a transaction still completing) is sent again as the client would, and the answer
        it settles on is the one compared."""
        if step in self.answers:
            raise ValueError(f"step {step!r} twice in one sequence")
        for _ in range(RETRIES):
            try:
                answer = self.conn.call(api, version, body)
            except ConnectionError as exc:
                self._conn = None
                answer = {"closed": str(exc)}
            if not RETRIED.intersection(_error_codes(answer)):
                break
            time.sleep(0.1)
        self.answers[step] = answer
        return answer

    def note(self, step: str, value: Any) -> None:
        """A value the sequence derived itself (what a client would conclude), compared too."""
        self.answers[step] = value

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


Sequence = Callable[[Script], None]


def run(sequence: Sequence, bootstrap: str, token: str) -> dict[str, Any]:
    script = Script(bootstrap, token)
    try:
        sequence(script)
    finally:
        script.close()
    return normalised(script.answers, token)


def normalised(answers: dict[str, Any], token: str) -> dict[str, Any]:
    names: dict[tuple[str, Any], str] = {}

    def rename(kind: str, value: Any) -> Any:
        if value in NO_ID:
            return value
        key = (kind, value)
        if key not in names:
            names[key] = f"<{kind}{sum(1 for k in names if k[0] == kind) + 1}>"
        return names[key]

    def walk(value: Any, name: str = "") -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items() if k not in DROPPED}
        if isinstance(value, list):
            return [walk(item, name) for item in value]
        if name in RENAMED and not isinstance(value, bool):
            return rename(RENAMED[name], value)
        if isinstance(value, str):
            return value.replace(f"conf-{token}-", "")
        if isinstance(value, bytes):
            return batches(value) if name == "records" else value.hex()
        return value

    return walk(answers)


_BATCH = struct.Struct(">qiibIhiqqqhii")
_BATCH_FIELDS = (
    "base_offset",
    "length",
    "partition_leader_epoch",
    "magic",
    "crc",
    "attributes",
    "last_offset_delta",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "count",
)
_CONTROL = 0x20


def batches(records: bytes) -> list[dict[str, Any]]:
    """Fetched bytes as their batches' header fields and record bytes, so a difference names
    the field. A control batch's timestamps are its broker's clock; its CRC covers them."""
    out, at = [], 0
    while at + _BATCH.size <= len(records):
        header = dict(zip(_BATCH_FIELDS, _BATCH.unpack_from(records, at), strict=True))
        end = at + 12 + header["length"]
        header["payload"] = records[at + _BATCH.size : end].hex()
        if header["producer_id"] >= 0:  # each cluster's own id, under the CRC
            header.update(producer_id="<producer>", crc="<crc>")
        if header["attributes"] & _CONTROL:
            header.update(base_timestamp="<clock>", max_timestamp="<clock>", crc="<crc>")
        out.append(header)
        at = end
    return out


@dataclass(frozen=True)
class Difference:
    path: str
    kafka: str
    tidelog: str

    def __str__(self) -> str:
        return f"{self.path}: Kafka {self.kafka}, tidelog {self.tidelog}"


def differences(kafka: Any, tidelog: Any, path: str = "") -> Iterator[Difference]:
    if isinstance(kafka, dict) and isinstance(tidelog, dict):
        for key in sorted(kafka.keys() | tidelog.keys(), key=str):
            yield from differences(
                kafka.get(key, ABSENT), tidelog.get(key, ABSENT), f"{path}/{key}"
            )
        return
    if isinstance(kafka, list) and isinstance(tidelog, list):
        keyed_kafka, keyed_tidelog = _keyed(kafka), _keyed(tidelog)
        if keyed_kafka is not None and keyed_tidelog is not None:
            for key in sorted(keyed_kafka.keys() | keyed_tidelog.keys(), key=str):
                yield from differences(
                    keyed_kafka.get(key, ABSENT), keyed_tidelog.get(key, ABSENT), f"{path}[{key}]"
                )
            return
    if kafka != tidelog:
        yield Difference(path.lstrip("/"), render(kafka), render(tidelog))


def _keyed(entries: list[Any]) -> dict[str, Any] | None:
    """A list of entries by their identifying field, or None if it is not such a list."""
    if not entries or not all(isinstance(e, dict) for e in entries):
        return None
    key = next((k for k in ENTRY_KEYS if all(k in e for e in entries)), None)
    if key is None:
        return None
    keyed = {str(e[key]): e for e in entries}
    return keyed if len(keyed) == len(entries) else None


def render(value: Any) -> str:
    return value if value == ABSENT else json.dumps(value, separators=(",", ":"), sort_keys=True)


# docs/kafka.md's table of differences: | sequence | where | Kafka | tidelog | why |
TABLE_HEADING = "## Where tidelog answers otherwise than Kafka"
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|\s*`([^`]*)`\s*\|\s*`([^`]*)`\s*\|(.+)\|$")


@dataclass(frozen=True)
class Allowed:
    sequence: str
    path: str
    kafka: str
    tidelog: str
    why: str

    def matches(self, sequence: str, difference: Difference) -> bool:
        return (
            _glob(self.sequence, sequence)
            and _glob(self.path, difference.path)
            and _glob(self.kafka, difference.kafka)
            and _glob(self.tidelog, difference.tidelog)
        )


def _glob(pattern: str, text: str) -> bool:
    """``*`` stands for any text; every other character for itself (brackets included)."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), text) is not None


def allowed(page: Path) -> list[Allowed]:
    """The rows of the differences table; each must give a reason."""
    text = page.read_text()
    start = text.index(TABLE_HEADING)
    end = text.find("\n## ", start + 1)
    rows = []
    for line in text[start : end if end > 0 else None].splitlines():
        found = _ROW.match(line.strip())
        if found:
            sequence, path, kafka, tidelog, why = (g.strip() for g in found.groups())
            if not why:
                raise ValueError(f"a difference without a reason: {line}")
            rows.append(Allowed(sequence, path, kafka, tidelog, why))
    return rows
