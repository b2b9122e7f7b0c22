"""`tidelog txn list|describe|abort`: transactional ids over the HTTP API, as Kafka's
kafka-transactions.sh shows them (KIP-664). ``abort`` ends an open transaction, fencing its
producer: the way out of a transaction its producer will never finish."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from tidelog.cli.topics import connection, connection_options, guarded, render

STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort")


def add_commands(commands: Any) -> None:
    txn = commands.add_parser("txn", help="list, describe and abort transactions")
    actions = txn.add_subparsers(dest="action", required=True)

    listing = actions.add_parser("list", help="every transactional id, its state and producer")
    listing.add_argument("--state", choices=STATES, help="only those in this state")
    connection_options(listing, read=True)

    describe = actions.add_parser(
        "describe", help="a transactional id: its producer, epoch, open partitions and age"
    )
    describe.add_argument("transactional_id")
    connection_options(describe, read=True)

    abort = actions.add_parser(
        "abort", help="abort an open transaction and fence its producer (KIP-664's abort)"
    )
    abort.add_argument("transactional_id")
    connection_options(abort, read=True)


def run(args: argparse.Namespace, out: Any = None, err: Any = None) -> int:
    def body(say: Callable[[str], None]) -> None:
        from tidelog.client import Http  # noqa: PLC0415 - the client extra, on demand

        with Http(**connection(args)) as http:
            if args.action == "list":
                params = {"state": args.state} if args.state else {}
                listed = http.get("/v1/transactions", **params)["transactions"]
                rows = [
                    (t["transactional_id"], t["state"], t["producer_id"], t["producer_epoch"])
                    for t in listed
                ]
                heads = ("TRANSACTIONAL-ID", "STATE", "PRODUCER-ID", "EPOCH")
                say(render(args.output, listed, heads, rows))
                return
            path = f"/v1/transactions/{quote(args.transactional_id, safe='')}"
            txn = http.get(path) if args.action == "describe" else http.post(f"{path}/abort")
            say(_described(args, txn))

    return guarded("txn", body, out, err)


def _described(args: argparse.Namespace, txn: dict[str, Any]) -> str:
    if args.output != "table":
        return render(args.output, txn, (), [])
    started = txn["transaction_start_ms"]
    age = f"{(time.time_ns() // 1_000_000 - started) / 1000:.1f} s" if started >= 0 else "-"
    partitions = " ".join(f"{p['topic']}:{p['partition']}" for p in txn["partitions"]) or "-"
    return "\n".join(
        [
            f"TRANSACTIONAL-ID  {txn['transactional_id']}",
            f"STATE             {txn['state']}",
            f"PRODUCER-ID       {txn['producer_id']}",
            f"EPOCH             {txn['producer_epoch']}",
            f"TIMEOUT           {txn['transaction_timeout_ms']} ms",
            f"OPEN FOR          {age}",
            f"PARTITIONS        {partitions}",
            f"GROUPS            {' '.join(txn['groups']) or '-'}",
        ]
    )
