"""`tidelog topic ...` and `tidelog offsets`: topics over the HTTP API, in rpk's shape.

Output is a plain, stable table (``--output json`` or ``yaml`` for scripts). Exit codes: 0 ok,
1 an error from the API (its Kafka name printed first), 2 a usage error.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, is_dataclass
from typing import Any

from tidelog.errors import TidelogError

OUTPUTS = ("table", "json", "yaml")
_RELATIVE = re.compile(r"^-(\d+)(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def add_commands(commands: Any) -> None:
    """Add ``topic`` and ``offsets`` to the ``tidelog`` command's subparsers."""
    topic = commands.add_parser("topic", help="list, describe, create, alter and delete topics")
    actions = topic.add_subparsers(dest="action", required=True)

    listing = actions.add_parser("list", help="every topic, with its partitions and policy")
    connection_options(listing, read=True)

    describe = actions.add_parser(
        "describe", help="a topic's configs and partitions' offsets and sizes"
    )
    describe.add_argument("topic")
    connection_options(describe, read=True)

    create = actions.add_parser("create", help="create topics")
    create.add_argument("topics", nargs="+", metavar="topic")
    create.add_argument("-p", "--partitions", type=int, help="partitions (default: the API's)")
    create.add_argument(
        "-c", "--config", action="append", default=[], metavar="KEY=VALUE", help="a config"
    )
    connection_options(create)

    alter = actions.add_parser("alter", help="set or reset a topic's configs")
    alter.add_argument("topic")
    alter.add_argument(
        "-c", "--config", action="append", default=[], metavar="KEY=VALUE", help="set a config"
    )
    alter.add_argument(
        "--delete", action="append", default=[], metavar="KEY", help="reset a config"
    )
    connection_options(alter)

    grow = actions.add_parser("add-partitions", help="add partitions to a topic")
    grow.add_argument("topic")
    grow.add_argument(
        "-n", "--num", type=int, required=True, help="how many partitions to add (as rpk's)"
    )
    connection_options(grow)

    trim = actions.add_parser(
        "delete-records",
        help="delete a partition's records before an offset (as kafka-delete-records)",
    )
    trim.add_argument("topic")
    trim.add_argument(
        "-p",
        "--partition",
        action="append",
        required=True,
        metavar="PARTITION=OFFSET",
        help="the partition's log then starts at OFFSET (-1: at its high watermark)",
    )
    connection_options(trim)

    delete = actions.add_parser("delete", help="delete topics")
    delete.add_argument("topics", nargs="+", metavar="topic")
    connection_options(delete)

    offsets = commands.add_parser(
        "offsets", help="each partition's offset at the earliest, the latest, or a time"
    )
    offsets.add_argument("topic")
    offsets.add_argument(
        "--at",
        default="latest",
        help="earliest, latest, max-timestamp, a time in ms, an ISO time (UTC unless it says), "
        "or --at=-1h, -30m (default latest)",
    )
    connection_options(offsets, read=True)


def connection_options(command: argparse.ArgumentParser, *, read: bool = False) -> None:
    """--url, --cluster and --sign (and -o for commands that read): every API command's."""
    command.add_argument("--url", help="the API's URL (default $TIDELOG_URL, else tidelog dev's)")
    command.add_argument(
        "--cluster", help="a deployed stack's name, for its ApiUrl output ($TIDELOG_CLUSTER)"
    )
    command.add_argument(
        "--sign",
        action="store_true",
        default=None,
        help="sign even a loopback endpoint (tidelog dev --iam-auth); others always are",
    )
    if read:
        command.add_argument("-o", "--output", choices=OUTPUTS, default="table")


def connection(args: argparse.Namespace) -> dict[str, Any]:
    """The API the command names (``--url``, ``--cluster``, ``--sign``), as the client's
    ``url``/``cluster``/``sign`` config keys; those not given are left to the client."""
    given = {"url": args.url, "cluster": args.cluster, "sign": args.sign}
    return {k: v for k, v in given.items() if v is not None}


def run(args: argparse.Namespace, out: Any = None, err: Any = None) -> int:
    def body(say: Callable[[str], None]) -> None:
        from tidelog.client import Admin  # noqa: PLC0415 - the client extra, on demand

        with Admin(**connection(args)) as admin:
            (_topic if args.command == "topic" else _offsets)(admin, args, say)

    return guarded(args.command, body, out, err)


