"""The produce function's handler called in-process on in-memory stores, as a Lambda
environment calls it: no HTTP, no AWS call in the way. Benchmarks run it in an interpreter of
their own, so nothing else is counted:

- ``python -m benchmarks.inprocess soak REQUESTS`` prints one JSON line of
  ``[requests served, RSS MB]`` samples over single-record JSON produces;
- ``python -m benchmarks.inprocess cpu-batch BATCH_FILE`` prints the handler's CPU milliseconds
  per request posting that raw record batch; ``cpu-json JSON_FILE`` the same for that JSON
  produce request; ``aws-latency SEED`` prints the produce and produce -> fetch latencies of
  the handlers on in-memory stores under the aws-latency profile.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.report import ROOT, driven

SAMPLE_EVERY = 1000
_SCRATCH: list[tempfile.TemporaryDirectory[str]] = []  # each removed as the process exits


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc: this measurement needs Linux")


class Context:
    function_name = "produce"
    memory_limit_in_mb = 1024
    aws_request_id = "bench"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:produce"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


def event(
    resource: str,
    path: str,
    params: dict[str, str],
    body: bytes,
    content_type: str,
    *,
    binary: bool = True,
) -> Any:
    """An API Gateway proxy event for a POST, shaped as the recorded one in the tests. A body
    of a binary media type arrives base64-encoded; a JSON body arrives as text."""
    recorded: dict[str, Any] = json.loads(
        (ROOT / "tests/functional/events/get_cluster.json").read_text()
    )
    recorded.update(
        resource=resource,
        path=path,
        httpMethod="POST",
        headers={"Content-Type": content_type},
        multiValueHeaders=None,
        pathParameters=params,
        body=base64.b64encode(body).decode() if binary else body.decode(),
        isBase64Encoded=binary,
    )
    return recorded


def scratch_dir() -> str:
    """A directory for this process's staging or cache, removed as the process exits."""
    _SCRATCH.append(tempfile.TemporaryDirectory(prefix="tidelog-bench-"))
    return _SCRATCH[-1].name


def produce_function() -> tuple[ModuleType, Any, Any]:
    """The produce function's module, loaded as Lambda loads it, with the runtime's stores
    replaced by in-memory ones; and those stores."""
    os.environ.update(TIDELOG_TABLE="t", TIDELOG_BUCKET="b", TIDELOG_STAGING_DIR=scratch_dir())
    from tidelog import runtime  # noqa: PLC0415 - after the environment is set
    from tidelog.storage.memory import MemoryMetadataStore, MemoryObjectStore  # noqa: PLC0415

    meta, objects = MemoryMetadataStore(), MemoryObjectStore(runtime.clock_ms)
    runtime.metadata_store = lambda: meta  # type: ignore[assignment]
    runtime.object_store = lambda: objects  # type: ignore[assignment]
    spec = importlib.util.spec_from_file_location("app", ROOT / "functions/produce/app.py")
    assert spec is not None
    assert spec.loader is not None
    app = importlib.util.module_from_spec(spec)
    sys.modules["app"] = app
    spec.loader.exec_module(app)
    return app, meta, objects


def _forget_records(meta: Any, objects: Any, topic_id: str, partitions: int) -> None:
    """In Lambda the log's data lives in S3 and DynamoDB, not in the process: delete what was
    written (flush objects and index items) through the ports, so that what RSS still gains is
    what the handler and its libraries keep."""
    from tidelog.log import keys  # noqa: PLC0415
    from tidelog.storage import Delete  # noqa: PLC0415

    for info in list(objects.list("data/")):
        objects.delete(info.key)
    for partition in range(partitions):
        pk = keys.log_pk(topic_id, partition)
        for item in list(meta.query(pk, prefix=keys.INDEX_PREFIX)):
            meta.write(Delete(pk, str(item["sk"])))


def soak(requests: int) -> list[tuple[int, float]]:
    from tidelog import runtime  # noqa: PLC0415

    app, meta, objects = produce_function()
    topic_id = runtime.topics().create("soak", 3, {}).topic_id
    samples = []
    with contextlib.redirect_stdout(io.StringIO()) as printed:  # one metrics line per call
        for i in range(1, requests + 1):
            body = json.dumps({"records": [{"key": f"user-{i % 97}", "value": f"click {i}"}]})
            request = event(
                "/v1/topics/{topic}/records",
                "/v1/topics/soak/records",
                {"topic": "soak"},
                body.encode(),
                "application/json",
            )
            if app.handler(request, Context())["statusCode"] != 200:
                raise RuntimeError(f"request {i} failed")
            if i % SAMPLE_EVERY == 0:
                _forget_records(meta, objects, topic_id, 3)
                samples.append((i, rss_mb()))
                printed.seek(0)
                printed.truncate()
    return samples


