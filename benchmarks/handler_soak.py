"""The produce handler in-process on in-memory stores, as a Lambda environment that lives for
hours serves it: ``python -m benchmarks.handler_soak REQUESTS`` prints one JSON line of
``[requests served, RSS MB]`` samples. Run in its own interpreter so nothing else is counted.

In Lambda the log's data lives in S3 and DynamoDB, not in the process. So at every sample the
records written since the last one (flush objects and index items) are deleted from the stores
through their ports; what RSS still gains is what the handler and its libraries keep."""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_EVERY = 1000


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc: this measurement needs Linux")


class Context:
    function_name = "produce"
    memory_limit_in_mb = 1024
    aws_request_id = "soak"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:produce"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


def _event(index: int) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(
        (ROOT / "tests/functional/events/get_cluster.json").read_text()
    )
    body = json.dumps({"records": [{"key": f"user-{index % 97}", "value": f"click {index}"}]})
    event.update(
        resource="/v1/topics/{topic}/records",
        path="/v1/topics/soak/records",
        httpMethod="POST",
        headers={"Content-Type": "application/json"},
        multiValueHeaders=None,
        pathParameters={"topic": "soak"},
        body=base64.b64encode(body.encode()).decode(),
        isBase64Encoded=True,
    )
    return event


def _forget_records(meta: Any, objects: Any, topic_id: str) -> None:
    from tidelog.log import keys  # noqa: PLC0415
    from tidelog.storage import Delete  # noqa: PLC0415

    for info in list(objects.list("data/")):
        objects.delete(info.key)
    for partition in range(3):
        pk = keys.log_pk(topic_id, partition)
        for item in list(meta.query(pk, prefix=keys.INDEX_PREFIX)):
            meta.write(Delete(pk, str(item["sk"])))


def main(requests: int) -> list[tuple[int, float]]:
    os.environ.update(TIDELOG_TABLE="t", TIDELOG_BUCKET="b", TIDELOG_STAGING_DIR=tempfile.mkdtemp())
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
    runtime.topics().create("soak", 3, {})
    samples = []
    with contextlib.redirect_stdout(io.StringIO()) as printed:  # one metrics line per call
        for i in range(1, requests + 1):
            if app.handler(_event(i), Context())["statusCode"] != 200:
                raise RuntimeError(f"request {i} failed")
            if i % SAMPLE_EVERY == 0:
                _forget_records(meta, objects, runtime.topics().get("soak").topic_id)
                samples.append((i, rss_mb()))
                printed.seek(0)
                printed.truncate()
    return samples


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]))))
