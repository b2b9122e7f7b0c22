"""``tidelog user``: the users Kafka clients log in as (SASL/SCRAM and PLAIN), over the signed
HTTP API, so the first one can be made before any Kafka user exists (docs/security.md)."""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Callable
from typing import Any

from tidelog.cli.topics import UsageError, connection, connection_options, guarded, render

MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")


def add_commands(commands: Any) -> None:
    user = commands.add_parser("user", help="list, set and delete Kafka users (SASL logins)")
    actions = user.add_subparsers(dest="action", required=True)

    listing = actions.add_parser("list", help="every user, with its SCRAM mechanisms")
    connection_options(listing, read=True)

    setting = actions.add_parser("set", help="create a user, or change its password")
    setting.add_argument("user")
    setting.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from standard input (else it is asked for, unechoed)",
    )
    setting.add_argument("--mechanism", choices=MECHANISMS, default=MECHANISMS[0])
    setting.add_argument(
        "--iterations", type=int, default=8192, help="4096 to 16384 (default 8192)"
    )
    connection_options(setting)

    deleting = actions.add_parser("delete", help="delete a user's credentials")
    deleting.add_argument("user")
    deleting.add_argument("--mechanism", choices=MECHANISMS, help="only this one")
    connection_options(deleting)


def run(args: argparse.Namespace, out: Any = None, err: Any = None) -> int:
    def body(say: Callable[[str], None]) -> None:
        from tidelog.client import Admin  # noqa: PLC0415 - the client extra, on demand

        with Admin(**connection(args)) as admin:
            if args.action == "list":
                users = admin.list_users()
                rows = [
                    (u.name, ", ".join(f"{c.mechanism} ({c.iterations})" for c in u.credentials))
                    for u in users
                ]
                say(render(args.output, users, ("USER", "MECHANISMS (ITERATIONS)"), rows))
            elif args.action == "set":
                password = _password(args)
                admin.set_password(
                    args.user, password, mechanism=args.mechanism, iterations=args.iterations
                )
                say(f"set {args.mechanism} for {args.user}")
            else:
                left = admin.delete_user(args.user, args.mechanism)
                kept = ", ".join(c.mechanism for c in left.credentials) or "nothing"
                say(f"deleted {args.mechanism or 'every credential'} of {args.user}; {kept} left")

    return guarded("user", body, out, err)


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass(f"password for {args.user}: ")
    if not password:
        raise UsageError("an empty password")
    return password
