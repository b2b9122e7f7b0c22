"""`tidelog produce` and `tidelog consume`: records in and out of a topic from a shell, with
kcat's grammar (``-o``, ``-e``, ``-K``, ``%k %v`` formats) and rpk's shape.

``consume --format json`` prints one JSON object a line, and ``produce --format json`` reads
exactly those lines back, so a topic round-trips through a file: keys, values, headers and
timestamps as they were (bytes that are not UTF-8 travel as base64, marked ``"encoding":
"base64"``, as the API marks them).
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

from tidelog.cli.progress import progress
from tidelog.cli.topics import UsageError, connection, connection_options, guarded, parse_time

FORMATS = ("text", "json")
_TOKENS = re.compile(r"%[tpoTkvsKSh%]|\\[nt\\]")
_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def add_commands(commands: Any) -> None:
    produce = commands.add_parser(
        "produce", help="records from stdin or files, one a line, into a topic"
    )
    produce.add_argument("topic")
    produce.add_argument("files", nargs="*", metavar="file", help="read these, not stdin")
    produce.add_argument("-k", "--key", help="every record's key")
    produce.add_argument(
        "-K", "--key-delimiter", metavar="DELIM", help="each line is KEY<DELIM>VALUE"
    )
    produce.add_argument(
        "-H", "--header", action="append", default=[], metavar="K=V", help="a header, each record"
    )
    produce.add_argument("-p", "--partition", type=int, help="this partition (default: the key's)")
    produce.add_argument(
        "--format", choices=FORMATS, default="text", help="lines of text, or consume's JSON"
    )
    produce.add_argument("-z", "--compression", choices=_CODECS, default="none")
    produce.add_argument("-q", "--quiet", action="store_true", help="a summary, not each offset")
    connection_options(produce)

    consume = commands.add_parser("consume", help="print a topic's records")
    consume.add_argument("topic")
    consume.add_argument(
        "-o",
        "--offset",
        default="end",
        help="start, end (default), N, -N (N before the end), or @TIME (ms, ISO, @-1h)",
    )
    consume.add_argument("-n", "--num", type=int, help="exit after this many records")
    consume.add_argument(
        "-e", "--exit", action="store_true", help="exit at the end (as it was on starting)"
    )
    consume.add_argument("-p", "--partition", type=int, action="append", help="only these")
    consume.add_argument("-g", "--group", help="join this group (default: read all partitions)")
    consume.add_argument(
        "--isolation",
        choices=("read_committed", "read_uncommitted"),
        default="read_committed",
        help="read_committed (default): committed transactions only, up to the last stable "
        "offset; read_uncommitted: every record, aborted ones too",
    )
    consume.add_argument(
        "-f",
        "--format",
        default="text",
        help="text (the value), json, or kcat's tokens: %%t %%p %%o %%T %%k %%v (%%s) %%K %%S %%h",
    )
    connection_options(consume)


def run(args: argparse.Namespace, out: Any = None, err: Any = None) -> int:
    stdout = out or sys.stdout
    stderr = err or sys.stderr

    def body(say: Callable[[str], None]) -> None:
        if args.command == "produce":
            _produce(args, say, stderr)
        else:
            _consume(args, stdout)

    try:
        return guarded(args.command, body, stdout, stderr)
    except KeyboardInterrupt:
        return 0  # ^C ends a consume that follows, as kcat's does
    except BrokenPipeError:
        return 0  # `tidelog consume ... | head`


# -- produce ------------------------------------------------------------------------------


def _produce(args: argparse.Namespace, say: Callable[[str], None], err: IO[str]) -> None:
    from tidelog.client import Producer  # noqa: PLC0415 - the client extra, on demand

    headers = _headers(args.header)
    if args.key is not None and args.key_delimiter is not None:
        raise UsageError("give -k or -K, not both")
    if args.format == "json" and args.key_delimiter is not None:
        raise UsageError("-K is for text lines; JSON lines carry their keys")
    config = connection(args)
    pending: deque[Future[Any]] = deque()
    counts: dict[int, int] = {}

    def report(done: Future[Any]) -> None:
        metadata = done.result()
        counts[metadata.partition] = counts.get(metadata.partition, 0) + 1
        if not args.quiet:
            say(f"Produced to partition {metadata.partition} at offset {metadata.offset}")

    with Producer(config, compression_type=args.compression) as producer:
        for number, line in _lines(args.files, err):
            record = _record(args, line, number, headers)
            pending.append(producer.produce(args.topic, **record))
            while pending and pending[0].done():
                report(pending.popleft())
        producer.flush()
        while pending:
            report(pending.popleft())
    if args.quiet:
        total = sum(counts.values())
        say(f"produced {total} records to {args.topic} ({len(counts)} partitions)")


def _lines(files: list[str], err: IO[str]) -> Iterator[tuple[int, str]]:
    """Each line, numbered, without its line end; a progress bar on a terminal for files."""
    if not files:
        for number, line in enumerate(sys.stdin, 1):
            yield number, line.rstrip("\r\n")
        return
    paths = [Path(f) for f in files]
    for path in paths:
        if not path.is_file():
            raise UsageError(f"{path}: no such file")
    with progress(err, "producing", sum(p.stat().st_size for p in paths), in_bytes=True) as advance:
        number = 0
        for path in paths:
            with path.open("rb") as handle:
                for raw in handle:
                    number += 1
                    advance(len(raw))
                    yield number, raw.decode("utf-8", "surrogateescape").rstrip("\r\n")


def _record(
    args: argparse.Namespace, line: str, number: int, headers: list[tuple[str, bytes]]
) -> dict[str, Any]:
    record: dict[str, Any] = {"partition": args.partition}
    if args.format == "json":
        record.update(_from_json(line, number))
        record["headers"] = [*record["headers"], *headers]
        return record
    value = _bytes(line)
    key = None if args.key is None else args.key.encode()
    if args.key_delimiter is not None:
        found, sep, rest = line.partition(args.key_delimiter)
        if not sep:
            raise UsageError(f"line {number} has no key delimiter {args.key_delimiter!r}")
        key, value = _bytes(found), _bytes(rest)
    return {**record, "key": key, "value": value, "headers": headers}


def _from_json(line: str, number: int) -> dict[str, Any]:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise UsageError(f"line {number} is not JSON: {exc}") from None
    if not isinstance(item, dict):
        raise UsageError(f"line {number}: a JSON object, as consume --format json prints")
    unknown = set(item) - {
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
        "encoding",
    }
    if unknown:
        raise UsageError(f"line {number}: unknown fields {sorted(unknown)}")
    decode = _decoder(item.get("encoding", "utf8"), number)
    try:
        headers = [(h["key"], decode(h["value"])) for h in item.get("headers") or []]
        timestamp = item.get("timestamp")
        return {
            "key": decode(item.get("key")),
            "value": decode(item.get("value")),
            "headers": headers,
            "timestamp": None if timestamp is None else int(timestamp),
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"line {number}: {exc!r}") from None


def _decoder(encoding: str, number: int) -> Callable[[str | None], bytes | None]:
    if encoding == "utf8":
        return lambda v: None if v is None else str(v).encode()
    if encoding == "base64":
        return lambda v: None if v is None else base64.b64decode(v, validate=True)
    raise UsageError(f"line {number}: encoding is utf8 or base64, not {encoding!r}")


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _headers(items: Iterable[str]) -> list[tuple[str, bytes]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"-H {item!r} is not K=V")
        out.append((key, value.encode()))
    return out


# -- consume ------------------------------------------------------------------------------


def _consume(args: argparse.Namespace, out: IO[str]) -> None:
    from tidelog.client import Admin, Consumer  # noqa: PLC0415 - the client extra

    render = _renderer(args.format)
    if args.num is not None and args.num < 1:
        raise UsageError("-n must be at least 1")
    api = connection(args)
    with Admin(**api) as admin:
        described = admin.describe_topic(args.topic)
        committed = args.isolation == "read_committed"
        ends = {
            p.partition: p.last_stable_offset if committed else p.high_watermark
            for p in described.offsets
        }
        partitions = args.partition or sorted(ends)
        if set(partitions) - set(ends):
            raise UsageError(f"{args.topic} has partitions 0-{described.partitions - 1}")
        starts: dict[int, int] = {}
        if args.group:
            if args.partition:
                raise UsageError("-p reads chosen partitions; a group assigns them: not both")
            config = {**api, "group.id": args.group, **_group_reset(args.offset)}
        else:
            config = {**api, "enable.auto.commit": False}
            starts = _starts(admin, args.topic, ends, described.offsets, partitions, args.offset)
        config["isolation.level"] = args.isolation
    seen = 0
    with Consumer(config) as consumer:
        if args.group:
            consumer.subscribe([args.topic])
        else:
            from tidelog.client import TopicPartition  # noqa: PLC0415

            consumer.assign([TopicPartition(args.topic, p, starts[p]) for p in partitions])
        while True:
            wanted = 500 if args.num is None else min(500, args.num - seen)
            for record in consumer.consume(wanted, 0.5):
                out.write(render(record))
                seen += 1
            out.flush()
            if args.num is not None and seen >= args.num:
                return
            if args.exit and _at_end(consumer, ends):
                return


def _starts(  # noqa: PLR0917 - the one caller names them all
    admin: Any,
    topic: str,
    ends: Mapping[int, int],
    bounds: Iterable[Any],
    partitions: list[int],
    offset: str,
) -> dict[int, int]:
    """Each partition's first offset for ``-o``, within its log (``ends``: where the
    isolation level's reads end)."""
    by_partition = {b.partition: b for b in bounds}
    now = time.time_ns() // 1_000_000
    out = {}
    for p in partitions:
        start, end = by_partition[p].log_start_offset, ends[p]
        if offset in ("start", "beginning", "earliest"):
            out[p] = start
        elif offset in ("end", "latest"):
            out[p] = end
        elif offset.startswith("@"):
            found = admin.offset_at(topic, p, parse_time(offset[1:], now)).offset
            out[p] = end if found < 0 else found
        elif re.fullmatch(r"-?\d+", offset):
            n = int(offset)
            out[p] = min(max(end + n if n < 0 else n, start), end)
        else:
            raise UsageError(f"-o {offset!r}: start, end, N, -N or @TIME")
    return out


