"""Fixtures of the UI tests: hooks rendered without a kernel (solara.render), and the todo app in a browser."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("solara", reason="install the extra: pip install 'restlayer[solara]'")

from examples.todo_api import LocalServer
from restlayer.sync import Controller

TIMEOUT = 10.0
ROOT = Path(__file__).resolve().parents[2]


class Seen:
    """What components rendered, in order; tests wait on it (a condition, never a sleep)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Any]] = []
        self._cond = threading.Condition()

    def add(self, name: str, value: Any) -> None:
        with self._cond:
            self.items.append((name, value))
            self._cond.notify_all()

    def of(self, name: str) -> list[Any]:
        with self._cond:
            return [v for n, v in self.items if n == name]

    def wait(self, check: Callable[[], bool], what: str) -> None:
        """Block until `check()` holds (re-checked at each render and every 20 ms), failing after TIMEOUT s."""
        deadline = time.monotonic() + TIMEOUT
        with self._cond:
            while not check():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what}; renders: {self.items!r}")
                self._cond.wait(min(left, 0.02))


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture
def sctrl() -> Iterator[Controller]:
    """A blocking controller the test owns (the provider does not close it)."""
    ctrl = Controller()
    yield ctrl
    ctrl.close()


# ---------------------------------------------------------------------------
# Browser tests: the todo app (examples.todo_app) served by Solara in a child
# process against the session's example API, driven by Playwright through
# Debian's chromium. Under CI a missing browser or Playwright fails the run.
# ---------------------------------------------------------------------------
CHROMIUM = os.environ.get("RESTLAYER_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
INSTALL_HINT = "install it with `python3 dev.py setup` (as root on Debian) or `apt-get install -y chromium`"


def _missing(reason: str) -> None:
    """Fail under CI (the browser tests must run there), skip elsewhere with how to fix it."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"browser tests cannot run: {reason}", pytrace=False)
    pytest.skip(f"browser tests skipped: {reason}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium for one test module.

    Module scope, not session: Playwright's sync API keeps an event loop marked
    running in the main thread while it is open, which would break later asyncio tests.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed; run `python3 dev.py setup`")
    if not os.path.exists(CHROMIUM):
        _missing(f"{CHROMIUM} not found; {INSTALL_HINT}")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class AppProcess:
    """`python -m examples.todo_app` in a child process; `url` once it listens."""

    def __init__(self, api_url: str) -> None:
        # a closed page's session (and its polling) ends at once instead of after solara's default day
        env = {**os.environ, "TODO_APP_POLL_MS": "300", "PYTHONUNBUFFERED": "1", "SOLARA_KERNEL_CULL_TIMEOUT": "0s"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "examples.todo_app", "--api", api_url, "--port", "0"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.output: list[str] = []
        ready: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, args=(ready,), daemon=True)
        self.reader.start()
        try:
            self.url = ready.get(timeout=60)
        except queue.Empty:
            self.stop()
            raise AssertionError("the todo app did not start:\n" + "".join(self.output)) from None

    def _read(self, ready: queue.Queue[str]) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            if line.startswith("todo app: "):
                ready.put(line.split(": ", 1)[1].strip())

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        self.reader.join(timeout=15)  # it ends at the pipe's end of file
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture(scope="session")
def app_api() -> Iterator[LocalServer]:
    """The todo app's own example API: its pages keep polling, which must not reach other tests' request logs."""
    with LocalServer() as server:
        yield server


@pytest.fixture(scope="session")
def todo_app(app_api: LocalServer) -> Iterator[AppProcess]:
    app = AppProcess(app_api.url)
    yield app
    app.stop()


@pytest.fixture
def ui_api(app_api: LocalServer) -> LocalServer:
    """The todo app's API with its seed data restored."""
    app_api.reset()
    return app_api


@pytest.fixture
def open_page(browser: Any, todo_app: AppProcess, ui_api: LocalServer) -> Iterator[Callable[[], Any]]:
    """Open the app in a new browser page (its own Solara session and controller), reset API data first."""
    contexts: list[Any] = []

    def open_() -> Any:
        context = browser.new_context()
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(todo_app.url)
        return page

    yield open_
    for context in contexts:
        context.close()
