"""Transactions over the log and the coordinator, on the in-memory stores: markers, the last
stable offset, the aborted index, read_committed reads, fencing, timeouts, offsets in a
transaction, an unfinished end finished by the next request, and the delayed requests of
KAFKA-17754 replayed."""

from __future__ import annotations

import pytest
from tests.support.txnlog import txn_log

from tidelog.errors import RetriableError
from tidelog.groups.model import Group, IllegalGenerationError
from tidelog.groups.model import State as GroupState
from tidelog.log.aborted import aborted_between, forget_below
from tidelog.log.head import read_head
from tidelog.log.write.plan import StaleMarkerError, TransactionalIdRequiredError
from tidelog.log.write.validate import ProducedBatch, validate_batches
from tidelog.log.write.writer import AppendRequest
from tidelog.records import RecordBatchBuilder
from tidelog.transactions import offsets
from tidelog.transactions.coordinator import TransactionalIdNotFoundError
from tidelog.transactions.offsets import PendingOffset
from tidelog.txn.guard import TxnGuard
from tidelog.txn.markers import marker_batch
from tidelog.txn.state import (
    ConcurrentTransactionsError,
    InvalidTxnStateError,
    ProducerFencedError,
    State,
    end_txn,
)


def values(records):
    return [r.value for r in records]


def head(t, partition=0):
    return read_head(t.log.meta, t.topic.topic_id, partition)


def test_a_committed_transaction_is_read_whole_and_markers_are_never_records(tmp_path):
    t = txn_log(tmp_path)
    p = t.producer("tx")
    t.begin(p, [0, 1])
    t.send(p, 0, [b"a", b"b"])
    t.send(p, 1, [b"c"])
    assert head(t).open_txns == {p.producer_id: 0}
    assert head(t).last_stable_offset == 0
    assert t.read_committed(0) == []  # nothing stable yet
    assert values(t.read_uncommitted(0)) == [b"a", b"b"]
    t.end(p, commit=True)
    assert head(t).open_txns == {}
    assert (head(t).next_offset, head(t).last_stable_offset) == (3, 3)  # the marker took 2
    assert values(t.read_committed(0)) == [b"a", b"b"]
    assert values(t.read_committed(1)) == [b"c"]
    assert t.coordinator.describe("tx").state == State.COMPLETE_COMMIT


def test_an_aborted_transaction_is_indexed_and_filtered_by_every_reader(tmp_path):
    t = txn_log(tmp_path)
    plain = t.log.produce(0, [(None, b"plain")])
    p = t.producer("tx")
    t.begin(p, [0])
    t.send(p, 0, [b"x", b"y"])
    t.log.produce(0, [(None, b"between")])
    t.end(p, commit=False)
    assert plain == [0]
    (aborted,) = aborted_between(t.log.meta, t.topic.topic_id, 0, 0, 10)
    assert (aborted.producer_id, aborted.first_offset, aborted.last_offset) == (p.producer_id, 1, 4)
    assert values(t.read_committed(0)) == [b"plain", b"between"]
    assert values(t.read_uncommitted(0)) == [b"plain", b"x", b"y", b"between"]


def test_an_open_transaction_holds_read_committed_at_its_first_offset(tmp_path):
    t = txn_log(tmp_path)
    t.log.produce(0, [(None, b"before")])
    p = t.producer("tx")
    t.begin(p, [0])
    t.send(p, 0, [b"open"])
    t.log.produce(0, [(None, b"after")])  # plain, but past the LSO: waits for the end
    data = t.log.reader.fetch(t.topic.topic_id, 0, 0, 10**6, committed=True)
    assert (data.last_stable_offset, data.high_watermark, data.next_offset) == (1, 3, 1)
    assert t.log.reader.fetch(t.topic.topic_id, 0, 1, 10**6, committed=True).batches == []
    t.end(p, commit=True)
    assert values(t.read_committed(0)) == [b"before", b"open", b"after"]


def test_transactional_batches_need_their_transactional_id(tmp_path):
    t = txn_log(tmp_path)
    p = t.producer("tx")
    t.begin(p, [0])
    request = t.request(p, 0, [b"v"])
    (result,) = t.log.writer.append([AppendRequest(t.topic, 0, request.batches)])
    assert isinstance(result.error, TransactionalIdRequiredError)
    assert head(t).next_offset == 0


def test_a_partition_not_added_is_refused_at_once(tmp_path):
    t = txn_log(tmp_path)
    p = t.producer("tx")
    t.begin(p, [0])
    with pytest.raises(InvalidTxnStateError, match="AddPartitionsToTxn"):
        t.guard(p, 1)


