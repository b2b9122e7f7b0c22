"""SnapStart, as Lambda's runtime drives it: each function primed before its snapshot without a
call to AWS, and copies restored from one snapshot never drawing the same "random" values.

Each case runs in an interpreter of its own: the hooks' registry is process-wide, and a
restored copy is simulated by forking the primed process, which is what a snapshot is (one
process's memory, resumed more than once), undoing what only a fork does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOWHERE = "http://127.0.0.1:9"  # nothing listens: any AWS call fails

PRIME = """
import importlib.util, json, os, sys, tempfile
scratch = tempfile.TemporaryDirectory()  # removed as this process exits
os.environ.update(
    TIDELOG_TABLE="t", TIDELOG_BUCKET="b", TIDELOG_STAGING_DIR=scratch.name,
    AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x",
    AWS_ENDPOINT_URL=os.environ["NOWHERE"],
    TIDELOG_ASSIGNMENT_STATE_MACHINE="arn:aws:states:us-east-1:123456789012:stateMachine:m",
)
import botocore.client
calls = []
real_call = botocore.client.BaseClient._make_api_call
def counted(self, operation, params):
    calls.append(operation)
    return real_call(self, operation, params)
botocore.client.BaseClient._make_api_call = counted
spec = importlib.util.spec_from_file_location("app", f"functions/{sys.argv[1]}/app.py")
app = importlib.util.module_from_spec(spec)
sys.modules["app"] = app
spec.loader.exec_module(app)
from snapshot_restore_py import _after_restore_registry, _before_snapshot_registry
for hook, args, kwargs in reversed(_before_snapshot_registry):
    hook(*args, **kwargs)
"""

DRAW = """
import random, uuid
from tidelog.partitioner import DefaultPartitioner
def draw():
    return {
        "jitter": [random.random() for _ in range(4)],
        "ids": [uuid.uuid4().hex for _ in range(4)],
        "sticky": [DefaultPartitioner()._random_int(1 << 30) for _ in range(4)],
    }
copies = []
snapshot = random.getstate()
for _ in range(2):
    read, write = os.pipe()
    if os.fork() == 0:  # a copy restored from the snapshot
        os.close(read)
        # A fork reseeds random (os.register_at_fork); a restored snapshot does not: its
        # memory, the generator's state with it, is exactly as it was.
        random.setstate(snapshot)
        if sys.argv[2] == "hooks":
            for hook, args, kwargs in _after_restore_registry:
                hook(*args, **kwargs)
        os.write(write, json.dumps(draw()).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        copies.append(json.loads(answer.read()))
    os.wait()
print(json.dumps({"calls": calls, "copies": copies}))
"""


def run(script: str, *args: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=ROOT,
        env={**os.environ, "NOWHERE": NOWHERE},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("function", ["produce", "fetch", "groups"])
def test_priming_builds_the_clients_and_calls_nothing(function):
    """Every probe was answered 400 (api.prime raises otherwise) and no AWS call was made,
    yet the clients a first request needs are built."""
    script = PRIME + textwrap.dedent("""
        from tidelog import aws
        print(json.dumps({"calls": calls, "clients": sorted(aws._clients)}))
    """)
    primed = run(script, function)
    assert primed == {"calls": [], "clients": ["dynamodb", "s3"]}


def test_two_restored_copies_never_draw_alike():
    restored = run(PRIME + DRAW, "produce", "hooks")
    first, second = restored["copies"]
    for source in ("jitter", "ids", "sticky"):
        assert not set(first[source]) & set(second[source]), source
    assert restored["calls"] == []


def test_without_the_restore_hook_the_copies_would_retry_in_lockstep():
    """The control: what the reseed is for. Kernel-drawn ids differ anyway; Python's random
    resumes from the snapshot's state in every copy."""
    first, second = run(PRIME + DRAW, "produce", "none")["copies"]
    assert first["jitter"] == second["jitter"]
    assert not set(first["ids"]) & set(second["ids"])


def test_a_client_closed_on_restore_opens_new_connections(dev, monkeypatch):
    """The restore hook closes the pooled connections; the same client then works as before."""
    from tidelog import aws, snapstart

    monkeypatch.setenv("AWS_ENDPOINT_URL", dev.aws_url)
    aws.reset()
    bucket = f"restored-{uuid.uuid4().hex[:8]}"
    try:
        s3 = aws.client("s3")
        s3.create_bucket(Bucket=bucket)
        pools = s3._endpoint.http_session._manager.pools
        assert len(pools) == 1
        snapstart.after_restore()
        assert len(pools) == 0
        s3.put_object(Bucket=bucket, Key="k", Body=b"v")
        assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    finally:
        aws.reset()
