"""The console: its proxy against calling the API directly, its topics screen at a few hundred
topics against the same reads made raw, and a soak of a `tidelog console` process.

One `tidelog dev` (a process of its own) holds the data. The console runs as users run it,
`tidelog console --url <dev>`, in a process of its own too, sampling lag every second. Direct
and proxied runs alternate, three each; medians are reported.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
from tests.support import devserver

from benchmarks.report import Section, rate
from tidelog.client import Admin
from tidelog.console.lag import LagHistory

TOPICS = 300
GROUPS = 50
RUNS = 3
SOAK_REQUESTS = 6_000
FETCH_BYTES = 1 << 20
OURS = {"X-Tidelog-Console": "1"}


def run(progress: Any = print) -> Section:
    section = Section(
        "The console",
        f"`tidelog console` in a process of its own onto `tidelog dev`: its proxy against the same "
        f"calls made directly, the topics screen with {TOPICS} topics and {GROUPS} groups in "
        "Debian's Chromium against the same reads made raw (6 at a time, as the page makes "
        f"them), and a soak of {SOAK_REQUESTS:,} requests; medians of {RUNS} alternating runs.",
        ("measurement", "baseline", "console", "ratio / target"),
    )
    server = devserver.start()
    console = _Console(server.api_url)
    try:
        _proxy_rows(section, server.api_url, console.url, progress)
        _screen_rows(section, server.api_url, console.url, progress)
        _soak_rows(section, console, progress)
    finally:
        console.stop()
        server.stop()
    history = _history_bytes()
    section.rows.append(
        (
            "lag history at its bound (1,000 groups x 360 samples)",
            "",
            f"{history / 2**20:.1f} MiB",
            "bounded",
        )
    )
    section.notes.append(
        "The proxy adds one loopback hop and a re-signed request; a 1 MiB fetch is carried as "
        "bytes, never parsed."
    )
    return section


class _Console:
    def __init__(self, api_url: str) -> None:
        port = devserver.free_port()
        self.url = f"http://127.0.0.1:{port}/"
        command = [sys.executable, "-m", "tidelog.cli", "console", "--url", api_url]
        command += ["--port", str(port), "--sample-seconds", "1"]
        # Its output to a file: a pipe nobody reads fills, and then its logging blocks every
        # request thread.
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives with the process
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx2.get(self.url, timeout=1).raise_for_status()
                return
            except httpx2.HTTPError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("tidelog console did not start") from None
                time.sleep(0.1)

    def rss_mib(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        line = next(x for x in status.splitlines() if x.startswith("VmRSS:"))
        return int(line.split()[1]) / 1024

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        self.log.close()


def _proxy_rows(section: Section, api_url: str, console_url: str, progress: Any) -> None:
    topic = f"console-bench-{uuid.uuid4().hex[:6]}"
    with Admin(api_url) as admin:
        admin.create_topic(topic, partitions=1)
    value = os.urandom(512).hex()
    with httpx2.Client(timeout=60) as http:
        for _ in range(4):  # 4 x 1,000 records of 1 KiB: more than one 1 MiB fetch
            body = {"records": [{"value": value} for _ in range(1000)]}
            http.post(f"{api_url}/v1/topics/{topic}/records", json=body).raise_for_status()
    fetch = {
        "partitions": [{"topic": topic, "partition": 0, "offset": 0}],
        "encoding": "base64",
        "max_bytes": FETCH_BYTES,
    }
    clients = [httpx2.Client(timeout=60) for _ in range(4)]

    def describe(base: str, headers: dict[str, str]) -> Any:
        return lambda n: (
            clients[n // 1_000_000]
            .get(f"{base}/v1/topics/{topic}", headers=headers)
            .raise_for_status()
        )

    def fetched(base: str, headers: dict[str, str]) -> Any:
        return lambda n: (
            clients[n // 1_000_000]
            .post(f"{base}/v1/fetch", json=fetch, headers=headers)
            .raise_for_status()
        )

    proxied = console_url + "api"
    rows = []
    for label, make, threads, unit in (
        ("describe a topic, 4 clients", describe, 4, "requests/s"),
        ("fetch 1 MiB (base64 JSON), 1 client", fetched, 1, "requests/s"),
    ):
        direct, through = [], []
        for i in range(RUNS):
            direct.append(rate(make(api_url, {}), threads=threads, seconds=1.5, repeats=1))
            through.append(rate(make(proxied, OURS), threads=threads, seconds=1.5, repeats=1))
            progress(f"    {label}, run {i + 1}: {direct[-1]:,.0f} / {through[-1]:,.0f} {unit}")
        a, b = statistics.median(direct), statistics.median(through)
        rows.append((f"{label} ({unit})", f"{a:,.0f}", f"{b:,.0f}", f"{b / a:.2f}x"))
    for client in clients:
        client.close()
    section.rows += rows


def _screen_rows(section: Section, api_url: str, console_url: str, progress: Any) -> None:
    mark = uuid.uuid4().hex[:6]
    names = [f"screen-{mark}-{i:03}" for i in range(TOPICS)]
    with httpx2.Client(timeout=60) as http, ThreadPoolExecutor(8) as pool:

        def make(i: int) -> None:
            http.post(f"{api_url}/v1/topics", json={"name": names[i], "partitions": 3})
            records = {"records": [{"key": f"k{j}", "value": "v" * 100} for j in range(20)]}
            http.post(f"{api_url}/v1/topics/{names[i]}/records", json=records)
            if i < GROUPS:
                reset = {"to": "earliest", "topics": [names[i]]}
                http.post(f"{api_url}/v1/groups/readers-{mark}-{i}/offsets/reset", json=reset)

        list(pool.map(make, range(TOPICS)))
    progress(f"    {TOPICS} topics, {GROUPS} groups made")
    browser = _browser_seconds(console_url, mark)
    raw = [_raw_topics_screen(api_url) for _ in range(RUNS)]
    if browser is None:
        section.notes.append("The topics screen was not timed: Chromium or Playwright is missing.")
        return
    a, b = statistics.median(raw), statistics.median(browser)
    progress(f"    topics screen: raw reads {a:.2f} s, the page {b:.2f} s")
    section.rows.append(
        (
            f"topics screen, {TOPICS} topics + {GROUPS} groups: seconds to show (lower is better)",
            f"{a:.2f} s (raw reads)",
            f"{b:.2f} s (page drawn)",
            f"{b / a:.2f}x",
        )
    )
    section.notes.append(
        "The topics screen's time is the emulator's: each topic is one describe with sizes, a "
        f"DynamoDB query per partition ({TOPICS * 3} here) served by moto behind its lock; the "
        "page takes no longer than raw reads of the same data."
    )


def _raw_topics_screen(api_url: str) -> float:
    """The topics screen's reads, as few as any client could make them."""
    start = time.perf_counter()
    with httpx2.Client(base_url=api_url, timeout=60) as http, ThreadPoolExecutor(6) as pool:
        topics = http.get("/v1/topics").json()["topics"]
        groups = http.get("/v1/groups").json()["groups"]
        list(pool.map(lambda g: http.get(f"/v1/groups/{g['group']}/offsets").json(), groups))
        list(pool.map(lambda t: http.get(f"/v1/topics/{t['name']}?sizes=true").json(), topics))
    return time.perf_counter() - start


