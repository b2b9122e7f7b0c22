"""One process per staging or cache directory (tidelog.log.claims), and runtime singletons
built once however many threads ask first."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from tidelog import runtime
from tidelog.log import claims

HOLD = """
import sys, time
from pathlib import Path
from tidelog.log import claims
claims.claim(Path(sys.argv[1]), "TIDELOG_STAGING_DIR")
print("held", flush=True)
time.sleep(60)
"""


def test_a_directory_another_process_holds_is_refused_until_it_exits(tmp_path):
    directory = tmp_path / "staging"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(claims.DirectoryInUseError, match="give this one its own with"):
            claims.claim(directory, "TIDELOG_STAGING_DIR")
    finally:
        holder.kill()  # however it dies, the kernel lets go
        holder.wait(10)
    claims.claim(directory, "TIDELOG_STAGING_DIR")
    claims.claim(directory, "TIDELOG_STAGING_DIR")  # again in the same process: a no-op
    assert directory.parent.joinpath(".staging.lock").exists()


def test_a_singleton_is_built_once_when_many_threads_ask_at_once():
    built = []

    def build() -> object:
        time.sleep(0.05)  # long enough for every thread to arrive while it builds
        built.append(object())
        return built[-1]

    once = runtime._Once(build)
    start = threading.Barrier(8)
    got = []

    def ask() -> None:
        start.wait()
        got.append(once())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1
    assert all(value is built[0] for value in got)
    once.cache_clear()
    assert once() is not built[0]
