"""What the agent answers to each Kafka API, over the same core as the HTTP functions: the same
topics, the same commits, the same reads. Answers are version-free (see tidelog.kafka.codec).

Every handler is synchronous and runs in the agent's thread pool: the core's stores are
blocking, and a Lambda function calls the same code the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tidelog import runtime
from tidelog.errors import TidelogError
from tidelog.kafka import access, admin, authorization, configs, epochs, producers, replicas
from tidelog.kafka.apis import API_VERSIONS, LEGACY_PRODUCE, ApiKey
from tidelog.kafka.authorizer import Access, Authorizer
from tidelog.kafka.codec import NONE, Answer, Request, code, field, items
from tidelog.kafka.consumer_groups import ConsumerGroupHandlers
from tidelog.kafka.fetch import READ_COMMITTED, FetchHandler, heads_of
from tidelog.kafka.groups import GroupHandlers
from tidelog.kafka.metadata import MetadataHandlers
from tidelog.kafka.offsets import OffsetHandlers
from tidelog.kafka.registry import Brokers
from tidelog.kafka.topicrefs import TopicRef, topic_ref
from tidelog.kafka.transactions import TransactionHandlers
from tidelog.log.read.serve import list_offset
from tidelog.log.topics import Topic
from tidelog.log.write.produce import log_append_time, parse_raw
from tidelog.log.write.producers import InvalidProducerEpochError
from tidelog.log.write.validate import ProducedBatch
from tidelog.log.write.writer import AppendRequest
from tidelog.records.errors import InvalidRecordError
from tidelog.transactions.coordinator import verify
from tidelog.txn.guard import TxnGuard
from tidelog.txn.state import ProducerFencedError, Txn

# ListOffsets' special timestamps. The local log (KIP-405) is the whole log: nothing is tiered.
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
_SINCE = {LATEST: 1, EARLIEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}
_SPECS = {
    EARLIEST: "earliest",
    LATEST: "latest",
    MAX_TIMESTAMP: "max-timestamp",
    EARLIEST_LOCAL: "earliest",
}


class Handlers:
    """``brokers`` is this agent and the live ones beside it, which clients are shown; with an
    ``authorizer``, every request passes its API's gate (tidelog.kafka.authorization)."""

    def __init__(self, brokers: Brokers, authorizer: Authorizer | None = None) -> None:
        self.brokers = brokers
        self.authorizer = authorizer
        self.metadata = MetadataHandlers(brokers)
        groups = GroupHandlers(brokers)
        consumer_groups = ConsumerGroupHandlers()
        offsets = OffsetHandlers()
        transactions = TransactionHandlers()
        self._apis: Mapping[ApiKey, Callable[[Request], Answer]] = {
            ApiKey.API_VERSIONS: self.api_versions,
            ApiKey.METADATA: self.metadata.metadata,
            ApiKey.PRODUCE: self.produce,
            ApiKey.FETCH: FetchHandler().fetch,
            ApiKey.LIST_OFFSETS: self.list_offsets,
            ApiKey.INIT_PRODUCER_ID: transactions.init_producer_id,
            ApiKey.ADD_PARTITIONS_TO_TXN: transactions.add_partitions_to_txn,
            ApiKey.ADD_OFFSETS_TO_TXN: transactions.add_offsets_to_txn,
            ApiKey.END_TXN: transactions.end_txn,
            ApiKey.TXN_OFFSET_COMMIT: transactions.txn_offset_commit,
            ApiKey.DESCRIBE_TRANSACTIONS: transactions.describe_transactions,
            ApiKey.LIST_TRANSACTIONS: transactions.list_transactions,
            ApiKey.DESCRIBE_PRODUCERS: producers.describe_producers,
            ApiKey.FIND_COORDINATOR: groups.find_coordinator,
            ApiKey.JOIN_GROUP: groups.join_group,
            ApiKey.SYNC_GROUP: groups.sync_group,
            ApiKey.HEARTBEAT: groups.heartbeat,
            ApiKey.LEAVE_GROUP: groups.leave_group,
            ApiKey.OFFSET_COMMIT: offsets.offset_commit,
            ApiKey.OFFSET_FETCH: offsets.offset_fetch,
            ApiKey.OFFSET_DELETE: offsets.offset_delete,
            ApiKey.DESCRIBE_GROUPS: groups.describe_groups,
            ApiKey.LIST_GROUPS: groups.list_groups,
            ApiKey.DELETE_GROUPS: groups.delete_groups,
            ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_groups.heartbeat,
            ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_groups.describe,
            ApiKey.CREATE_TOPICS: lambda r: admin.create_topics(r.body),
            ApiKey.DELETE_TOPICS: lambda r: admin.delete_topics(r.body),
            ApiKey.CREATE_PARTITIONS: lambda r: admin.create_partitions(r.body),
            ApiKey.DELETE_RECORDS: lambda r: admin.delete_records(r.body),
            ApiKey.DESCRIBE_CONFIGS: lambda r: configs.describe_configs(
                r, brokers.me, brokers.live
            ),
            ApiKey.ALTER_CONFIGS: lambda r: configs.alter_configs(r, brokers.me, brokers.live),
            ApiKey.LIST_CONFIG_RESOURCES: lambda r: configs.list_config_resources(r, brokers.live),
            ApiKey.INCREMENTAL_ALTER_CONFIGS: lambda r: configs.incremental_alter_configs(
                r, brokers.me, brokers.live
            ),
            ApiKey.DESCRIBE_LOG_DIRS: replicas.describe_log_dirs,
            ApiKey.ALTER_REPLICA_LOG_DIRS: replicas.alter_replica_log_dirs,
            ApiKey.ELECT_LEADERS: replicas.elect_leaders,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: epochs.offset_for_leader_epoch,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: lambda r: replicas.alter_partition_reassignments(
                r, brokers.live
            ),
            ApiKey.LIST_PARTITION_REASSIGNMENTS: replicas.list_partition_reassignments,
            ApiKey.DESCRIBE_ACLS: lambda r: access.describe_acls(r, authorizer),
            ApiKey.CREATE_ACLS: lambda r: access.create_acls(r, authorizer),
            ApiKey.DELETE_ACLS: lambda r: access.delete_acls(r, authorizer),
            ApiKey.DESCRIBE_CLIENT_QUOTAS: access.describe_client_quotas,
            ApiKey.ALTER_CLIENT_QUOTAS: access.alter_client_quotas,
            ApiKey.SASL_HANDSHAKE: access.sasl_handshake,
            ApiKey.SASL_AUTHENTICATE: access.sasl_authenticate,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: access.describe_user_scram_credentials,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: access.alter_user_scram_credentials,
            ApiKey.DESCRIBE_CLUSTER: self.metadata.describe_cluster,
            ApiKey.DESCRIBE_TOPIC_PARTITIONS: self.metadata.describe_topic_partitions,
        }

    @property
    def apis(self) -> frozenset[ApiKey]:
        """The APIs answered here: exactly those advertised (tests/kafka/test_codec.py)."""
        return frozenset(self._apis)

    def handle(self, request: Request, queued: Callable[[], None] = lambda: None) -> Answer:
        """Answer ``request``. ``queued`` is called once a produce's batches are queued in the
        group commit, whose order is theirs from then on: the connection's next request may
        start (see tidelog.kafka.server). Other requests take effect only when answered."""
        call = self._apis[request.api_key]
        if request.api_key == ApiKey.PRODUCE:
            call = functools.partial(self.produce, queued=queued)
        if self.authorizer is None:
            return call(request)
        return authorization.authorize(request, Access(self.authorizer, request), call)

    # ApiVersions -------------------------------------------------------------------------

    def api_versions(self, request: Request) -> Answer:
        return api_versions_answer(NONE)

    # Produce -----------------------------------------------------------------------------

    def produce(self, request: Request, queued: Callable[[], None] = lambda: None) -> Answer:
        body = request.body
        if request.api_version in LEGACY_PRODUCE:
            return self._refuse_produce(body, "UNSUPPORTED_VERSION")
        guards = _Guards(field(body, "transactional_id"))
        now = runtime.clock_ms()
        # A client that closed its connection holds the outcome unknown and may already have
        # sent the batches again (under a new epoch, even): what has not committed yet is
        # withdrawn. acks=0 is written whatever happens to the connection, as on Kafka.
        withdrawn = request.gone if int(field(body, "acks", -1)) != 0 else None
        placed: list[tuple[TopicRef, int, Topic | None, AppendRequest | TidelogError]] = []
        for topic_data in items(body.topic_data):
            ref = topic_ref(topic_data, "name")
            for partition_data in items(topic_data.partition_data):
                index = int(partition_data.index)
                try:
                    if ref.error is not None:
                        raise ref.error
                    found = runtime.topic_cache().get(ref.name, index)
                    found.check_partition(index)
                    batches = parse_raw(found, bytes(partition_data.records or b""), now)
                    guard = guards.of(ref.name, index, batches)
                    asked = AppendRequest(found, index, batches, withdrawn=withdrawn, guard=guard)
                    placed.append((ref, index, found, asked))
                except TidelogError as exc:
                    placed.append((ref, index, None, exc))
        appends = [a for _, _, _, a in placed if isinstance(a, AppendRequest)]
        pending = runtime.appender().submit(appends) if appends else []
        queued()
        results = iter([future.result() for future in pending])
        answers: dict[TopicRef, list[Answer]] = {}
        for ref, index, topic, append in placed:
            outcome: Any = append
            if isinstance(append, AppendRequest):
                result = next(results)
                outcome = result.error if result.error is not None else result
            answers.setdefault(ref, []).append(_produce_partition(index, topic, outcome, now))
        return {
            "responses": [
                {"name": ref.name, "topic_id": ref.topic_id, "partition_responses": partitions}
                for ref, partitions in answers.items()
            ],
            "throttle_time": 0,
        }

    @staticmethod
    def _refuse_produce(body: Any, error: str) -> Answer:
        return {
            "responses": [
                {
                    "name": t.name,  # only the versions before topic ids are refused
                    "partition_responses": [
                        _produce_error(int(p.index), code(error), None)
                        for p in items(t.partition_data)
                    ],
                }
                for t in items(body.topic_data)
            ],
            "throttle_time": 0,
        }

    # ListOffsets -------------------------------------------------------------------------

    def list_offsets(self, request: Request) -> Answer:
        reader = runtime.log_reader()
        committed = int(field(request.body, "isolation_level", 0)) == READ_COMMITTED
        # The heads the earliest and latest offsets come from, in one read: a wave of
        # consumers starting from either asks for several partitions each, at once.
        heads = heads_of(
            (str(t.name), int(p.partition_index))
            for t in items(request.body.topics)
            for p in items(t.partitions)
            if int(p.timestamp) in _SPECS and _SPECS[int(p.timestamp)] != "max-timestamp"
        )
        topics = []
        for topic_request in items(request.body.topics):
            name = str(topic_request.name)
            partitions = []
            for p in items(topic_request.partitions):
                index, at = int(p.partition_index), int(p.timestamp)
                # No epoch: batches carry none (tidelog.kafka.epochs), so a consumer that
                # starts here has no position to validate when leaders change.
                answer = {"partition_index": index, "error_code": NONE, "leader_epoch": -1}
                try:
                    topic = runtime.topic_cache().get(name, index)
                    topic.check_partition(index)
                    if at < 0 and request.api_version < _SINCE.get(at, 2**15):
                        raise _unsupported_timestamp(at, request.api_version)
                    if at == LATEST_TIERED:  # nothing is tiered: Kafka's answer without it
                        answer.update(offset=-1, timestamp=-1, leader_epoch=-1)
                        partitions.append(answer)
                        continue
                    offset, timestamp = list_offset(
                        reader,
                        topic,
                        index,
                        _SPECS.get(at, str(at)),
                        committed=committed,
                        head=heads.get((name, index)),
                    )
                    answer.update(offset=offset, timestamp=timestamp)
                except TidelogError as exc:
                    answer.update(error_code=exc.kafka_error.code, offset=-1, timestamp=-1)
                partitions.append(answer)
            topics.append({"name": name, "partitions": partitions})
        return {"throttle_time": 0, "topics": topics}