def cpu_ms(body: bytes, kind: str = "batch", warmup: int = 3, requests: int = 20) -> float:
    """CPU per request of the produce handler posting ``body``: a raw record batch to one
    partition, or (``kind`` "json") a JSON produce request to a topic of six."""
    from tidelog import runtime  # noqa: PLC0415

    app, _, _ = produce_function()
    runtime.topics().create("t", 6, {"max.message.bytes": 8 * 1024 * 1024})
    if kind == "json":
        request = event(
            "/v1/topics/{topic}/records",
            "/v1/topics/t/records",
            {"topic": "t"},
            body,
            "application/json",
            binary=False,
        )
    else:
        request = event(
            "/v1/topics/{topic}/partitions/{partition}/batches",
            "/v1/topics/t/partitions/0/batches",
            {"topic": "t", "partition": "0"},
            body,
            "application/vnd.kafka.record-batch",
        )
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(warmup):
            app.handler(request, Context())
        start = time.process_time()
        for _ in range(requests):
            if app.handler(request, Context())["statusCode"] != 200:
                raise RuntimeError("the request was refused")
        return (time.process_time() - start) / requests * 1000


def aws_latency(
    seed: int, produces: int = 300, end_to_end_records: int = 60
) -> dict[str, list[float]]:
    """The produce and fetch handlers on in-memory stores under the aws-latency profile: what
    tidelog's own code adds to AWS's latencies, with no emulator's CPU in the way. Latencies
    in ms: single-record JSON produces one after another (a Lambda environment serves one
    request at a time), and produce -> long-poll fetch (the fetch function's own thread)."""
    from benchmarks.report import end_to_end  # noqa: PLC0415
    from tidelog import runtime  # noqa: PLC0415
    from tidelog.storage.faults import FaultPlan, FaultyMetadataStore, FaultyObjectStore  # noqa: PLC0415

    os.environ["TIDELOG_CACHE_DIR"] = scratch_dir()
    app, meta, objects = produce_function()
    plan = FaultPlan.aws_latency(seed)
    slow_meta, slow_objects = FaultyMetadataStore(meta, plan), FaultyObjectStore(objects, plan)
    runtime.metadata_store = lambda: slow_meta  # type: ignore[assignment]
    runtime.object_store = lambda: slow_objects  # type: ignore[assignment]
    fetch = load_module("fetch_app", ROOT / "functions/fetch/app.py")
    runtime.topics().create("t", 6, {})
    runtime.topics().create("e2e", 1, {})

    def produce(topic: str, i: int) -> tuple[float, Any]:
        body = json.dumps({"records": [{"key": f"k{i}", "value": "v"}]}).encode()
        request = event(
            "/v1/topics/{topic}/records",
            f"/v1/topics/{topic}/records",
            {"topic": topic},
            body,
            "application/json",
            binary=False,
        )
        start = time.perf_counter()
        answer = app.handler(request, Context())
        return (time.perf_counter() - start) * 1000, json.loads(answer["body"])

    def fetch_from(offset: int) -> Any:
        request = event(
            "/v1/topics/{topic}/partitions/{partition}/records",
            "/v1/topics/e2e/partitions/0/records",
            {"topic": "e2e", "partition": "0"},
            b"",
            "application/json",
            binary=False,
        )
        query = {"offset": str(offset), "max_wait_ms": "2000"}
        request.update(
            httpMethod="GET",
            body=None,
            queryStringParameters=query,
            multiValueQueryStringParameters={k: [v] for k, v in query.items()},
        )
        return json.loads(fetch.handler(request, Context())["body"])

    with contextlib.redirect_stdout(io.StringIO()):
        produced = [produce("t", i)[0] for i in range(produces)]
        e2e = end_to_end(
            lambda i: int(produce("e2e", i)[1]["offsets"][0]["offset"]),
            fetch_from,
            0,
            end_to_end_records,
        )
    return {"produce": produced, "e2e": e2e}


def load_module(name: str, path: Path) -> ModuleType:
    """A handler module loaded as Lambda loads it (its models resolve through sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def fresh_cpu_ms(body: bytes, kind: str = "batch") -> float:
    """:func:`cpu_ms` in an interpreter of its own (nothing else counted): the produce handler's
    CPU milliseconds per request posting ``body``, a raw batch or (``kind`` "json") JSON."""
    with tempfile.NamedTemporaryFile(suffix=f".{kind}") as file:
        file.write(body)
        file.flush()
        return float(driven("benchmarks.inprocess", f"cpu-{kind}", file.name))


if __name__ == "__main__":
    command, argument = sys.argv[1:3]
    if command == "soak":
        print(json.dumps(soak(int(argument))))
    elif command in ("cpu", "cpu-batch"):
        print(cpu_ms(Path(argument).read_bytes()))
    elif command == "cpu-json":
        print(cpu_ms(Path(argument).read_bytes(), "json"))
    elif command == "aws-latency":
        print(json.dumps(aws_latency(int(argument))))
    else:
        raise SystemExit(f"unknown command {command!r}: soak, cpu-batch, cpu-json or aws-latency")
