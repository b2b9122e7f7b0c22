"""A transactional id's transitions, against Kafka's TransactionCoordinator (transaction
version 1): every request in every state, and KIP-360's producer-id recovery."""

from __future__ import annotations

import itertools

import pytest

from tidelog.txn.state import (
    MAX_EPOCH,
    ConcurrentTransactionsError,
    InvalidProducerIdMappingError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    ProducerFencedError,
    State,
    Txn,
    add_offsets,
    add_partitions,
    complete,
    end_txn,
    init_producer_id,
    timed_out,
)

T0 = 1_000_000


def ids(start: int = 100):
    counter = itertools.count(start)
    return lambda: next(counter)


def txn(state: State = State.EMPTY, epoch: int = 3, **fields) -> Txn:
    base = {
        "transactional_id": "tx",
        "producer_id": 7,
        "epoch": epoch,
        "state": state,
        "timeout_ms": 60_000,
        "updated_ms": T0,
    }
    if state in (State.ONGOING, State.PREPARE_COMMIT, State.PREPARE_ABORT):
        base |= {"started_ms": T0, "partitions": frozenset({("t", 0)})}
    return Txn(**(base | fields))


def test_a_new_id_gets_a_new_producer_at_epoch_0():
    made = init_producer_id(None, "tx", 60_000, now_ms=T0, new_producer_id=ids()).txn
    assert (made.producer_id, made.epoch, made.state) == (100, 0, State.EMPTY)


@pytest.mark.parametrize("state", [State.EMPTY, State.COMPLETE_COMMIT, State.COMPLETE_ABORT])
def test_a_producer_restarting_bumps_the_epoch_and_fences_the_old_one(state):
    again = init_producer_id(txn(state), "tx", 30_000, now_ms=T0 + 1, new_producer_id=ids())
    assert (again.txn.producer_id, again.txn.epoch, again.txn.state) == (7, 4, State.EMPTY)
    assert again.txn.timeout_ms == 30_000
    assert not again.fenced
    with pytest.raises(ProducerFencedError):
        add_partitions(again.txn, 7, 3, [("t", 0)], now_ms=T0 + 2)


def test_an_open_transaction_is_aborted_with_the_epoch_bumped_before_a_new_producer_starts():
    fenced = init_producer_id(txn(State.ONGOING), "tx", 60_000, now_ms=T0, new_producer_id=ids())
    assert fenced.fenced
    assert (fenced.txn.state, fenced.txn.epoch) == (State.PREPARE_ABORT, 4)
    assert fenced.txn.partitions == {("t", 0)}  # its markers go where it wrote
    with pytest.raises(ConcurrentTransactionsError):  # the client retries until it completes
        init_producer_id(fenced.txn, "tx", 60_000, now_ms=T0, new_producer_id=ids())
    done = complete(fenced.txn, now_ms=T0 + 5)
    again = init_producer_id(done, "tx", 60_000, now_ms=T0 + 6, new_producer_id=ids()).txn
    assert (again.epoch, again.state) == (5, State.EMPTY)


def test_an_exhausted_epoch_rotates_the_producer_id_and_a_retry_of_it_is_recognised():
    old = txn(epoch=MAX_EPOCH - 1)
    rotated = init_producer_id(old, "tx", 60_000, now_ms=T0, new_producer_id=ids(500)).txn
    assert (rotated.producer_id, rotated.epoch, rotated.previous_producer_id) == (500, 0, 7)
    # KIP-360: the old producer, which never heard the answer, asks again with its identity
    retried = init_producer_id(
        rotated, "tx", 60_000, now_ms=T0, new_producer_id=ids(900), expected=(7, MAX_EPOCH - 1)
    ).txn
    assert (retried.producer_id, retried.epoch) == (500, 1)


def test_kip_360_recovery_from_a_producer_that_is_not_the_current_one_is_fenced():
    with pytest.raises(ProducerFencedError):
        init_producer_id(txn(), "tx", 60_000, now_ms=T0, new_producer_id=ids(), expected=(99, 0))
    with pytest.raises(ProducerFencedError):  # the current producer id at an old epoch
        init_producer_id(txn(), "tx", 60_000, now_ms=T0, new_producer_id=ids(), expected=(7, 1))
    recovered = init_producer_id(
        txn(), "tx", 60_000, now_ms=T0, new_producer_id=ids(), expected=(7, 3)
    ).txn
    assert (recovered.epoch, recovered.last_epoch) == (4, 3)
    # its answer lost, it asks again with the epoch it had: the bump is not made twice
    again = init_producer_id(
        recovered, "tx", 60_000, now_ms=T0, new_producer_id=ids(), expected=(7, 3)
    )
    assert again.txn is None