class _Guards:
    """A transactional produce's guards: each partition must be in its producer's open
    transaction now (KIP-890 part 1), and still be when it commits. The transactional id is
    read once for the whole request, whatever the number of partitions."""

    def __init__(self, transactional_id: str | None) -> None:
        self._id = transactional_id
        self._read = False
        self._txn: Txn | None = None

    def of(self, name: str, partition: int, batches: Sequence[ProducedBatch]) -> TxnGuard | None:
        first = next((b for b in batches if b.transactional), None)
        if self._id is None or first is None:
            return None  # no transaction; transactional batches alone are refused when planned
        if not self._read:
            self._txn, self._read = runtime.transactions().read(self._id), True
        try:
            return verify(self._txn, first.producer_id, first.producer_epoch, (name, partition))
        except ProducerFencedError as exc:
            # A partition leader answers an old epoch so (Kafka's ProducerStateManager).
            raise InvalidProducerEpochError(exc.message) from exc


def api_versions_answer(error_code: int) -> Answer:
    return {
        "error_code": error_code,
        "api_keys": [
            {"api_key": int(key), "min_version": low, "max_version": high}
            for key, (low, high) in sorted(API_VERSIONS.items())
        ],
        "throttle_time": 0,
    }


def _produce_partition(index: int, topic: Topic | None, outcome: Any, now: int) -> Answer:
    if isinstance(outcome, TidelogError):
        answer = _produce_error(index, outcome.kafka_error.code, outcome.message)
        # KIP-467 (v8+): which records of the batch were refused, and why.
        answer["record_errors"] = [
            {"batch_index": i, "batch_index_error_message": why}
            for i, why in (outcome.record_errors if isinstance(outcome, InvalidRecordError) else ())
        ]
        return answer
    assert topic is not None
    stamp = log_append_time(topic, now)
    return {
        "index": index,
        "error_code": NONE,
        "base_offset": outcome.base_offset,
        "log_append_time": -1 if stamp is None else stamp,
        "log_start_offset": outcome.log_start_offset,
        "record_errors": [],
        "error_message": None,
    }


def _produce_error(index: int, error_code: int, message: str | None) -> Answer:
    return {
        "index": index,
        "error_code": error_code,
        "base_offset": -1,
        "log_append_time": -1,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": message,
    }


def _unsupported_timestamp(at: int, version: int) -> TidelogError:
    """Kafka's answer to a special timestamp the request's version does not have yet."""
    return TidelogError(
        f"ListOffsets v{version} has no timestamp {at}: -1 (latest) and -2 (earliest) from v1, "
        "-3 (max timestamp) from v7, -4 (earliest local) from v8, -5 (latest tiered) from v9",
        kafka_error="UNSUPPORTED_VERSION",
    )
