"""Fixtures of the REST tests: a second server, so redirects can cross origins."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from examples.todo_api import LocalServer
from restlayer.rest import aclose
from tests._routes import ROUTES as TEST_ROUTES


@pytest.fixture(scope="session")
def other_origin_server() -> Iterator[LocalServer]:
    """A second server on 127.0.0.1 (another port, so another origin), with the test routes."""
    with LocalServer(routes=TEST_ROUTES) as server:
        yield server


@pytest.fixture
def other_api(other_origin_server: LocalServer) -> Iterator[LocalServer]:
    """The second server with its recorded requests cleared."""
    other_origin_server.reset()
    yield other_origin_server


@pytest.fixture
async def shared_client_closed() -> AsyncIterator[None]:
    """Close the loop's shared client after the test (each test runs in its own loop)."""
    yield
    await aclose()
