"""`tidelog console`: serve the console on this machine, onto any tidelog API."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from tidelog.cli.topics import connection, connection_options

DEFAULT_PORT = 8090


def add_command(commands: Any) -> None:
    console = commands.add_parser(
        "console",
        help="topics, messages and consumer lag in the browser, signed with this machine's "
        "credentials (docs/console.md)",
    )
    console.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT})"
    )
    console.add_argument(
        "--sample-seconds",
        type=float,
        default=10.0,
        help="sample every group's lag this often for the lag charts, keeping an hour's worth "
        "at the default; each sample asks the API once per group; 0: never (default 10)",
    )
    connection_options(console)


def run(args: argparse.Namespace) -> int:
    try:
        from werkzeug.serving import run_simple  # noqa: PLC0415 - the console extra

        from tidelog.client.http import Http  # noqa: PLC0415
        from tidelog.console.lag import LagHistory, LagSampler  # noqa: PLC0415
        from tidelog.console.server import Console  # noqa: PLC0415
    except ImportError as exc:
        print(f"tidelog console needs: pip install 'tidelog[console]' ({exc})", file=sys.stderr)
        return 2
    if args.sample_seconds < 0:
        print("tidelog console: --sample-seconds is 0 (never) or more", file=sys.stderr)
        return 2
    try:
        http = Http(**connection(args))
    except (ValueError, LookupError) as exc:
        print(f"tidelog console: {exc}", file=sys.stderr)
        return 1
    sampler = None
    if args.sample_seconds:
        # An hour of samples whatever the interval, between 60 and 3,600 of them.
        kept = min(3600, max(60, round(3600 / args.sample_seconds)))
        history = LagHistory(samples=kept)
        sampler = LagSampler(http, history, interval_s=args.sample_seconds)
        sampler.touch()  # from the start: the trend is there when a page first opens
    # A line a request would bury what matters (a failed lag sample) under the pages' polling.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    signed = "signed" if http.endpoint.sign else "unsigned"
    print(
        f"tidelog console on http://127.0.0.1:{args.port}/ - the API at {http.endpoint.url} "
        f"({signed}; {http.endpoint.source})",
        flush=True,
    )
    # Loopback only: the proxy acts with this machine's credentials.
    run_simple("127.0.0.1", args.port, Console(http, sampler=sampler), threaded=True)
    return 0