def test_kafka_17754_a_delayed_produce_never_lands_in_the_next_transaction(tmp_path):
    """A produce sent in transaction 1 is held (a slow agent, a long GC) while the producer
    aborts, begins transaction 2 with the same partition and writes to it; then the held
    request commits. On Kafka before KIP-890 it joins transaction 2, or hangs the partition."""
    t = txn_log(tmp_path)
    p = t.producer("tx")
    t.begin(p, [0])
    held = t.request(p, 0, [b"late"])  # verified and guarded in transaction 1
    p.sequences[0] = 0  # the client gave it up: its retry in a new transaction reuses sequence 0
    t.end(p, commit=False)
    t.begin(p, [0])
    assert t.send(p, 0, [b"second"]).error is None
    (late,) = t.log.writer.append([held])
    assert isinstance(late.error, InvalidTxnStateError)
    t.end(p, commit=True)
    assert values(t.read_committed(0)) == [b"second"]
    assert head(t).open_txns == {}


def test_a_delayed_marker_never_closes_the_next_transaction(tmp_path):
    """An agent writing transaction 1's markers stalls; another finishes transaction 1 and
    the producer opens transaction 2 on the same partition; the stalled marker then lands."""
    t = txn_log(tmp_path)
    p = t.producer("tx")
    t.begin(p, [0])
    t.send(p, 0, [b"one"])
    # The stalled agent's decision, alone (its markers and completion never came).
    prepared = t.coordinator._move(
        "tx", lambda txn, now: end_txn(txn, p.producer_id, p.epoch, True, now_ms=now)
    )
    t.log.clock.now += 5000
    t.begin(p, [0])  # finds the decision unfinished: finishes it, then begins transaction 2
    t.send(p, 0, [b"two"])
    data = marker_batch(p.producer_id, p.epoch, commit=True, timestamp_ms=t.log.clock.now)
    marker = ProducedBatch(
        data, 1, 0, p.producer_id, p.epoch, -1, -1, transactional=True, marker="COMMIT"
    )
    (late,) = t.log.writer.append(
        [AppendRequest(t.topic, 0, [marker], guard=TxnGuard.of(prepared))]
    )
    assert isinstance(late.error, StaleMarkerError)
    assert head(t).open_txns == {p.producer_id: 2}  # transaction 2 still open
    assert values(t.read_committed(0)) == [b"one"]


def test_a_new_instance_fences_the_old_and_aborts_its_transaction(tmp_path):
    t = txn_log(tmp_path)
    old = t.producer("tx")
    t.begin(old, [0])
    t.send(old, 0, [b"zombie"])
    new = t.producer("tx")
    assert (new.producer_id, new.epoch) == (old.producer_id, old.epoch + 2)
    assert head(t).open_txns == {}
    assert values(t.read_committed(0)) == []
    with pytest.raises(ProducerFencedError):
        t.begin(old, [0])
    with pytest.raises(ProducerFencedError):
        t.end(old, commit=True)


def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced(tmp_path):
    t = txn_log(tmp_path)
    p = t.producer("tx", timeout_ms=1000)
    t.begin(p, [0, 1])
    t.send(p, 0, [b"slow"])
    assert t.coordinator.expire() == 0
    t.log.clock.now += 1001
    assert t.coordinator.expire() == 1
    assert t.coordinator.expire() == 0  # its due item is gone
    txn = t.coordinator.describe("tx")
    assert (txn.state, txn.epoch) == (State.COMPLETE_ABORT, p.epoch + 1)
    assert head(t).open_txns == {}
    assert values(t.read_committed(0)) == []
    with pytest.raises(ProducerFencedError):
        t.end(p, commit=True)


def test_a_decision_left_unfinished_is_finished_by_the_next_request(tmp_path):
    t = txn_log(tmp_path)
    p = t.producer("tx")
    t.begin(p, [0])
    t.send(p, 0, [b"v"])
    writer = t.coordinator._append

    def crash(requests):
        raise RetriableError("the agent died writing markers")

    t.coordinator._append = crash
    t.end(p, commit=True)  # decided: the client hears success, as from Kafka
    t.coordinator._append = writer
    assert t.coordinator.describe("tx").state == State.PREPARE_COMMIT
    with pytest.raises(ConcurrentTransactionsError):
        t.begin(p, [0])  # too soon: its decider may still be at work
    t.log.clock.now += 1001
    t.begin(p, [0])  # finishes the commit, then begins the next transaction
    assert values(t.read_committed(0)) == [b"v"]
    assert t.coordinator.describe("tx").state == State.ONGOING


