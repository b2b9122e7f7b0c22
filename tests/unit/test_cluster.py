"""The cluster id, as Kafka makes and keeps it."""

from __future__ import annotations

import base64
import re
import threading
import uuid

from tidelog.cluster import CLUSTER_KEY, describe_cluster, new_cluster_id
from tidelog.storage.memory import MemoryMetadataStore


def fixed(*chunks: bytes):
    pending = list(chunks)
    return lambda n: pending.pop(0)


def test_id_is_kafkas_uuid_in_url_safe_base64():
    cluster_id = new_cluster_id(fixed(bytes(range(16))))
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", cluster_id)
    raw = base64.urlsafe_b64decode(cluster_id + "==")
    assert uuid.UUID(bytes=raw).version == 4


def test_golden_id():
    # Java: new Uuid(0x0001020304054607L, 0x88090a0b0c0d0e0fL).toString() after v4 bits are set
    assert new_cluster_id(fixed(bytes(range(16)))) == "AAECAwQFRgeICQoLDA0ODw"


def test_ids_starting_with_a_dash_are_drawn_again():
    dash = base64.urlsafe_b64decode("-" + "A" * 21 + "==")  # encodes to an id starting with '-'
    cluster_id = new_cluster_id(fixed(dash, bytes(range(16))))
    assert cluster_id == "AAECAwQFRgeICQoLDA0ODw"


def test_first_call_creates_and_later_calls_read_back():
    meta = MemoryMetadataStore()
    first = describe_cluster(meta, clock_ms=lambda: 42, random_bytes=fixed(bytes(range(16))))
    again = describe_cluster(meta, clock_ms=lambda: 99, random_bytes=fixed(bytes(16)))
    assert first.cluster_id == again.cluster_id == "AAECAwQFRgeICQoLDA0ODw"
    assert again.created_ms == 42
    assert meta.get(*CLUSTER_KEY)["cluster_id"] == first.cluster_id


def test_concurrent_first_starts_agree_on_one_id():
    meta = MemoryMetadataStore()
    barrier = threading.Barrier(8)
    seen = []

    def start(i):
        barrier.wait()
        info = describe_cluster(meta, clock_ms=lambda: i, random_bytes=lambda n: bytes([i]) * n)
        seen.append(info.cluster_id)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1
