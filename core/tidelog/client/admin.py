"""Topics and offsets over the HTTP API: what Kafka's AdminClient does, in tidelog's shapes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from tidelog.client import errors
from tidelog.client.http import Http


@dataclass(frozen=True)
class PartitionOffsets:
    partition: int
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int = -1  # where read_committed reads stop: an open transaction
    open_transactions: int = 0
    size_bytes: int | None = None  # described with sizes=True only

    @property
    def records(self) -> int:
        return self.high_watermark - self.log_start_offset


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: str
    partitions: int
    configs: dict[str, Any]
    offsets: tuple[PartitionOffsets, ...] = ()  # described topics only

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> TopicInfo:
        partitions = body["partitions"]
        if isinstance(partitions, list):
            offsets = tuple(PartitionOffsets(**p) for p in partitions)
            return cls(body["name"], body["topic_id"], len(offsets), body["configs"], offsets)
        return cls(body["name"], body["topic_id"], partitions, body["configs"])


@dataclass(frozen=True)
class UserCredential:
    mechanism: str
    iterations: int


@dataclass(frozen=True)
class KafkaUser:
    """A user Kafka clients log in as (SASL/SCRAM, PLAIN): each mechanism and its iterations."""

    name: str
    credentials: tuple[UserCredential, ...]

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> KafkaUser:
        return cls(body["name"], tuple(UserCredential(**c) for c in body["credentials"]))


@dataclass(frozen=True)
class KafkaAcl:
    """One of Kafka's ACLs, in lower case as the API names them: ``KafkaAcl("topic",
    "clicks", "User:alice", "read")`` lets alice read clicks from any host."""

    resource_type: str  # topic, group, cluster (named kafka-cluster), transactional_id
    resource_name: str
    principal: str
    operation: str  # read, write, create, delete, alter, describe, ..., all
    permission: str = "allow"  # or deny, which wins
    pattern_type: str = "literal"  # or prefixed: every name that starts with resource_name
    host: str = "*"

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> KafkaAcl:
        return cls(**body)

    def as_json(self) -> dict[str, str]:
        return dict(vars(self))


@dataclass(frozen=True)
class OffsetAt:
    """ListOffsets' answer: the offset, and the timestamp of its record (-1 when none)."""

    offset: int
    timestamp: int


