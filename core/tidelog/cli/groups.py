"""`tidelog group list|describe|seek|delete`: consumer groups over the HTTP API, in rpk's shape.

``describe`` shows the members with their partitions, then each partition's committed offset,
high watermark, lag in records and lag in time. ``seek`` moves an empty group's committed
offsets: to the start, the end, a time, or the offsets a file lists (rpk's ``--to-file``).
``delete`` removes empty groups with their offsets (Kafka's DeleteGroups).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tidelog.cli.topics import (
    UsageError,
    connection,
    connection_options,
    guarded,
    parse_time,
    render,
)
from tidelog.errors import TidelogError


def add_commands(commands: Any) -> None:
    group = commands.add_parser("group", help="list, describe, seek and delete consumer groups")
    actions = group.add_subparsers(dest="action", required=True)

    listing = actions.add_parser("list", help="every group, its state and members")
    connection_options(listing, read=True)

    describe = actions.add_parser(
        "describe", help="members and partitions, committed offsets, lag in records and time"
    )
    describe.add_argument("group")
    connection_options(describe, read=True)

    seek = actions.add_parser("seek", help="move an empty group's committed offsets")
    seek.add_argument("group")
    seek.add_argument(
        "--to",
        required=True,
        help="start, end, a time (ms, ISO, -1h), or a file of 'TOPIC PARTITION OFFSET' lines",
    )
    seek.add_argument(
        "--topics", nargs="+", default=[], help="only these (default: those it has offsets for)"
    )
    connection_options(seek, read=True)

    delete = actions.add_parser("delete", help="delete empty groups and their offsets")
    delete.add_argument("groups", nargs="+", metavar="group")
    connection_options(delete)


def run(args: argparse.Namespace, out: Any = None, err: Any = None) -> int:
    def body(say: Callable[[str], None]) -> None:
        from tidelog.client import Http  # noqa: PLC0415 - the client extra, on demand

        with Http(**connection(args)) as http:
            if args.action == "list":
                _list(http, args, say)
            elif args.action == "describe":
                _describe(http, args, say)
            elif args.action == "seek":
                _seek(http, args, say)
            else:
                for name in args.groups:
                    http.request("DELETE", f"/v1/groups/{quote(name, safe='')}")
                    say(f"deleted {name}")

    return guarded("group", body, out, err)


def _list(http: Any, args: argparse.Namespace, say: Callable[[str], None]) -> None:
    groups = sorted(http.get("/v1/groups")["groups"], key=lambda g: g["group"])
    rows = [(g["group"], g["state"], g["members"]) for g in groups]
    say(render(args.output, groups, ("GROUP", "STATE", "MEMBERS"), rows))


def _describe(http: Any, args: argparse.Namespace, say: Callable[[str], None]) -> None:
    path = f"/v1/groups/{quote(args.group, safe='')}"
    group = http.get(path)
    offsets = http.get(f"{path}/offsets")["offsets"]
    if args.output != "table":
        say(render(args.output, {**group, "offsets": offsets}, (), []))
        return
    owner = {
        (a["topic"], p): m["member_id"]
        for m in group["members"]
        for a in m["assignment"]
        for p in a["partitions"]
    }
    lines = [
        f"GROUP       {group['group']}",
        f"STATE       {group['state']}",
        f"PROTOCOL    {group['protocol'] or '-'}",
        f"GENERATION  {group['generation_id']}",
        f"MEMBERS     {len(group['members'])}",
    ]
    members = [
        (
            m["member_id"],
            m["group_instance_id"] or "-",
            ",".join(m["topics"]) or m["topic_pattern"],
            " ".join(f"{a['topic']}:{_spans(a['partitions'])}" for a in m["assignment"]) or "-",
        )
        for m in group["members"]
    ]
    committed = {(o["topic"], o["partition"]): o for o in offsets}
    keys = sorted(set(committed) | set(owner))
    rows = [
        (
            topic,
            partition,
            owner.get((topic, partition), "-"),
            *(
                (o["offset"], o["high_watermark"], o["lag"], o["lag_ms"])
                if (o := committed.get((topic, partition)))
                else ("-", "-", "-", "-")
            ),
        )
        for topic, partition in keys
    ]
    sections = ["\n".join(lines)]
    if members:
        heads = ["MEMBER-ID", "INSTANCE-ID", "SUBSCRIPTION", "ASSIGNMENT"]
        sections.append(render("table", None, heads, members))
    heads = ["TOPIC", "PARTITION", "MEMBER-ID", "COMMITTED", "HIGH-WATERMARK", "LAG", "LAG-MS"]
    sections.append(render("table", None, heads, rows))
    say("\n\n".join(sections))


def _seek(http: Any, args: argparse.Namespace, say: Callable[[str], None]) -> None:
    path = f"/v1/groups/{quote(args.group, safe='')}/offsets"
    to = args.to
    if to in ("start", "earliest", "end", "latest"):
        body: dict[str, Any] = {"to": "earliest" if to in ("start", "earliest") else "latest"}
    elif Path(to).is_file():
        _seek_to_file(http, path, Path(to), args, say)
        return
    else:
        at = parse_time(to, time.time_ns() // 1_000_000)
        body = {"to": "timestamp", "timestamp": at}
    answer = http.post(f"{path}/reset", {**body, "topics": args.topics})["offsets"]
    rows = [(o["topic"], o["partition"], o["offset"]) for o in answer]
    say(render(args.output, answer, ("TOPIC", "PARTITION", "OFFSET"), rows))


def _seek_to_file(
    http: Any, path: str, file: Path, args: argparse.Namespace, say: Callable[[str], None]
) -> None:
    """Commit the file's offsets as the empty group (Kafka's admin commit: no member, no
    generation); refused while the group has members."""
    offsets = []
    for number, line in enumerate(file.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 3 or not fields[1].isdigit() or not fields[2].isdigit():
            raise UsageError(f"{file}:{number}: 'TOPIC PARTITION OFFSET', not {line!r}")
        if args.topics and fields[0] not in args.topics:
            continue
        offsets.append({"topic": fields[0], "partition": int(fields[1]), "offset": int(fields[2])})
    if not offsets:
        raise UsageError(f"{file}: no offsets to seek to")
    answer = http.post(path, {"member_id": "", "generation_id": -1, "offsets": offsets})["offsets"]
    failed = [o for o in answer if o.get("error")]
    rows = [
        (o["topic"], o["partition"], o.get("offset", "-"), o.get("error") or "") for o in answer
    ]
    say(render(args.output, answer, ("TOPIC", "PARTITION", "OFFSET", "ERROR"), rows))
    if failed:
        first = failed[0]
        raise TidelogError(first.get("message") or first["error"], kafka_error=first["error"])


def _spans(partitions: list[int]) -> str:
    """0,1,2,5 as 0-2,5."""
    runs: list[list[int]] = []
    for p in sorted(partitions):
        if runs and runs[-1][-1] == p - 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
