"""Topics: Kafka's naming rules (pure) and their items in the metadata store.

A topic is one item ``("topics", name)``: its id (a UUID, the only thing object keys and log
items ever name), partition count and the configs set on it (defaults are not stored). Partition
counts only grow, as in Kafka. A second item ``("topic-ids", id)`` names the topic of an id, for
the Kafka requests that name topics by id (KIP-516); both are written and deleted together.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace

from tidelog.errors import ConflictError, InvalidRequestError, NotFoundError
from tidelog.log import configs as topic_configs
from tidelog.log import due
from tidelog.storage import (
    Compare,
    ConditionFailedError,
    Delete,
    ItemAbsent,
    MetadataStore,
    Put,
    all_of,
)
from tidelog.storage.configs import ConfigItems
from tidelog.storage.metadata import MAX_TRANSACTION_WRITES

LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME = 249
MAX_PARTITIONS = 10_000
TOPICS_PK = "topics"
TOPIC_IDS_PK = "topic-ids"


class InvalidTopicError(InvalidRequestError):
    default_kafka_error = "INVALID_TOPIC_EXCEPTION"


class InvalidPartitionsError(InvalidRequestError):
    default_kafka_error = "INVALID_PARTITIONS"


class TopicExistsError(ConflictError):
    default_kafka_error = "TOPIC_ALREADY_EXISTS"


class UnknownTopicIdError(NotFoundError):
    default_kafka_error = "UNKNOWN_TOPIC_ID"


class UnknownTopicError(NotFoundError):
    default_kafka_error = "UNKNOWN_TOPIC_OR_PARTITION"


def validate_name(name: object) -> str:
    """Kafka's Topic.validate: 1-249 of ``[a-zA-Z0-9._-]``, and not ``.`` or ``..``."""
    if not isinstance(name, str) or not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(name) > MAX_NAME:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_NAME} characters, "
            f"topic name: {name[:50]}..."
        )
    if not LEGAL.fullmatch(name):
        raise InvalidTopicError(
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )
    return name


def validate_partitions(count: object) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PARTITIONS:
        raise InvalidPartitionsError(
            f"Number of partitions must be an integer from 1 to {MAX_PARTITIONS}, not {count!r}"
        )
    return count


@dataclass(frozen=True)
class Topic:
    name: str
    topic_id: str
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)
    created_ms: int = 0
    version: int = 0  # bumped by every change: the compare-and-set that orders them
    cluster_defaults: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    """The cluster's dynamic defaults as the topic was read (tidelog.log.configs): never
    stored with the topic, and overridden by its own values."""

    @property
    def effective_configs(self) -> dict[str, str]:
        return topic_configs.effective(self.configs, self.cluster_defaults)

    def config(self, name: str) -> str:
        return (
            self.configs.get(name)
            or self.cluster_defaults.get(name)
            or topic_configs.CONFIGS[name].default
        )

    def check_partition(self, partition: int) -> None:
        if not 0 <= partition < self.partitions:
            raise UnknownTopicError(
                f"topic {self.name!r} has no partition {partition} (it has {self.partitions})"
            )

    def to_item(self) -> dict[str, object]:
        return {
            "pk": TOPICS_PK,
            "sk": self.name,
            "topic_id": self.topic_id,
            "partitions": self.partitions,
            "configs": dict(self.configs),
            "created_ms": self.created_ms,
            "version": self.version,
        }

    @classmethod
    def from_item(cls, item: Mapping[str, object]) -> Topic:
        raw_configs = item.get("configs")
        configs = raw_configs if isinstance(raw_configs, dict) else {}
        return cls(
            name=str(item["sk"]),
            topic_id=str(item["topic_id"]),
            partitions=int(str(item["partitions"])),
            configs={str(k): str(v) for k, v in configs.items()},
            created_ms=int(str(item.get("created_ms", 0))),
            version=int(str(item.get("version", 0))),
        )


