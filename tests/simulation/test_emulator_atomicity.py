"""The embedded emulator is atomic under concurrency, as DynamoDB and S3 are.

Unlocked, moto fails each of these (DESIGN.md §2: 388-397 of 400 increments, duplicate claims,
two transaction winners). Every test here goes through the real HTTP server of `tidelog dev`.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from tests.support.resources import new_bucket, new_table

from tidelog.storage import Compare, ConditionFailedError, ItemAbsent, ObjectExistsError, Put
from tidelog.storage.dynamodb import DynamoMetadataStore
from tidelog.storage.s3 import S3ObjectStore

THREADS = 8


def run_together(work, count=THREADS):
    """Start ``count`` workers at the same instant; return their results."""
    barrier = threading.Barrier(count)

    def worker(i):
        barrier.wait()
        return work(i)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(worker, range(count)))


def test_conditional_increments_lose_nothing(dev_client, template):
    client = dev_client("dynamodb")
    meta = DynamoMetadataStore(client, new_table(client, template))
    meta.write(Put({"pk": "counter", "sk": "c", "n": 0}))

    def increment_50_times(_):
        wins = 0
        while wins < 50:
            n = meta.get("counter", "c")["n"]
            try:
                meta.write(Put({"pk": "counter", "sk": "c", "n": n + 1}, Compare("n", "=", n)))
                wins += 1
            except ConditionFailedError:
                continue
        return wins

    assert sum(run_together(increment_50_times)) == 400
    assert meta.get("counter", "c")["n"] == 400


def test_atomic_add_loses_nothing(dev_client, template):
    client = dev_client("dynamodb")
    table = new_table(client, template)
    key = {"pk": {"S": "counter"}, "sk": {"S": "add"}}

    def add_50_times(_):
        for _ in range(50):
            client.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )

    run_together(add_50_times)
    item = client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
    assert item["n"] == {"N": "400"}


def test_create_only_puts_have_exactly_one_winner_per_key(dev_client):
    client = dev_client("s3")
    store = S3ObjectStore(client, new_bucket(client))
    keys = [f"segment/{k:02d}" for k in range(20)]

    def race(writer):
        won = []
        for key in keys:
            try:
                store.put(key, f"{key} by {writer}".encode())
                won.append(key)
            except ObjectExistsError:
                pass
        return writer, won

    winners = Counter()
    for writer, won in run_together(race):
        for key in won:
            winners[key] += 1
            assert store.get(key) == f"{key} by {writer}".encode()
    assert winners == Counter({key: 1 for key in keys})


def test_conditional_transactions_never_have_two_winners(dev_client, template):
    client = dev_client("dynamodb")
    meta = DynamoMetadataStore(client, new_table(client, template))

    for trial in range(25):

        def claim(writer, trial=trial):
            try:
                meta.transact(
                    [
                        Put({"pk": "claims", "sk": f"{trial:03d}", "owner": writer}, ItemAbsent()),
                        Put({"pk": "log", "sk": f"{trial:03d}#{writer}"}, ItemAbsent()),
                    ]
                )
                return writer
            except ConditionFailedError:
                return None

        winners = [w for w in run_together(claim) if w is not None]
        assert len(winners) == 1, f"trial {trial}: winners {winners}"
        assert meta.get("claims", f"{trial:03d}")["owner"] == winners[0]
        logged = list(meta.query("log", prefix=f"{trial:03d}#"))
        assert [item["sk"] for item in logged] == [f"{trial:03d}#{winners[0]}"]