class Admin:
    """``Admin()`` talks to the API that ``TIDELOG_URL`` / ``TIDELOG_CLUSTER`` name (else
    ``tidelog dev``); ``Admin(url, cluster=..., sign=...)`` to another. Errors are tidelog's
    (``tidelog.errors``), each carrying its Kafka name (``.kafka_error.name``)."""

    def __init__(self, url: str | None = None, **options: Any) -> None:
        self.http = options.pop("http", None) or Http(url, **options)

    def list_topics(self) -> list[TopicInfo]:
        return [TopicInfo.from_json(t) for t in self.http.get("/v1/topics")["topics"]]

    def describe_topic(self, name: str, *, sizes: bool = False, create: bool = False) -> TopicInfo:
        """The topic and its partitions' offsets; ``sizes``: their sizes in bytes too (Kafka's
        DescribeLogDirs); ``create``: created first if it does not exist and the cluster
        auto-creates topics (Kafka's Metadata, as producers ask)."""
        params = {"sizes": "true"} if sizes else {}
        if create:
            params["create"] = "true"
        return TopicInfo.from_json(self.http.get(f"/v1/topics/{_seg(name)}", **params))

    def create_topic(
        self, name: str, partitions: int | None = None, configs: Mapping[str, Any] | None = None
    ) -> TopicInfo:
        body: dict[str, Any] = {"name": name, "configs": dict(configs or {})}
        if partitions is not None:
            body["partitions"] = partitions
        return TopicInfo.from_json(self.http.post("/v1/topics", body))

    def alter_configs(self, name: str, configs: Mapping[str, Any]) -> TopicInfo:
        """Set (or with a None value, reset) each named config; the others stay."""
        answer = self.http.request(
            "PATCH", f"/v1/topics/{_seg(name)}/configs", json={"configs": dict(configs)}
        )
        return TopicInfo.from_json(answer.json())

    def add_partitions(self, name: str, count: int) -> TopicInfo:
        """Grow the topic to ``count`` partitions in all (Kafka's CreatePartitions)."""
        return TopicInfo.from_json(
            self.http.post(f"/v1/topics/{_seg(name)}/partitions", {"count": count})
        )

    def delete_records(self, name: str, offsets: Mapping[int, int]) -> dict[int, int]:
        """Kafka's DeleteRecords: each partition's log now starts at its offset (-1: at its
        high watermark); each one's new log start offset. The first partition refused raises
        its error (OFFSET_OUT_OF_RANGE beyond the high watermark, POLICY_VIOLATION on a
        compacted topic), after every other partition named took effect."""
        body = {"partitions": [{"partition": p, "offset": o} for p, o in offsets.items()]}
        answer = self.http.post(f"/v1/topics/{_seg(name)}/delete-records", body)
        starts = {}
        for result in answer["partitions"]:
            if "error" in result:
                raise errors.from_item(result, f"partition {result['partition']}: ")
            starts[result["partition"]] = result["log_start_offset"]
        return starts

    def delete_topic(self, name: str) -> None:
        self.http.request("DELETE", f"/v1/topics/{_seg(name)}")

    def offset_at(self, topic: str, partition: int, at: str | int) -> OffsetAt:
        """``at``: "earliest", "latest", "max-timestamp" (the record with the largest
        timestamp), or a time in ms (the first record at or after it; (-1, -1) when none is, as
        Kafka's ListOffsets answers)."""
        answer = self.http.get(f"/v1/topics/{_seg(topic)}/partitions/{partition}/offsets", at=at)
        return OffsetAt(answer["offset"], answer["timestamp"])

    def list_users(self) -> list[KafkaUser]:
        return [KafkaUser.from_json(u) for u in self.http.get("/v1/users")["users"]]

    def set_password(
        self,
        user: str,
        password: str,
        *,
        mechanism: str = "SCRAM-SHA-512",
        iterations: int = 8192,
    ) -> KafkaUser:
        """Make ``user`` log in with ``password`` (Kafka's AlterUserScramCredentials, over
        the signed API: the way in before any Kafka user exists). The server salts it."""
        body = {"password": password, "mechanism": mechanism, "iterations": iterations}
        answer = self.http.request("PUT", f"/v1/users/{_seg(user)}", json=body)
        return KafkaUser.from_json(answer.json())

    def delete_user(self, user: str, mechanism: str | None = None) -> KafkaUser:
        """Remove the user's credentials (one mechanism's, if named); what is left."""
        params = {"mechanism": mechanism} if mechanism else {}
        answer = self.http.request("DELETE", f"/v1/users/{_seg(user)}", params=params)
        return KafkaUser.from_json(answer.json())

    def list_acls(
        self,
        *,
        principal: str | None = None,
        resource_type: str | None = None,
        resource_name: str | None = None,
    ) -> list[KafkaAcl]:
        """The cluster's ACLs; with a principal, resource type or name, those only."""
        wanted = (
            ("principal", principal),
            ("resource_type", resource_type),
            ("resource_name", resource_name),
        )
        params = {name: value for name, value in wanted if value is not None}
        answer = self.http.request("GET", "/v1/acls", params=params).json()
        return [KafkaAcl.from_json(a) for a in answer["acls"]]

    def add_acl(self, acl: KafkaAcl) -> KafkaAcl:
        """Store ``acl`` (agents apply it within 5 seconds); adding one twice is one."""
        return KafkaAcl.from_json(self.http.request("POST", "/v1/acls", json=acl.as_json()).json())

    def remove_acl(self, acl: KafkaAcl) -> KafkaAcl:
        """Remove ``acl``, named field for field (agents stop applying it within 5 seconds)."""
        return KafkaAcl.from_json(
            self.http.request("DELETE", "/v1/acls", params=acl.as_json()).json()
        )

    def cluster(self) -> dict[str, Any]:
        result: dict[str, Any] = self.http.get("/v1/cluster")
        return result

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _seg(name: str) -> str:
    return quote(name, safe="")