class Topics:
    """Topic administration on the metadata store."""

    def __init__(self, meta: MetadataStore, clock_ms: Callable[[], int]) -> None:
        self._meta = meta
        self._clock_ms = clock_ms
        self.broker_configs = ConfigItems(meta, topic_configs.BROKER_CONFIGS_PK, clock_ms=clock_ms)

    def cluster_defaults(self) -> dict[str, str]:
        """The topic configs' cluster-wide dynamic defaults, a second old at most."""
        return topic_configs.cluster_defaults(
            self.broker_configs.cached(topic_configs.CLUSTER_DEFAULT)
        )

    def _read(self, item: Mapping[str, object]) -> Topic:
        return replace(Topic.from_item(item), cluster_defaults=self.cluster_defaults())

    def create(self, name: object, partitions: object, configs: Mapping[str, object]) -> Topic:
        topic = Topic(
            name=validate_name(name),
            topic_id=str(uuid.uuid4()),
            partitions=validate_partitions(partitions),
            configs=topic_configs.validate_configs(configs),
            created_ms=self._clock_ms(),
            cluster_defaults=self.cluster_defaults(),
        )
        try:
            self._meta.transact([Put(topic.to_item(), ItemAbsent()), Put(_id_item(topic))])
        except ConditionFailedError as exc:
            raise TopicExistsError(f"Topic '{topic.name}' already exists.") from exc
        return topic

    def create_if_absent(self, name: object, partitions: int) -> Topic:
        """Kafka's auto-creation: the topic, created with the default configs unless it exists.
        Agents racing to create it all answer with the one that won."""
        try:
            return self.create(name, partitions, {})
        except TopicExistsError:
            return self.get(str(name))

    def get(self, name: str) -> Topic:
        item = self._meta.get(TOPICS_PK, validate_name(name))
        if item is None:
            raise UnknownTopicError(f"This server does not host this topic: {name}")
        return self._read(item)

    def name_of(self, topic_id: str) -> str | None:
        """The name of the topic with this id, if there is one (its id item's)."""
        item = self._meta.get(TOPIC_IDS_PK, topic_id)
        return None if item is None else str(item["name"])

    def list(self) -> Iterator[Topic]:
        defaults = self.cluster_defaults()
        return (
            replace(Topic.from_item(item), cluster_defaults=defaults)
            for item in self._meta.query(TOPICS_PK)
        )

    def delete_id(self, topic_id: str) -> Topic:
        """Delete the topic with this id (Kafka's DeleteTopics v6 by id)."""
        name = self.name_of(topic_id) or next(
            (t.name for t in self.list() if t.topic_id == topic_id), None
        )
        try:
            if name is not None:
                return self.delete(name, topic_id)
        except UnknownTopicError:
            pass  # deleted meanwhile
        raise UnknownTopicIdError(f"This server does not host this topic ID: {topic_id}")

    def delete(self, name: str, topic_id: str | None = None) -> Topic:
        """Delete the topic of this name (and of this id, when given)."""
        topic = self.get(name)
        if topic_id is not None and topic.topic_id != topic_id:
            raise UnknownTopicIdError(f"This server does not host this topic ID: {topic_id}")
        try:
            self._meta.transact(
                [
                    Delete(TOPICS_PK, name, Compare("topic_id", "=", topic.topic_id)),
                    Delete(TOPIC_IDS_PK, topic.topic_id),
                ]
            )
        except ConditionFailedError as exc:
            raise UnknownTopicError(f"This server does not host this topic: {name}") from exc
        return topic

    def alter_configs(
        self,
        name: str | Topic,
        changes: Mapping[str, object | None],
        *,
        validate_only: bool = False,
    ) -> Topic:
        """Kafka's incremental alter: set what is given, reset what is given as null. Given
        the topic as read (changes computed from its values), that read is the one the write
        is conditional on."""
        topic = self.get(name) if isinstance(name, str) else name
        to_set = topic_configs.validate_configs({k: v for k, v in changes.items() if v is not None})
        for key in changes:
            if key not in topic_configs.CONFIGS:
                raise topic_configs.InvalidConfigError(f"unknown topic config {key!r}")
        configs = {k: v for k, v in topic.configs.items() if k not in changes} | to_set
        return self._reconfigure(topic, configs, validate_only)

    def replace_configs(
        self, name: str, configs: Mapping[str, object], *, validate_only: bool = False
    ) -> Topic:
        """Kafka's (legacy) AlterConfigs: exactly these are set, every other one reset."""
        topic = self.get(name)
        return self._reconfigure(topic, topic_configs.validate_configs(configs), validate_only)

    def _reconfigure(self, topic: Topic, configs: dict[str, str], validate_only: bool) -> Topic:
        if validate_only:
            return replace(topic, configs=configs)
        altered = self._replace(topic, replace(topic, configs=configs))
        if altered.effective_configs != topic.effective_configs:
            self._mark_due(altered)  # retention or cleanup may now be due at another time
        return altered

    def cluster_defaults_changed(self, before: Mapping[str, str]) -> None:
        """The cluster's defaults were ``before`` (tidelog.log.configs.cluster_defaults): the
        partitions of every topic that now lives by other values are visited again, as a
        topic's own alter has them visited."""
        for topic in self.list():
            if topic.effective_configs != replace(topic, cluster_defaults=before).effective_configs:
                self._mark_due(topic)

    def _mark_due(self, topic: Topic) -> None:
        now = self._clock_ms()
        marks = [due.active(topic.name, topic.topic_id, p, now) for p in range(topic.partitions)]
        for start in range(0, len(marks), MAX_TRANSACTION_WRITES):
            self._meta.transact(marks[start : start + MAX_TRANSACTION_WRITES])

    def add_partitions(self, name: str, count: object) -> Topic:
        topic = self.get(name)
        new_count = validate_partitions(count)
        if new_count <= topic.partitions:
            raise ConflictError(  # the request is well formed; the topic's state refuses it
                f"Topic currently has {topic.partitions} partitions, which is higher than or "
                f"equal to the requested {new_count}.",
                kafka_error="INVALID_PARTITIONS",
            )
        return self._replace(topic, replace(topic, partitions=new_count))

    def _replace(self, old: Topic, new: Topic) -> Topic:
        new = replace(new, version=old.version + 1)
        condition = all_of(
            Compare("topic_id", "=", old.topic_id), Compare("version", "=", old.version)
        )
        try:
            self._meta.write(Put(new.to_item(), condition))
        except ConditionFailedError as exc:
            raise ConflictError(f"topic {old.name!r} changed meanwhile; retry") from exc
        return new


