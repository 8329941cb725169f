"""Every route the docs call exists in the plain example API (`python -m examples.todo_api`, no test routes)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.routing import Match

from examples.todo_api import LocalServer

DOCS = Path(__file__).resolve().parents[1] / "docs"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_PATH_OPTION = re.compile(r"""\bpath=["'](/[^"']*)["']""")
#: Templates the docs only build URLs or keys from (`ep.url(...)`, `ep.key(...)`), never request.
_URL_ONLY = {"/files/x", "/users/1/posts", "/todos/1/vote"}


def _concrete(template: str) -> str:
    """A URL path the template produces: optional groups dropped, params filled with 1."""
    path = re.sub(r"\{[^}]*\}", "", template)
    path = re.sub(r"\*\w+", "x", path)
    return re.sub(r":\w+", "1", path) or "/"


def documented_paths() -> list[str]:
    """The `path=` templates the pages' ```python blocks use, made concrete."""
    code = [block for page in DOCS.rglob("*.md") for block in _PYTHON_BLOCK.findall(page.read_text())]
    found = {_concrete(m) for block in code for m in _PATH_OPTION.findall(block)}
    return sorted(found - _URL_ONLY)


@pytest.fixture(scope="module")
def plain_api() -> Iterator[LocalServer]:
    """The example API exactly as `python -m examples.todo_api` serves it."""
    with LocalServer() as server:
        yield server


def test_docs_use_paths() -> None:
    assert {"/todos/1", "/echo", "/file", "/pages/todos"} <= set(documented_paths())


def _served(server: LocalServer, path: str) -> bool:
    """Whether one of the app's routes takes `path` (for some method)."""
    scope = {"type": "http", "path": path, "method": "GET", "root_path": ""}
    return any(route.matches(scope)[0] != Match.NONE for route in server.app.routes)


def test_an_unknown_path_is_not_served(plain_api: LocalServer) -> None:
    assert not _served(plain_api, "/_test/echo") and _served(plain_api, "/todos/1")


@pytest.mark.parametrize("path", documented_paths())
def test_documented_route_exists_in_the_example_api(plain_api: LocalServer, path: str) -> None:
    assert _served(plain_api, path), f"{path} is not served by python -m examples.todo_api"
    reply = httpx.get(plain_api.url + path.replace("/status/1", "/status/200"), timeout=10)
    assert reply.status_code < 500
