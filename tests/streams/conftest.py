"""Fixtures of the stream tests: a server playing scripted pushes, and a short-lived shared client."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from examples.todo_api import LocalServer
from restlayer.rest import aclose
from tests.streams._script import ROUTES, SCRIPTS, Script


@pytest.fixture(scope="session")
def script_server() -> Iterator[LocalServer]:
    """A server on 127.0.0.1 with the scripted push endpoints (/_stream/sse, /_stream/ws)."""
    with LocalServer(routes=ROUTES) as server:
        yield server


@pytest.fixture
def script(script_server: LocalServer) -> Iterator[Callable[..., tuple[str, Script]]]:
    """`script(events, ...)` registers a Script; returns its key query (`?key=K`) and the Script."""
    keys: list[str] = []

    def make(events: list[tuple[int, str, str]], **options: object) -> tuple[str, Script]:
        key = uuid.uuid4().hex
        keys.append(key)
        SCRIPTS[key] = Script(events, **options)  # type: ignore[arg-type]
        return f"?key={key}", SCRIPTS[key]

    yield make
    for key in keys:
        SCRIPTS.pop(key, None)


@pytest.fixture(autouse=True)
async def _close_shared_client() -> AsyncIterator[None]:
    yield
    await aclose()