def _id_item(topic: Topic) -> dict[str, object]:
    return {"pk": TOPIC_IDS_PK, "sk": topic.topic_id, "name": topic.name}


class TopicCache:
    """Topic metadata for the produce path, kept for ``ttl_s``, as Kafka clients keep theirs.

    Safe because nothing relies on it for correctness: every commit checks the topic still
    exists with the same id, and a partition beyond the cached count refreshes the entry before
    it is refused. A config change reaches produce within ``ttl_s`` (and the one read it takes:
    while a caller reads an expired entry again, the others are served the old one).
    """

    def __init__(self, topics: Topics, *, ttl_s: float, clock_s: Callable[[], float]) -> None:
        self._topics = topics
        self._ttl_s = ttl_s
        self._clock_s = clock_s
        self._entries: dict[str, tuple[float, Topic]] = {}
        self._names: dict[str, str] = {}  # topic id -> name: an id never changes its topic
        self._listed_s: float | None = None
        self._reading: set[str] = set()  # names being read again now
        self._lock = threading.Lock()

    def get(self, name: str, partition: int | None = None) -> Topic:
        now = self._clock_s()
        with self._lock:
            entry = self._entries.get(name)
            covers = entry is not None and (partition is None or partition < entry[1].partitions)
            # Fresh, or being read again by another caller: a topic many requests name at once
            # (every fetch of a busy agent) is read once a TTL, not once a caller.
            if (
                entry is not None
                and covers
                and (now - entry[0] < self._ttl_s or name in self._reading)
            ):
                return entry[1]
            self._reading.add(name)
        try:
            topic = self._topics.get(name)
        finally:
            with self._lock:
                self._reading.discard(name)
        with self._lock:
            self._entries[name] = (now, topic)
        return topic

    def forget(self, name: str) -> None:
        """This agent changed the topic: its next reader reads it again, so a client that
        changed a topic through an agent sees the change there at once, as on a Kafka broker.
        Other agents see it within ``ttl_s``."""
        with self._lock:
            self._entries.pop(name, None)

    def by_id(self, topic_id: str, partition: int | None = None) -> Topic:
        """The topic of a Kafka topic id (KIP-516), for the requests that name topics so. An
        id never names another topic, so its name is read once; the topic itself is kept as
        ``get`` keeps it."""
        name = self._names.get(topic_id)
        if name is None:
            name = self._topics.name_of(topic_id) or self._listed(topic_id)
        if name is not None:
            try:
                topic = self.get(name, partition)
            except UnknownTopicError:
                topic = None
            if topic is not None and topic.topic_id == topic_id:
                with self._lock:
                    self._names[topic_id] = name
                return topic
        raise UnknownTopicIdError(f"This server does not host this topic ID: {topic_id}")

    def _listed(self, topic_id: str) -> str | None:
        """Topics created before id items were kept have none: they are found by listing,
        at most once per ``ttl_s`` (an id nobody created costs a listing a second)."""
        now = self._clock_s()
        with self._lock:
            if self._listed_s is not None and now - self._listed_s < self._ttl_s:
                return None
            self._listed_s = now
        return next((t.name for t in self._topics.list() if t.topic_id == topic_id), None)
