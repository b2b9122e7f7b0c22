"""The console in a real browser: Debian's Chromium, driven by Playwright (its own browser
download is not reachable here), against the session's `tidelog dev`. Pages are checked with
axe-core (npm) and photographed into test-artifacts/console/."""

from __future__ import annotations

import json
import shutil
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from werkzeug.serving import make_server

from tidelog.client.http import Http
from tidelog.console.lag import LagSampler
from tidelog.console.server import Console

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium")
AXE = ROOT / "node_modules/axe-core/axe.min.js"
ARTIFACTS = ROOT / "test-artifacts/console"
# Without the background-networking flags Chromium keeps calling home, and this machine's closed
# network refuses it, many connections at a time.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Per module, not per session: Playwright's sync API keeps an event loop running on the
    main thread while it is open, and later tests' ``asyncio.run`` would find it there."""
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (`make tools` installs it as root)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the dev extra)")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def console(dev: Any) -> Iterator[str]:
    """The console onto the session's `tidelog dev`, as `tidelog console` serves it, sampling
    lag every 0.25 s (so a test sees a trend in seconds) until the module is done: its URL."""
    sampler = LagSampler(Http(dev.api_url, sign=False), interval_s=0.25)
    httpd = make_server("127.0.0.1", 0, Console(Http(dev.api_url, sign=False), sampler=sampler))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.port}/"
    httpd.shutdown()
    sampler.stop()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page; photographed when the test ends, passed or failed. CSP is bypassed so
    the tests may inject axe-core; the console itself never runs inline scripts."""
    context = browser.new_context(viewport={"width": 1200, "height": 800}, bypass_csp=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    photograph(page, request.node.name)
    context.close()
    assert not errors, f"the page threw: {errors}"


def photograph(page: Any, name: str) -> None:
    """A picture of the page as it stands, beside the one each test leaves at its end."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's WCAG 2 A/AA violations on the page as it stands."""
    if not AXE.exists():
        pytest.skip("axe-core is not installed (npm ci, from package.json)")
    page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(
        "async () => (await axe.run(document, {runOnly: ['wcag2a', 'wcag2aa']})).violations"
    )
    return found


def api(
    dev: Any, method: str, path: str, body: Any = None, content_type: str = "application/json"
) -> Any:
    data = (
        None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    )
    request = urllib.request.Request(
        dev.api_url + path, data=data, method=method, headers={"Content-Type": content_type}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())
