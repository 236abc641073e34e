"""Browser tests: Playwright for Python driving the system Chromium (no browser download).

One browser per test module, a fresh context (cookies, storage) per test. A failing test
leaves a screenshot and the page's console under ``test-artifacts/web/``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from tests.conftest import base_config
from tests.support.live import LiveServer

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call":
        item.stash[_FAILED] = report.failed


_FAILED = pytest.StashKey[bool]()

# A loaded CI machine can be slow; an assertion that fails waits this long first.
expect.set_options(timeout=30_000)


# Module scope, not session: Playwright's sync API keeps an event loop running in this thread
# while it is started, and an asyncio test that the same xdist worker runs next would fail
# ("Runner.run() cannot be called from a running event loop"). Pytest tears module fixtures
# down before a test of another module runs.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    if not CHROMIUM.exists():
        pytest.fail("Chromium is missing: run scripts/system-deps (installs Debian's chromium)")
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    # launch() gives every run a fresh temporary profile (user-data-dir).
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 850}, accept_downloads=True)
    context.set_default_timeout(30_000)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.console_messages = console  # type: ignore[attr-defined]
    try:
        yield page
    finally:
        if request.node.stash.get(_FAILED, False):
            folder = ARTIFACTS / request.node.name
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True, exist_ok=True)
            for i, open_page in enumerate(context.pages):
                try:
                    open_page.screenshot(path=str(folder / f"page{i}.png"), full_page=True)
                except Exception as exc:  # a crashed page still lets the others be saved
                    (folder / f"page{i}.error.txt").write_text(str(exc))
            (folder / "console.txt").write_text("\n".join(console))
        context.close()


@pytest.fixture(scope="session")
def web_server(stub: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server of the browser tests' own, so their thread list holds only their threads."""
    workdir = tmp_path_factory.mktemp("web-server")
    live = LiveServer(base_config(stub, workdir / "data"), workdir).start()
    try:
        yield live
    finally:
        live.stop()
