"""The embedded stack's costs, side by side in one run.

- The global lock: the same DynamoDB and S3 calls against moto's server with and without it.
- The role check (tidelog.local.iam): the same calls naming no role (unchecked) and naming the
  agents' task role (checked against its statements).
- The local gateway: a request through HTTP and the proxy event, against calling the handler.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import urllib.request
from pathlib import Path
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server

from benchmarks.report import Section, rate
from tidelog import aws
from tidelog.local import dev
from tidelog.local.lambdas import FunctionRuntime
from tidelog.local.stack import aws_client

EVENT = Path(__file__).resolve().parents[1] / "tests/functional/events/get_health.json"


def _unlocked_moto() -> tuple[Any, str]:
    server = make_server(
        "127.0.0.1",
        0,
        DomainDispatcherApplication(create_backend_app),
        threaded=True,
        request_handler=MotoRequestHandler,
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.port}"


def _storage_rates(endpoint: str, label: str, threads: int) -> dict[str, float]:
    ddb, s3 = aws_client("dynamodb", endpoint, "us-east-1"), aws_client("s3", endpoint, "us-east-1")
    table, bucket = f"bench-{label}-{threads}", f"bench-{label}-{threads}"
    ddb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
    )
    s3.create_bucket(Bucket=bucket)
    body = b"x" * 65536
    return {
        "PutItem": rate(
            lambda i: ddb.put_item(TableName=table, Item={"pk": {"S": str(i)}}), threads=threads
        ),
        "PutObject 64 KiB": rate(
            lambda i: s3.put_object(Bucket=bucket, Key=str(i), Body=body), threads=threads
        ),
    }


def _role_rates(endpoint: str, stack: Any, role: str) -> dict[str, float]:
    """Calls the agents' role allows, on the stack's own table and bucket, naming ``role``
    ("" names none, and is not checked)."""
    ddb, s3 = aws_client("dynamodb", endpoint, "us-east-1"), aws_client("s3", endpoint, "us-east-1")
    if role:

        def name_role(request: Any, **_: Any) -> None:
            request.headers[aws.PRINCIPAL_HEADER] = role

        for client in (ddb, s3):
            client.meta.events.register("before-sign", name_role)
    body = b"x" * 65536

    def item(i: int, k: int = 0) -> dict[str, Any]:
        return {"pk": {"S": f"log#bench-{role != ''}#{k}"}, "sk": {"S": str(i)}}

    def transaction(i: int) -> None:
        ddb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": stack.table, "Item": item(i, k)}} for k in range(10)
            ]
        )

    return {
        "PutItem": rate(lambda i: ddb.put_item(TableName=stack.table, Item=item(i))),
        "TransactWriteItems of 10": rate(transaction),
        "PutObject 64 KiB": rate(
            lambda i: s3.put_object(
                Bucket=stack.bucket, Key=f"data/flush/bench-{role != ''}-{i}", Body=body
            )
        ),
    }


def run(progress: Any = print) -> Section:
    server = dev.start("127.0.0.1", 0, 0, kafka_port=0)
    bare, bare_url = _unlocked_moto()
    section = Section(
        "The embedded stack",
        "Calls per second against moto's server, unlocked and behind tidelog's global lock "
        "(same process, same run); the same calls naming no role and held to the agents' role "
        "(the role check, alternated); and a request through the local API Gateway against a "
        "direct call of the same handler. Ratios are what to read: absolute numbers move with "
        "the machine.",
        ("measurement", "threads", "baseline (ops/s)", "tidelog (ops/s)", "ratio"),
    )
    try:
        for threads in (1, 8):
            progress(f"  storage calls, {threads} thread(s)")
            # Alternate which goes first, so warm-up and drift do not favour one side.
            if threads == 1:
                unlocked = _storage_rates(bare_url, "bare", threads)
                locked = _storage_rates(server.emulator.url, "locked", threads)
            else:
                locked = _storage_rates(server.emulator.url, "locked", threads)
                unlocked = _storage_rates(bare_url, "bare", threads)
            for name in unlocked:
                section.rows.append(
                    (
                        f"{name}: unlocked moto vs locked emulator",
                        str(threads),
                        f"{unlocked[name]:,.0f}",
                        f"{locked[name]:,.0f}",
                        f"{locked[name] / unlocked[name]:.2f}x",
                    )
                )
        progress("  the role check")
        role = server.stack.agent_role
        # Alternated, twice each, so drift and the partitions' growth favour neither side.
        runs = [_role_rates(server.emulator.url, server.stack, r) for r in ("", role, role, "")]
        unchecked = {name: (runs[0][name] + runs[3][name]) / 2 for name in runs[0]}
        checked = {name: (runs[1][name] + runs[2][name]) / 2 for name in runs[0]}
        for name, before in unchecked.items():
            section.rows.append(
                (
                    f"{name}: unchecked vs held to the agents' role",
                    "1",
                    f"{before:,.0f}",
                    f"{checked[name]:,.0f}",
                    f"{checked[name] / before:.2f}x",
                )
            )
        progress("  gateway overhead")
        event = json.loads(EVENT.read_text())
        (spec,) = [
            f for f in server.stack.template.functions() if f.logical_id == "ClusterFunction"
        ]
        direct = FunctionRuntime(spec, "arn:bench")

        def over_http(_: int) -> None:
            with urllib.request.urlopen(f"{server.api_url}/v1/health") as response:
                response.read()

        # The handler prints one CloudWatch EMF metrics line per call; keep them off the report.
        with contextlib.redirect_stdout(io.StringIO()):
            called = rate(lambda _: direct.invoke(event))
            served = rate(over_http)
        section.rows.append(
            (
                "GET /v1/health: handler call vs through the gateway",
                "1",
                f"{called:,.0f}",
                f"{served:,.0f}",
                f"{served / called:.2f}x",
            )
        )
        section.notes += [
            "The lock serialises the emulator; unlocked moto loses updates under concurrency "
            "(tests/simulation/test_emulator_atomicity.py), so the unlocked column is a speed "
            "reference, not an alternative.",
            "moto is CPU-bound under the GIL, so it barely runs in parallel unlocked either: "
            "expect the lock's ratio within noise of 1x.",
            "The role check reads the request's body again (but an S3 object's) and decides "
            "each item of a transaction; decisions are memoized per role and call.",
            "The gateway's cost per request is HTTP (a new connection each time here), the "
            "proxy event and the response shaping; the handler itself is the baseline.",
        ]
    finally:
        bare.shutdown()
        server.stop()
    return section
