"""Lambda SnapStart: what a function does once before its snapshot, and in each restored copy.

With SnapStart (Python 3.12+ runtimes) Lambda runs a published version's init once, snapshots the
execution environment, and starts later environments by restoring copies of that snapshot. So:

- before the snapshot, the work every cold start would repeat is done once: boto3 imported and
  the function's clients built (a third of a cold start), the codecs imported, and the
  function's routes primed by resolving requests that fail validation (Powertools' validators,
  the request models and the error path built) without a single call to AWS;
- after each restore, what must differ between copies is made to: Python's ``random`` is
  reseeded from the kernel (write retries draw their jitter from it, and copies drawing alike
  would retry in lockstep), the connections pooled before the snapshot are closed (their
  sockets belong to the snapshot's moment), and the runtime's caches are emptied (they hold
  monotonic-clock deadlines that a restored clock makes meaningless).

Object keys, topic ids, member ids and the sticky partitioner draw from ``os.urandom`` (uuid4,
SystemRandom), which Lambda keeps unique across restored copies. Nothing reads the clock before
the snapshot and keeps it: handlers read it per request.

The hooks are registered with ``snapshot_restore_py``, which Lambda's runtime runs (before the
snapshot in reverse order of registration, after a restore in order). Elsewhere nothing calls
them; tests call them as the runtime does.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from snapshot_restore_py import register_after_restore, register_before_snapshot

from tidelog import aws, collector, runtime
from tidelog.records import RecordBatch, RecordBatchBuilder
from tidelog.records.compression import CODECS


def enable(prime: Callable[[], object]) -> None:
    """Register the hooks of a function whose routes ``prime`` exercises (no AWS call)."""
    register_before_snapshot(before_snapshot, prime)
    register_after_restore(after_restore)


def before_snapshot(prime: Callable[[], object]) -> None:
    runtime.metadata_store()
    runtime.object_store()
    for codec in CODECS:
        builder = RecordBatchBuilder(codec)
        builder.append(b"key", b"value" * 8, (("h", b"v"),), 0)
        RecordBatch(builder.build()).validate()
    prime()
    collector.freeze_startup_objects()


def after_restore() -> None:
    random.seed()
    aws.close_connections()
    runtime.forget_cached_state()