def _browser_seconds(console_url: str, mark: str) -> list[float] | None:
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415 - the dev extra
    except ImportError:
        return None
    if chromium is None:
        return None
    from tests.browser.conftest import FLAGS  # noqa: PLC0415

    times = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS)
        for _ in range(RUNS):
            page = browser.new_page()
            start = time.perf_counter()
            page.goto(console_url)
            page.get_by_label("Filter").wait_for(timeout=120_000)
            times.append(time.perf_counter() - start)
            page.get_by_label("Filter").fill(mark)
            assert page.locator("tbody tr").count() == TOPICS
            page.close()
        browser.close()
    return times


def _soak_rows(section: Section, console: _Console, progress: Any) -> None:
    """Thousands of the pages' calls (describe with sizes, group offsets, lag history, a fetch)
    while the console samples every group's lag each second: memory and latency, early
    against late."""
    with httpx2.Client(base_url=console.url, headers=OURS, timeout=60) as http:
        topics = http.get("api/v1/topics").json()["topics"]
        groups = http.get("api/v1/groups").json()["groups"]
        calls = [
            lambda i: http.get(f"api/v1/topics/{topics[i % len(topics)]['name']}?sizes=true"),
            lambda i: http.get(f"api/v1/groups/{groups[i % len(groups)]['group']}/offsets"),
            lambda i: http.get("lag", params={"group": groups[i % len(groups)]["group"]}),
            lambda i: http.post(
                "api/v1/fetch",
                json={
                    "partitions": [
                        {"topic": topics[i % len(topics)]["name"], "partition": 0, "offset": 0}
                    ]
                },
            ),
        ]
        rss = [console.rss_mib()]
        latencies = []
        for i in range(SOAK_REQUESTS):
            start = time.perf_counter()
            calls[i % len(calls)](i).raise_for_status()
            latencies.append(time.perf_counter() - start)
            if (i + 1) % 1000 == 0:
                rss.append(console.rss_mib())
                progress(f"    soak {i + 1:,}: RSS {rss[-1]:.0f} MiB")
        history = http.get("lag", params={"group": groups[0]["group"]}).json()
    first, last = latencies[:1000], latencies[-1000:]

    def p(values: list[float], q: float) -> float:
        return sorted(values)[int(q * (len(values) - 1))] * 1000

    section.rows += [
        (
            f"soak: console RSS after 1,000 / {SOAK_REQUESTS:,} requests",
            f"{rss[1]:.0f} MiB",
            f"{rss[-1]:.0f} MiB",
            f"{rss[-1] / rss[1]:.2f}x (flat)",
        ),
        (
            "soak: p50 / p99 latency, first 1,000 against last 1,000 (ms)",
            f"{p(first, 0.5):.1f} / {p(first, 0.99):.1f}",
            f"{p(last, 0.5):.1f} / {p(last, 0.99):.1f}",
            f"{p(last, 0.5) / p(first, 0.5):.2f}x (flat)",
        ),
    ]
    section.notes.append(
        f"During the soak the console sampled {len(groups)} groups every second: "
        f"{len(history['samples'])} samples of the first one were kept."
    )


def _history_bytes() -> int:
    import tracemalloc  # noqa: PLC0415

    tracemalloc.start()
    history = LagHistory()
    names = {f"group-{i:04}": i for i in range(history.max_groups)}
    for t in range(history.samples):
        history.record(1_795_000_000_000 + t * 10_000, {**names, "x": t * 1_000_003})
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert history.groups() == history.max_groups
    return size


if __name__ == "__main__":
    print(json.dumps(run().rows, indent=1))
