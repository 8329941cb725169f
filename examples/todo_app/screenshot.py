"""Regenerate the docs' screenshot of the todo app: `python -m examples.todo_app.screenshot [PATH]`.

Starts the example API and the app on 127.0.0.1, opens the page in headless
Chromium (Debian's `/usr/bin/chromium`, or `RESTLAYER_CHROMIUM`) through
Playwright, renames the first todo to `REJECT` so the server refuses it, and
saves the page once the error banner shows and the old title is back
(default path: docs/guides/img/todo_app.png).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

from examples.todo_api import LocalServer

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "docs" / "guides" / "img" / "todo_app.png"
CHROMIUM = os.environ.get("RESTLAYER_CHROMIUM", "/usr/bin/chromium")
WAIT = 30_000  # ms, upper bound of every wait in the page


def start_app(api_url: str) -> tuple[subprocess.Popen[str], str]:
    """`python -m examples.todo_app` against `api_url` on a free port, and its URL once it listens."""
    app = subprocess.Popen(
        [sys.executable, "-m", "examples.todo_app", "--api", api_url, "--port", "0"],
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert app.stdout is not None
    for line in app.stdout:  # ends at the pipe's end of file if the app dies
        if line.startswith("todo app: "):
            threading.Thread(target=_drain, args=(app.stdout,), daemon=True).start()
            return app, line.split(": ", 1)[1].strip()
    app.wait()
    raise SystemExit(f"the todo app exited with {app.returncode} before it listened")


def _drain(stream: IO[str]) -> None:
    """Keep reading the app's output so it never blocks on a full pipe."""
    for _line in stream:
        pass


def shoot(url: str, title: str, path: Path) -> None:
    """Open the app, have a rename refused, and save the page to `path`."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
        try:
            page = browser.new_page(viewport={"width": 900, "height": 560})
            page.goto(url)
            checkbox = page.get_by_role("checkbox", name=title, exact=True)
            expect(checkbox).to_be_visible(timeout=WAIT)
            page.locator(".todo-item").filter(has=checkbox).get_by_role("button", name="Rename").click()
            page.get_by_label("Rename").fill("REJECT")
            page.get_by_role("button", name="Save").click()
            expect(page.locator(".error-banner")).to_be_visible(timeout=WAIT)
            expect(checkbox).to_be_visible(timeout=WAIT)  # rolled back
            page.screenshot(path=str(path))
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEFAULT
    with LocalServer() as api:
        seed = api.db.get("todos", 1)
        assert seed is not None, "the example API's seed data has todo 1"
        app, url = start_app(api.url)
        try:
            shoot(url, seed["title"], path)
        finally:
            app.terminate()
            app.wait(timeout=15)
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
