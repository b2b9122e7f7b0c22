"""The chaos checker's transactional anomalies over small histories: each check finds what it
names, and a clean history holds none."""

from __future__ import annotations

from tidelog.chaos.history import Op
from tidelog.chaos.txncheck import check_transactions


def txn(name, values, outcome, intent="commit"):
    ops = [Op("p", "invoke", "txn", {"txn": name, "values": values, "intent": intent})]
    if outcome != "info":
        ops.append(Op("p", "ok", "txn", {"txn": name, "outcome": outcome}))
    return ops


def read(reader, partition, records):
    return Op(
        "final", "ok", "txn-read", {"reader": reader, "partition": partition, "records": records}
    )


def poll(records, process="c0"):
    return Op(process, "ok", "txn-poll", {"records": records})


CLEAN = [
    *txn("t0", ["t0-0", "t0-1"], "commit"),
    *txn("t1", ["t1-0"], "abort", intent="abort"),
    *txn("t2", ["t2-0", "t2-1"], "info"),  # unknown: all or nothing, either is fine
    poll([[0, 0, "t0-0"], [0, 1, "t0-1"]]),
    read("kafka", 0, [[0, "t0-0"], [1, "t0-1"], [5, "t2-0"], [6, "t2-1"]]),
    read("http", 0, [[0, "t0-0"], [1, "t0-1"], [5, "t2-0"], [6, "t2-1"]]),
]


def kinds(ops):
    return {kind: len(found) for kind, found in check_transactions(ops).items()}


def test_a_clean_history_holds_no_anomaly():
    assert kinds(CLEAN) == {}


def test_an_aborted_record_read_committed_is_g1a():
    ops = [*CLEAN, poll([[0, 3, "t1-0"]], process="c1")]
    assert kinds(ops) == {"aborted-read": 1}


def test_a_commit_missing_a_record_is_lost_and_torn():
    ops = [*CLEAN[:-2], read("kafka", 0, [[0, "t0-0"]]), read("http", 0, [[0, "t0-0"]])]
    assert kinds(ops) == {"lost-commit": 2, "torn-transaction": 2}


def test_half_of_an_unknown_transaction_is_torn():
    records = [[0, "t0-0"], [1, "t0-1"], [5, "t2-0"]]
    ops = [*CLEAN[:-2], read("kafka", 0, records), read("http", 0, records)]
    assert kinds(ops) == {"torn-transaction": 2}


def test_duplicates_inconsistency_divergence_and_going_back():
    ops = [
        *CLEAN[:-1],
        read("http", 0, [[0, "t0-0"], [1, "t0-1"], [5, "t2-0"], [7, "t2-1"]]),
        poll([[0, 1, "t0-1"]]),
    ]
    found = kinds(ops)
    assert found == {
        "txn-duplicate": 1,  # t2-1 at 6 and at 7
        "txn-divergent-reads": 1,
        "txn-non-monotonic-poll": 1,
    }
    ops = [*CLEAN, poll([[0, 0, "t2-0"]], process="c1")]
    assert kinds(ops) == {"txn-duplicate": 1, "txn-inconsistent-offset": 1}


def test_a_transaction_reading_its_own_records_before_commit_is_caught():
    wrote = [
        Op("r", "invoke", "txn", {"txn": "r-t0", "values": ["r-t0-0"], "intent": "commit"}),
        Op("r", "ok", "txn", {"txn": "r-t0", "outcome": "commit", "reads": [[0, 9, "r-t0-0"]]}),
    ]
    final = [[0, "t0-0"], [1, "t0-1"], [5, "t2-0"], [6, "t2-1"], [9, "r-t0-0"]]
    ops = [*CLEAN[:-2], *wrote, read("kafka", 0, final), read("http", 0, final)]
    assert kinds(ops) == {"own-uncommitted-read": 1}
    clean = [
        Op("r", "invoke", "txn", {"txn": "r-t1", "values": [], "intent": "commit"}),
        Op("r", "ok", "txn", {"txn": "r-t1", "outcome": "commit", "reads": [[0, 0, "t0-0"]]}),
    ]
    assert kinds([*CLEAN, *clean]) == {}
    aborted = [
        Op("r", "invoke", "txn", {"txn": "r-t2", "values": [], "intent": "commit"}),
        Op("r", "ok", "txn", {"txn": "r-t2", "outcome": "commit", "reads": [[0, 3, "t1-0"]]}),
    ]
    assert kinds([*CLEAN, *aborted]) == {"aborted-read": 1}
