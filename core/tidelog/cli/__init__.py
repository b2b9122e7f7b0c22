"""The ``tidelog`` command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from tidelog import __version__
from tidelog.cli import (
    acls,
    bench,
    chaos,
    console,
    doctor,
    groups,
    listening,
    records,
    topics,
    transactions,
    users,
)
from tidelog.errors import TidelogError


def _port(name: str, default: int) -> int:
    """A whole number from the environment (ports and milliseconds), checked."""
    value = os.environ.get(name, "")
    if not value:
        return default
    if not value.isdigit() or not 0 <= int(value) < 65536:
        raise SystemExit(f"tidelog: {name}={value!r} is not a port number")
    return int(value)


FLUSH_HELP = (
    "group commit's least window in ms: how long an idle host gathers produce requests before "
    "a flush; 0 flushes at once, and requests gather only while a flush is in flight"
)


def _kafka_and_flush(command: argparse.ArgumentParser, *, kafka_help: str, flush_help: str) -> None:
    """The options `tidelog dev` and `tidelog agent` share: the Kafka port and group commit."""
    command.add_argument(
        "--kafka-port",
        type=int,
        default=_port("TIDELOG_KAFKA_PORT", 9092),
        help=f"{kafka_help} (default $TIDELOG_KAFKA_PORT or 9092)",
    )
    command.add_argument(
        "--flush-ms",
        type=int,
        default=_port("TIDELOG_FLUSH_MS", 0),
        help=f"{flush_help} (default $TIDELOG_FLUSH_MS or 0)",
    )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="tidelog", description="Kafka's log, serverless on AWS.")
    top.add_argument("--version", action="version", version=f"tidelog {__version__}")
    commands = top.add_subparsers(dest="command", required=True)

    dev = commands.add_parser(
        "dev", help="run tidelog locally on the embedded AWS emulator (no account, no Docker)"
    )
    dev.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    dev.add_argument(
        "--api-port",
        type=int,
        default=_port("TIDELOG_API_PORT", 8080),
        help="port of the tidelog API (default $TIDELOG_API_PORT or 8080)",
    )
    dev.add_argument(
        "--aws-port",
        type=int,
        default=_port("TIDELOG_AWS_PORT", 4566),
        help="port of the AWS emulator (default $TIDELOG_AWS_PORT or 4566, LocalStack's)",
    )

    _kafka_and_flush(
        dev,
        kafka_help="port of the Kafka agent",
        flush_help=FLUSH_HELP,
    )
    dev.add_argument(
        "--flush-per-request",
        dest="group_commit",
        action="store_false",
        help="flush every produce request alone, as the Lambda functions do, instead of group "
        "commit",
    )

    dev.add_argument(
        "--schedule-speedup",
        type=float,
        default=1.0,
        help="run the template's schedules (roll, retention, compaction every minute; garbage "
        "collection every 5) this many times faster, to watch housekeeping happen (default 1)",
    )
    dev.add_argument(
        "--kafka-tls",
        action="store_true",
        help="also serve Kafka over TLS (an SSL listener on --kafka-tls-port), with a local CA "
        "made for it; prints the client settings",
    )
    dev.add_argument(
        "--kafka-tls-port",
        type=int,
        default=_port("TIDELOG_KAFKA_TLS_PORT", 9093),
        help="port of the SSL listener (default $TIDELOG_KAFKA_TLS_PORT or 9093)",
    )
    dev.add_argument(
        "--kafka-tls-dir",
        type=Path,
        default=None,
        help="where --kafka-tls writes its CA and certificates (default tidelog dev's own "
        "temporary directory, removed as it stops)",
    )
    dev.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Kafka broker setting, as kafka-server-start.sh takes it: num.partitions, "
        "auto.create.topics.enable, the group session bounds, listeners, "
        "sasl.enabled.mechanisms, authorizer.class.name, super.users, "
        "allow.everyone.if.no.acl.found and more (docs/local-stack.md); also read from "
        "KAFKA_NUM_PARTITIONS and the like, as Kafka's container image reads them",
    )
    dev.add_argument(
        "--iam-auth",
        action="store_true",
        help="demand SigV4-signed requests, as the deployed stack's IAM authorization does, by "
        "this environment's AWS key ($AWS_ACCESS_KEY_ID, else test/test)",
    )
    dev.add_argument(
        "--template",
        type=Path,
        default=None,
        help="the SAM template to run (default tidelog's own); its CodeUri and agents.yaml are "
        "found beside it",
    )
    dev.add_argument(
        "--no-role-policies",
        dest="role_policies",
        action="store_false",
        help="do not hold each function's AWS calls to its role's policies (they are held by "
        "default, and a refused call fails with AccessDenied naming the action)",
    )

    agent = commands.add_parser(
        "agent", help="serve Kafka's wire protocol over a tidelog cluster (extra: kafka)"
    )
    agent.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 for all)"
    )
    agent.add_argument(
        "--advertised-host",
        default=os.environ.get("TIDELOG_ADVERTISED_HOST") or None,
        help="the host clients are told to connect to (default $TIDELOG_ADVERTISED_HOST, else "
        "the bound address, else this machine's name); set it behind a port forward",
    )
    agent.add_argument(
        "--zone",
        default=os.environ.get("TIDELOG_AZ") or None,
        help="the availability zone this agent serves, as clients name theirs with "
        "tidelog_az= in client.id (default $TIDELOG_AZ, else the ECS task's zone)",
    )
    agent.add_argument(
        "--cluster",
        default=None,
        help="the cluster's stack name (default $TIDELOG_CLUSTER or tidelog); "
        "TIDELOG_TABLE and TIDELOG_BUCKET, when set, name the resources directly",
    )
    _kafka_and_flush(
        agent,
        kafka_help="port to listen on",
        flush_help=FLUSH_HELP,
    )
    listening.add_options(agent)

    commands.add_parser("openapi", help="print the API's OpenAPI document, built from the code")
    topics.add_commands(commands)
    records.add_commands(commands)
    groups.add_commands(commands)
    transactions.add_commands(commands)
    users.add_commands(commands)
    acls.add_commands(commands)
    bench.add_commands(commands)
    doctor.add_command(commands)
    console.add_command(commands)
    chaos.add_command(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    top = parser()
    args, extra = top.parse_known_args(argv)
    if extra and args.command == "produce" and not any(a.startswith("-") for a in extra):
        args.files += extra  # argparse takes positionals in one run: `produce t -q FILE`
    elif extra:
        top.error(f"unrecognized arguments: {' '.join(extra)}")
    command = COMMANDS.get(args.command)
    if command is not None:
        return command(args)
    try:
        from tidelog.local import broker, dev, openapi  # noqa: PLC0415 - the local extra
    except ImportError as exc:
        print(
            f"tidelog {args.command} needs the local extra: pip install 'tidelog[local]' ({exc})",
            file=sys.stderr,
        )
        return 2
    if args.command == "dev":
        try:
            dev.run(
                args.host,
                args.api_port,
                args.aws_port,
                args.flush_ms,
                group_commit=args.group_commit,
                schedule_speedup=args.schedule_speedup,
                kafka_port=args.kafka_port,
                iam_auth=args.iam_auth,
                kafka_tls_port=args.kafka_tls_port if args.kafka_tls else None,
                tls_dir=args.kafka_tls_dir,
                template_file=args.template,
                role_policies=args.role_policies,
                overrides=args.override,
            )
        except (OSError, broker.BrokerSettingError) as exc:
            print(f"tidelog dev: {exc}", file=sys.stderr)
            return 1
        return 0
    print(openapi.document(), end="")
    return 0


def _agent(args: argparse.Namespace) -> int:
    try:
        from tidelog.kafka import agent  # noqa: PLC0415 - the kafka extra, on demand
    except ImportError as exc:
        print(
            f"tidelog agent needs the kafka extra: pip install 'tidelog[kafka]' ({exc})",
            file=sys.stderr,
        )
        return 2
    try:
        agent.run(
            args.host,
            args.kafka_port,
            advertised_host=args.advertised_host,
            zone=args.zone,
            cluster=args.cluster,
            flush_ms=args.flush_ms,
            listeners=listening.listeners(args),
            tls=listening.tls_config(args),
            sasl_mechanisms=listening.sasl_mechanisms(args),
            plain_over_plaintext=args.sasl_plain_over_plaintext,
            authorizer=listening.authorizer(args),
            max_reauth_ms=args.connections_max_reauth_ms,
        )
    except (OSError, LookupError, ValueError, TidelogError) as exc:
        print(f"tidelog agent: {exc}", file=sys.stderr)
        return 1
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "agent": _agent,
    "topic": topics.run,
    "offsets": topics.run,
    "produce": records.run,
    "consume": records.run,
    "group": groups.run,
    "txn": transactions.run,
    "user": users.run,
    "acl": acls.run,
    "bench": bench.run,
    "doctor": doctor.run,
    "console": console.run,
    "chaos": chaos.run,
}
