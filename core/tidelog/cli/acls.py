"""``tidelog acl``: Kafka's ACLs over the signed HTTP API, with kafka-acls.sh's words, so the
first ones can be made before any Kafka user may make them (docs/security.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from tidelog.acls import OPERATION_NAMES
from tidelog.cli.topics import UsageError, connection, connection_options, guarded, render

COLUMNS = ("PRINCIPAL", "PERMISSION", "OPERATION", "RESOURCE", "NAME", "PATTERN", "HOST")


def add_commands(commands: Any) -> None:
    acl = commands.add_parser("acl", help="list, add and remove Kafka's ACLs")
    actions = acl.add_subparsers(dest="action", required=True)

    listing = actions.add_parser("list", help="every ACL, or those of a principal or resource")
    listing.add_argument("--principal", help="only this principal's, e.g. User:alice")
    _resource_options(listing, required=False)
    connection_options(listing, read=True)

    for action, verb in (("add", "allow or deny"), ("remove", "stop allowing or denying")):
        changing = actions.add_parser(action, help=f"{verb} a principal an operation")
        who = changing.add_mutually_exclusive_group(required=True)
        who.add_argument("--allow-principal", metavar="PRINCIPAL", help="e.g. User:alice")
        who.add_argument("--deny-principal", metavar="PRINCIPAL", help="a DENY wins over any allow")
        changing.add_argument(
            "--operation",
            action="append",
            required=True,
            choices=OPERATION_NAMES,
            help="repeatable",
        )
        changing.add_argument("--host", default="*", help="a client address (default: any)")
        changing.add_argument(
            "--resource-pattern-type",
            choices=("literal", "prefixed"),
            default="literal",
            help="prefixed: every resource whose name starts with the one given",
        )
        _resource_options(changing, required=True)
        connection_options(changing)


def _resource_options(command: argparse.ArgumentParser, *, required: bool) -> None:
    resource = command.add_mutually_exclusive_group(required=required)
    resource.add_argument("--topic")
    resource.add_argument("--group")
    resource.add_argument("--transactional-id")
    # kafka-acls.sh's --cluster: here --cluster names a deployed stack, as in every command.
    resource.add_argument(
        "--kafka-cluster", action="store_true", help="the cluster, as a resource of ACLs"
    )


def _resource(args: argparse.Namespace) -> tuple[str | None, str | None]:
    if args.kafka_cluster:
        return "cluster", "kafka-cluster"
    for kind in ("topic", "group", "transactional_id"):
        name = getattr(args, kind)
        if name is not None:
            if not name:
                raise UsageError(f"an empty {kind.replace('_', ' ')}")
            return kind, name
    return None, None


def run(args: argparse.Namespace, out: Any = None, err: Any = None) -> int:
    def body(say: Callable[[str], None]) -> None:
        from tidelog.client import Admin, KafkaAcl  # noqa: PLC0415 - the client extra

        kind, name = _resource(args)
        with Admin(**connection(args)) as admin:
            if args.action == "list":
                acls = admin.list_acls(
                    principal=args.principal, resource_type=kind, resource_name=name
                )
                rows = [
                    (
                        a.principal,
                        a.permission,
                        a.operation,
                        a.resource_type,
                        a.resource_name,
                        a.pattern_type,
                        a.host,
                    )
                    for a in acls
                ]
                say(render(args.output, acls, COLUMNS, rows))
                return
            permission = "allow" if args.allow_principal else "deny"
            principal = args.allow_principal or args.deny_principal
            for operation in dict.fromkeys(args.operation):
                acl = KafkaAcl(
                    str(kind),
                    str(name),
                    principal,
                    operation,
                    permission=permission,
                    pattern_type=args.resource_pattern_type,
                    host=args.host,
                )
                if args.action == "add":
                    admin.add_acl(acl)
                    say(f"{permission} {principal} {operation} on {kind} {name}")
                else:
                    admin.remove_acl(acl)
                    say(f"removed: {permission} {principal} {operation} on {kind} {name}")

    return guarded("acl", body, out, err)