def _group_reset(offset: str) -> dict[str, str]:
    """A group starts from its committed offsets; ``-o`` says where it starts without one."""
    resets = {"start": "earliest", "beginning": "earliest", "earliest": "earliest"}
    resets |= {"end": "latest", "latest": "latest"}
    if offset not in resets:
        raise UsageError("with -g, -o is start or end: where to begin without a commit")
    return {"auto.offset.reset": resets[offset]}


def _at_end(consumer: Any, ends: Mapping[int, int]) -> bool:
    assigned = consumer.assignment()
    if not assigned:
        return False
    positions = consumer.position(assigned)
    return all(tp.offset >= ends.get(tp.partition, 0) for tp in positions)


def _renderer(spec: str) -> Callable[[Any], str]:
    if spec == "text":
        return lambda r: _text(r.value) + "\n"
    if spec == "json":
        return lambda r: json.dumps(to_json(r), ensure_ascii=False) + "\n"
    if "%" not in spec:
        raise UsageError(f"--format {spec!r}: text, json, or tokens such as '%k %v'")
    pieces = _TOKENS.split(spec)
    tokens = _TOKENS.findall(spec)

    def render(r: Any) -> str:
        out = [pieces[0]]
        for token, piece in zip(tokens, pieces[1:], strict=True):
            out += [_token(token, r), piece]
        return "".join(out) + ("" if spec.endswith(("\\n", "\n")) else "\n")

    return render


