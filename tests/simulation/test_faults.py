"""The fault-injecting wrappers: seeded, replayable, and honest about ambiguous writes."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tidelog.storage import ItemAbsent, ObjectExistsError, Put, StorageUnavailableError
from tidelog.storage.faults import (
    AWS_LATENCY,
    FaultPlan,
    FaultyMetadataStore,
    FaultyObjectStore,
    Latency,
)
from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore

SEED = random.randrange(2**32)


def outcomes(plan, store, n=200):
    """What each of ``n`` create-only writes saw."""
    seen = []
    for i in range(n):
        try:
            store.write(Put({"pk": "p", "sk": f"{i:04d}"}, ItemAbsent()))
            seen.append("ok")
        except StorageUnavailableError as exc:
            seen.append("ambiguous" if exc.ambiguous else "failed")
    return seen


def test_same_seed_same_faults():
    plan_a, plan_b = FaultPlan(SEED, 0.2, 0.2), FaultPlan(SEED, 0.2, 0.2)
    a = outcomes(plan_a, FaultyMetadataStore(MemoryMetadataStore(), plan_a))
    b = outcomes(plan_b, FaultyMetadataStore(MemoryMetadataStore(), plan_b))
    assert a == b, f"seed {SEED}"
    assert {"ok", "failed", "ambiguous"} <= set(a), f"seed {SEED}: {Counter(a)}"


def test_a_fault_before_changes_nothing_and_one_after_lands():
    inner = MemoryMetadataStore()
    plan = FaultPlan(SEED, before=0.3, after=0.3)
    seen = outcomes(plan, FaultyMetadataStore(inner, plan))
    for i, outcome in enumerate(seen):
        stored = inner.get("p", f"{i:04d}") is not None
        assert stored == (outcome != "failed"), f"seed {SEED}: write {i} was {outcome}"
    assert plan.injected == seen.count("failed") + seen.count("ambiguous")


def test_reads_only_fail_before():
    inner = MemoryObjectStore(clock_ms=lambda: 0)
    inner.put("k", b"v")
    plan = FaultPlan(SEED, before=0.0, after=1.0)
    store = FaultyObjectStore(inner, plan)
    assert store.get("k") == b"v"
    assert store.head("k").size == 1
    assert [i.key for i in store.list()] == ["k"]
    with pytest.raises(StorageUnavailableError) as failure:
        store.put("k2", b"w")
    assert failure.value.ambiguous
    assert inner.get("k2") == b"w"
    with pytest.raises(ObjectExistsError):
        FaultyObjectStore(inner, FaultPlan(SEED)).put("k2", b"again")


def test_a_resent_put_lands_once_and_answers_like_the_resend():
    inner = MemoryObjectStore(lambda: 0)
    store = FaultyObjectStore(inner, FaultPlan(SEED, resent=1.0))
    with pytest.raises(ObjectExistsError):
        store.put("k", b"v")
    assert inner.get("k") == b"v"


def test_the_aws_latency_profile_draws_its_percentiles():
    """Each kind's draws have the median and 99th percentile it was fitted to (within the
    sampling error of 20,000 draws), and transfer time grows with size."""
    rng = random.Random(SEED)
    for kind, latency in AWS_LATENCY.items():
        draws = sorted(latency.draw(rng) * 1000 for _ in range(20_000))
        p50, p99 = draws[10_000], draws[19_800]
        assert p50 == pytest.approx(latency.p50_ms, rel=0.05), (kind, SEED)
        assert p99 == pytest.approx(latency.p99_ms, rel=0.15), (kind, SEED)
    put = AWS_LATENCY["s3.put"]
    assert put.transfer(2**20) == pytest.approx(put.ms_per_mib / 1000)


def test_every_call_waits_as_its_kind_does():
    """The wrappers name each call's kind and size; a PUT's size is what it sends, a GET's
    what it received."""
    waits: list[float] = []
    kinds = {kind: Latency(p50_ms=1, p99_ms=1.001, ms_per_mib=1000) for kind in AWS_LATENCY}
    plan = FaultPlan(SEED, latency=kinds, sleep=waits.append)
    objects = FaultyObjectStore(MemoryObjectStore(lambda: 0), plan)
    meta = FaultyMetadataStore(MemoryMetadataStore(), plan)
    objects.put("k", b"x" * 2**20)
    assert objects.get("k", 0, 2**19) == b"x" * 2**19
    objects.head("k")
    meta.write(Put({"pk": "p", "sk": "s"}, ItemAbsent()))
    meta.get("p", "s")
    list(meta.query("p"))
    meta.transact([Put({"pk": "p", "sk": "t"}, ItemAbsent())])
    assert [round(w, 3) for w in waits] == [1.001, 0.501, 0.001, 0.001, 0.001, 0.001, 0.001]


def test_a_plan_without_latency_never_sleeps():
    plan = FaultPlan(SEED, sleep=lambda s: pytest.fail(f"slept {s}"))
    FaultyObjectStore(MemoryObjectStore(lambda: 0), plan).put("k", b"v")