@pytest.mark.parametrize("timeout", [0, -1, 15 * 60 * 1000 + 1])
def test_a_timeout_beyond_kafkas_bounds_is_refused(timeout):
    with pytest.raises(InvalidTransactionTimeoutError):
        init_producer_id(None, "tx", timeout, now_ms=T0, new_producer_id=ids())


def test_partitions_and_groups_join_the_open_transaction_which_starts_on_the_first():
    started = add_partitions(txn(), 7, 3, [("t", 0), ("t", 1)], now_ms=T0 + 10).txn
    assert (started.state, started.started_ms) == (State.ONGOING, T0 + 10)
    more = add_offsets(started, 7, 3, "g", now_ms=T0 + 20).txn
    assert (more.partitions, more.groups, more.started_ms) == (
        {("t", 0), ("t", 1)},
        {"g"},
        T0 + 10,
    )
    assert add_partitions(more, 7, 3, [("t", 1)], now_ms=T0 + 30).txn is None  # nothing new


@pytest.mark.parametrize(
    ("producer_id", "epoch", "error"),
    [
        (8, 3, InvalidProducerIdMappingError),
        (7, 2, ProducerFencedError),
        (7, 4, ProducerFencedError),
    ],
)
def test_a_request_from_another_producer_or_epoch_is_refused(producer_id, epoch, error):
    with pytest.raises(error):
        add_partitions(txn(State.ONGOING), producer_id, epoch, [("t", 1)], now_ms=T0)
    with pytest.raises(error):
        end_txn(txn(State.ONGOING), producer_id, epoch, True, now_ms=T0)
    with pytest.raises(InvalidProducerIdMappingError):
        add_partitions(None, 7, 3, [("t", 1)], now_ms=T0)


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_prepares_then_completes_and_its_retries_are_answered_as_kafka_answers(commit):
    ongoing = txn(State.ONGOING)
    prepared = end_txn(ongoing, 7, 3, commit, now_ms=T0 + 1).txn
    assert prepared.state == (State.PREPARE_COMMIT if commit else State.PREPARE_ABORT)
    with pytest.raises(ConcurrentTransactionsError):
        end_txn(prepared, 7, 3, commit, now_ms=T0 + 2)  # the same, while markers are written
    with pytest.raises(InvalidTxnStateError):
        end_txn(prepared, 7, 3, not commit, now_ms=T0 + 2)
    with pytest.raises(ConcurrentTransactionsError):
        add_partitions(prepared, 7, 3, [("t", 2)], now_ms=T0 + 2)
    done = complete(prepared, now_ms=T0 + 3)
    assert done.state == (State.COMPLETE_COMMIT if commit else State.COMPLETE_ABORT)
    assert (done.partitions, done.groups) == (frozenset(), frozenset())
    assert end_txn(done, 7, 3, commit, now_ms=T0 + 4).txn is None  # a retry: done already
    with pytest.raises(InvalidTxnStateError):
        end_txn(done, 7, 3, not commit, now_ms=T0 + 4)


@pytest.mark.parametrize("commit", [True, False])
def test_ending_a_transaction_that_never_began_is_an_invalid_state(commit):
    with pytest.raises(InvalidTxnStateError):
        end_txn(txn(State.EMPTY), 7, 3, commit, now_ms=T0)


def test_only_prepared_transactions_complete():
    for state in (State.EMPTY, State.ONGOING, State.COMPLETE_COMMIT):
        with pytest.raises(InvalidTxnStateError):
            complete(txn(state), now_ms=T0)


def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced():
    ongoing = txn(State.ONGOING, timeout_ms=1000)
    assert timed_out(ongoing, now_ms=T0 + 1000).txn is None
    aborted = timed_out(ongoing, now_ms=T0 + 1001)
    assert aborted.fenced
    assert (aborted.txn.state, aborted.txn.epoch) == (State.PREPARE_ABORT, 4)
    with pytest.raises(ProducerFencedError):
        end_txn(aborted.txn, 7, 3, True, now_ms=T0 + 1002)
    assert timed_out(txn(State.EMPTY), now_ms=T0 + 10**9).txn is None


@pytest.mark.parametrize("state", list(State))
def test_an_item_reads_back_as_the_transaction_it_was(state):
    original = txn(state, groups=frozenset({"g"}), previous_producer_id=5, last_epoch=2, version=9)
    assert Txn.from_attributes(original.to_attributes()) == original