_FIELDS: dict[str, Callable[[Any], str]] = {
    "%t": lambda r: str(r.topic),
    "%p": lambda r: str(r.partition),
    "%o": lambda r: str(r.offset),
    "%T": lambda r: str(r.timestamp),
    "%k": lambda r: _text(r.key),
    "%v": lambda r: _text(r.value),
    "%s": lambda r: _text(r.value),
    "%K": lambda r: str(-1 if r.key is None else len(r.key)),
    "%S": lambda r: str(-1 if r.value is None else len(r.value)),
    "%h": lambda r: ",".join(f"{k}={_text(v)}" for k, v in r.headers),
    "%%": lambda r: "%",
    "\\n": lambda r: "\n",
    "\\t": lambda r: "\t",
    "\\\\": lambda r: "\\",
}
"""kcat's format tokens (``%v`` is rpk's spelling of kcat's ``%s``)."""


def _token(token: str, r: Any) -> str:
    return _FIELDS[token](r)


def _text(value: bytes | None) -> str:
    return "" if value is None else value.decode("utf-8", "replace")


def to_json(record: Any) -> dict[str, Any]:
    """A record as ``consume --format json`` prints it (``produce --format json`` reads it)."""
    parts = [record.key, record.value, *(v for _, v in record.headers)]
    encoding = "utf8" if all(_utf8(p) for p in parts) else "base64"

    def show(b: bytes | None) -> str | None:
        if b is None:
            return None
        return b.decode() if encoding == "utf8" else base64.b64encode(b).decode()

    item: dict[str, Any] = {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestamp_type": record.timestamp_type,
        "key": show(record.key),
        "value": show(record.value),
        "headers": [{"key": k, "value": show(v)} for k, v in record.headers],
    }
    if encoding == "base64":
        item["encoding"] = "base64"
    return item


def _utf8(value: bytes | None) -> bool:
    try:
        if value is not None:
            value.decode()
    except UnicodeDecodeError:
        return False
    return True