def guarded(
    command: str, body: Callable[[Callable[[str], None]], None], out: Any = None, err: Any = None
) -> int:
    """Run an API command's ``body`` (given a function that prints a line to ``out``), turning
    what it raises into the exit codes: 2 usage or a missing extra, 1 an API error."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        body(lambda text: print(text, file=out, flush=True))
    except ImportError as exc:
        print(
            f"tidelog {command} needs the client extra: pip install 'tidelog[client]' ({exc})",
            file=err,
        )
        return 2
    except UsageError as exc:
        print(f"tidelog {command}: {exc}", file=err)
        return 2
    except TidelogError as exc:
        print(f"{exc.kafka_error.name}: {exc.message}", file=err)
        return 1
    except (LookupError, RuntimeError, OSError) as exc:  # no stack, no credentials, no route
        print(f"tidelog {command}: {exc}", file=err)
        return 1
    return 0


class UsageError(ValueError):
    """The command line asks for something impossible: exit 2."""


def _topic(admin: Any, args: argparse.Namespace, say: Callable[[str], None]) -> None:
    if args.action == "list":
        topics = admin.list_topics()
        rows = [
            (
                t.name,
                t.partitions,
                t.configs.get("cleanup.policy", "delete"),
                t.configs.get("retention.ms", "-"),
            )
            for t in sorted(topics, key=lambda t: t.name)
        ]
        say(render(args.output, topics, ("NAME", "PARTITIONS", "CLEANUP", "RETENTION.MS"), rows))
    elif args.action == "describe":
        _describe(admin, args, say)
    elif args.action == "create":
        configs = _pairs(args.config)
        for name in args.topics:
            created = admin.create_topic(name, args.partitions, configs)
            say(f"created {created.name} ({created.partitions} partitions)")
    elif args.action == "alter":
        changes: dict[str, Any] = {**_pairs(args.config), **dict.fromkeys(args.delete)}
        if not changes:
            raise UsageError("give -c KEY=VALUE to set or --delete KEY to reset")
        altered = admin.alter_configs(args.topic, changes)
        say(
            f"altered {altered.name}: "
            + ", ".join(
                f"{k}={altered.configs[k]}" if k in altered.configs else f"{k} reset"
                for k in changes
            )
        )
    elif args.action == "add-partitions":
        if args.num < 1:
            raise UsageError("--num must be at least 1")
        current = admin.describe_topic(args.topic).partitions
        grown = admin.add_partitions(args.topic, current + args.num)
        say(f"{grown.name}: {current} -> {grown.partitions} partitions")
    elif args.action == "delete-records":
        deleted = admin.delete_records(args.topic, _partition_offsets(args.partition))
        for partition, start in sorted(deleted.items()):
            say(f"{args.topic}-{partition}: the log now starts at {start}")
    else:
        for name in args.topics:
            admin.delete_topic(name)
            say(f"deleted {name}")


def _describe(admin: Any, args: argparse.Namespace, say: Callable[[str], None]) -> None:
    info = admin.describe_topic(args.topic, sizes=True)
    if args.output != "table":
        say(render(args.output, info, (), []))
        return
    lines = [
        f"NAME        {info.name}",
        f"TOPIC ID    {info.topic_id}",
        f"PARTITIONS  {info.partitions}",
    ]
    lines += [f"CONFIG      {k}={v}" for k, v in sorted(info.configs.items())]
    partitions = [
        (p.partition, p.log_start_offset, p.high_watermark, p.records, p.size_bytes)
        for p in info.offsets
    ]
    header = ("PARTITION", "LOG-START", "HIGH-WATERMARK", "RECORDS", "BYTES")
    table = _table(header, partitions)
    say("\n".join(lines) + "\n\n" + table)


def _partition_offsets(pairs: Iterable[str]) -> dict[int, int]:
    wanted = {}
    for pair in pairs:
        partition, _, offset = pair.partition("=")
        try:
            wanted[int(partition)] = int(offset)
        except ValueError:
            raise UsageError(f"--partition {pair!r}: give PARTITION=OFFSET") from None
    return wanted


def _offsets(admin: Any, args: argparse.Namespace, say: Callable[[str], None]) -> None:
    at = parse_time(args.at, time.time_ns() // 1_000_000)
    partitions = admin.describe_topic(args.topic).partitions
    answers = [(p, admin.offset_at(args.topic, p, at)) for p in range(partitions)]
    structured = [
        {"partition": p, "offset": a.offset, "timestamp": a.timestamp} for p, a in answers
    ]
    rows = [(p, a.offset, a.timestamp) for p, a in answers]
    say(render(args.output, structured, ("PARTITION", "OFFSET", "TIMESTAMP"), rows))


def parse_time(value: str, now_ms: int) -> str | int:
    """earliest, latest, max-timestamp, ms since the epoch, an ISO 8601 time (UTC unless it
    says), or a time relative to now (-30s, -15m, -1h, -7d)."""
    if value in ("earliest", "latest", "max-timestamp"):
        return value
    if value.isdigit():
        return int(value)
    relative = _RELATIVE.match(value)
    if relative:
        return now_ms - int(relative.group(1)) * _UNIT_MS[relative.group(2)]
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(
            f"--at {value!r}: give earliest, latest, max-timestamp, ms, an ISO time or -1h"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def _pairs(items: Iterable[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{item!r} is not KEY=VALUE")
        pairs[key] = value
    return pairs


def render(output: str, data: Any, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    if output == "table":
        return _table(header, rows)
    plain = _plain(data)
    if output == "json":
        return json.dumps(plain, indent=2, sort_keys=True)
    import yaml  # noqa: PLC0415 - only for --output yaml

    return str(yaml.safe_dump(plain, sort_keys=True)).rstrip("\n")


def _plain(data: Any) -> Any:
    if is_dataclass(data) and not isinstance(data, type):
        return _plain(asdict(data))
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_plain(v) for v in data]
    return data


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Plain columns, stable for scripts; on a terminal, rich's table."""
    if sys.stdout.isatty():
        return _rich_table(header, rows)
    cells = [list(header), *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def _rich_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    import io  # noqa: PLC0415 - only on a terminal
    import shutil  # noqa: PLC0415

    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    table = Table(*header, box=None, header_style="bold")
    for row in rows:
        table.add_row(*(str(c) for c in row))
    screen = io.StringIO()
    width = shutil.get_terminal_size().columns
    Console(file=screen, force_terminal=True, width=width).print(table)
    return screen.getvalue().rstrip("\n")