def test_the_sweep_finishes_a_decision_left_unfinished(tmp_path):
    t = txn_log(tmp_path)
    p = t.producer("tx", timeout_ms=1000)
    t.begin(p, [0])
    t.send(p, 0, [b"v"])
    t.coordinator._append = lambda requests: (_ for _ in ()).throw(RetriableError("down"))
    t.end(p, commit=False)
    t.coordinator._append = t.log.writer.append
    t.log.clock.now += 1001
    assert t.coordinator.expire() == 1
    assert t.coordinator.describe("tx").state == State.COMPLETE_ABORT
    assert head(t).open_txns == {}


def test_offsets_in_a_transaction_appear_only_at_its_commit(tmp_path):
    t = txn_log(tmp_path)
    p = t.producer("tx")
    for commit in (False, True):
        t.begin(p, [0])
        t.send(p, 0, [b"v"])
        t.coordinator.add_offsets("tx", p.producer_id, p.epoch, "g")
        wanted = [PendingOffset(t.topic.name, 0, 42 + commit, "m")]
        t.coordinator.commit_offsets("tx", p.producer_id, p.epoch, "g", wanted)
        assert offsets.unstable(t.log.meta, "g") == {(t.topic.name, 0)}
        t.end(p, commit=commit)
        assert offsets.unstable(t.log.meta, "g") == set()
    items = [i for i in t.log.meta.query("offsets#g") if "offset" in i]
    assert [(i["offset"], i["metadata"]) for i in items] == [(43, "m")]


def test_a_partition_named_twice_is_held_once_at_the_last_offset(tmp_path):
    t = txn_log(tmp_path)
    p = t.producer("tx")
    t.begin(p, [0])
    t.coordinator.add_offsets("tx", p.producer_id, p.epoch, "g")
    wanted = [PendingOffset(t.topic.name, 0, o, "") for o in (3, 4, 5)]
    t.coordinator.commit_offsets("tx", p.producer_id, p.epoch, "g", wanted)
    t.end(p, commit=True)
    items = [i for i in t.log.meta.query("offsets#g") if "offset" in i]
    assert [i["offset"] for i in items] == [5]


def test_offsets_in_a_transaction_are_fenced_by_the_group_generation(tmp_path):
    t = txn_log(tmp_path)
    t.groups["g"] = Group("g", GroupState.STABLE, 5, "consumer", 3)
    p = t.producer("tx")
    t.begin(p, [0])
    t.coordinator.add_offsets("tx", p.producer_id, p.epoch, "g")
    wanted = [PendingOffset(t.topic.name, 0, 1, "")]
    with pytest.raises(IllegalGenerationError):
        t.coordinator.commit_offsets("tx", p.producer_id, p.epoch, "g", wanted, generation=4)
    with pytest.raises(InvalidTxnStateError, match="AddOffsetsToTxn"):
        t.coordinator.commit_offsets("tx", p.producer_id, p.epoch, "other", wanted)
    t.coordinator.commit_offsets("tx", p.producer_id, p.epoch, "g", wanted, generation=5)


def test_an_operator_aborts_a_hanging_transaction(tmp_path):
    t = txn_log(tmp_path)
    p = t.producer("tx")
    t.begin(p, [0])
    t.send(p, 0, [b"hung"])
    assert [x.transactional_id for x in t.coordinator.list()] == ["tx"]
    t.coordinator.abort("tx")
    assert head(t).open_txns == {}
    with pytest.raises(InvalidTxnStateError):
        t.coordinator.abort("tx")
    with pytest.raises(TransactionalIdNotFoundError):
        t.coordinator.describe("nope")


def test_the_aborted_index_search_stops_where_kafkas_does(tmp_path):
    t = txn_log(tmp_path)
    for i in range(3):
        p = t.producer(f"tx{i}")
        t.begin(p, [0])
        t.send(p, 0, [b"v"])
        t.end(p, commit=False)  # aborted: offsets 2i (data) and 2i + 1 (marker)
    found = aborted_between(t.log.meta, t.topic.topic_id, 0, 2, 3)
    assert [(a.first_offset, a.last_offset) for a in found] == [(2, 3)]
    assert len(aborted_between(t.log.meta, t.topic.topic_id, 0, 0, 6)) == 3
    assert forget_below(t.log.meta, t.topic.topic_id, 0, 4) == 2
    assert len(aborted_between(t.log.meta, t.topic.topic_id, 0, 0, 6)) == 1


def test_a_plain_produce_of_transactional_bytes_changes_nothing(tmp_path):
    t = txn_log(tmp_path)
    builder = RecordBatchBuilder(
        producer_id=1, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    builder.append(None, b"v", (), 0)
    batches = validate_batches(builder.build(), max_message_bytes=10**6, log_append_time=None)
    (result,) = t.log.writer.append([AppendRequest(t.topic, 0, batches)])
    assert result.error is not None
    assert head(t).next_offset == 0
