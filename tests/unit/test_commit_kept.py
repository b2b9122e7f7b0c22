"""What a Committer keeps between flushes (the heads and producer states it wrote), and when it
must read instead: a steady producer's flush reads nothing, and every verdict that writes
nothing stands on what was read strongly. Two committers on one store are two agents (or two
Lambda containers) writing one partition in turn, each with its own stale guesses."""

from __future__ import annotations

import itertools

import pytest

from tidelog.log.flushobject import Extent
from tidelog.log.topics import TOPICS_PK, Topic
from tidelog.log.write import commit
from tidelog.log.write.commit import Committer
from tidelog.log.write.plan import PartitionAppend, plan
from tidelog.log.write.validate import ProducedBatch
from tidelog.storage import Put
from tidelog.storage.memory import MemoryMetadataStore

TOPIC = Topic("t", "00000000-0000-0000-0000-000000000001", 1)
KEY = (TOPIC.topic_id, 0)
OBJECTS = itertools.count()


class CountingStore(MemoryMetadataStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get(self, pk, sk):
        self.reads += 1
        return super().get(pk, sk)

    def get_many(self, keys):
        self.reads += 1
        return super().get_many(keys)


@pytest.fixture
def store():
    meta = CountingStore()
    meta.transact([Put({"pk": TOPICS_PK, "sk": TOPIC.name, "topic_id": TOPIC.topic_id})])
    return meta


def committer(meta):
    return Committer(meta, clock_ms=lambda: 0, sleep=lambda _: None, jitter=lambda: 0.5)


def batch(seq, pid=5, epoch=0, count=1):
    return ProducedBatch(b"x" * 10, count, 0, pid, epoch, seq, seq + count - 1)


def append(*batches, expected=None, partition=0):
    extent = Extent(TOPIC.topic_id, partition, 0, sum(len(b.data) for b in batches))
    return PartitionAppend(TOPIC, partition, batches, extent, expected)


def commit_one(who, *batches, expected=None):
    # Each flush its own object: a conflict is told from an earlier attempt that landed by
    # the object its index item names.
    results, _ = who.commit([append(*batches, expected=expected)], f"data/flush/{next(OBJECTS)}")
    return results[KEY]


def test_a_steady_producers_flushes_read_nothing_after_the_first(store):
    writer = committer(store)
    assert commit_one(writer, batch(0)).batch_offsets == ((0, 0),)
    first = store.reads
    for seq in range(1, 6):
        assert commit_one(writer, batch(seq)).batch_offsets == ((seq, seq),)
    assert store.reads == first


def test_the_first_flush_reads_every_partitions_head_and_states_in_one_call(store):
    writer = committer(store)
    two_producers = append(batch(0, pid=1), batch(0, pid=2))
    results, _ = writer.commit([two_producers, append(batch(0, pid=3), partition=1)], "x")
    assert results[KEY].batch_offsets == ((0, 0), (1, 1))
    assert results[(TOPIC.topic_id, 1)].batch_offsets == ((0, 0),)
    assert store.reads == 1


def test_a_stale_guess_is_a_conflict_then_read_again(store):
    a, b = committer(store), committer(store)
    commit_one(a, batch(0))
    assert commit_one(b, batch(1)).batch_offsets == ((1, 1),)
    # a still holds the head and the state as it wrote them: its write fails, it reads, it
    # plans again from what b wrote.
    assert commit_one(a, batch(2)).batch_offsets == ((2, 2),)
    assert commit_one(b, batch(3)).batch_offsets == ((3, 3),)


def test_a_retry_of_what_another_writer_committed_is_a_duplicate_not_a_second_copy(store):
    a, b = committer(store), committer(store)
    commit_one(a, batch(0))
    commit_one(b, batch(1))
    # a's kept state has not seen seq 1: planned from it, the retry would be a new batch (and
    # its write would conflict); read strongly, it is b's batch, at b's offsets.
    result = commit_one(a, batch(1))
    assert result.error is None
    assert not result.refused
    assert result.batch_offsets == ((1, 1),)
    assert commit_one(a, batch(2)).batch_offsets == ((2, 2),)


def test_a_duplicate_is_judged_on_a_state_read_strongly(store):
    writer = committer(store)
    commit_one(writer, batch(0))
    before = store.reads
    assert commit_one(writer, batch(0)).batch_offsets == ((0, 0),)
    assert store.reads == before + 1


def test_a_refusal_is_judged_on_a_state_read_strongly(store):
    a, b = committer(store), committer(store)
    commit_one(a, batch(0, epoch=0))
    commit_one(b, batch(0, epoch=1))  # the producer's epoch was bumped, through b
    # From a's kept state (epoch 0), epoch 1 must start at sequence 0: seq 1 would be refused
    # out of order. As stored, seq 1 follows epoch 1's seq 0.
    result = commit_one(a, batch(1, epoch=1))
    assert not result.refused
    assert result.error is None
    assert result.batch_offsets == ((2, 2),)


def test_a_conditional_append_is_judged_on_a_head_read_strongly(store):
    a, b = committer(store), committer(store)
    commit_one(a, batch(0))
    commit_one(b, batch(1))
    # a's kept head says 1; the log ends at 2, as the caller expects.
    result = commit_one(a, batch(2), expected=2)
    assert result.error is None
    assert result.batch_offsets == ((2, 2),)


def test_kept_states_are_bounded_oldest_first(store, monkeypatch):
    monkeypatch.setattr(commit, "KEPT_STATES", 2)
    writer = committer(store)
    for pid in (1, 2, 3):
        commit_one(writer, batch(0, pid=pid))
    before = store.reads
    commit_one(writer, batch(1, pid=3))
    commit_one(writer, batch(1, pid=2))
    assert store.reads == before
    commit_one(writer, batch(1, pid=1))  # forgotten: read again
    assert store.reads == before + 1


def test_only_verdicts_that_write_nothing_are_marked_so():
    first = plan(append(batch(0)), None, {})
    assert not first.judged_unwritten
    head, states = first.new_head, {5: first.states[5][1]}
    assert not plan(append(batch(1)), head, states).judged_unwritten
    assert plan(append(batch(0)), head, states).judged_unwritten  # a duplicate
    assert plan(append(batch(3)), head, states).judged_unwritten  # refused: out of order
