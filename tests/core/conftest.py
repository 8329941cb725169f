"""Shared fixtures of the controller tests: entities of the example API and resources bound to `api`."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from restlayer.core import Controller
from restlayer.rest import RestEndpoint, resource
from tests.core._gate import Gates, gate_server
from tests.core._models import Clock, Recorder, Todo, User


@pytest.fixture
def res(api: Any) -> SimpleNamespace:
    """Resources of the example API (optimistic mutations), plus raw test endpoints."""
    return SimpleNamespace(
        Todo=resource(path="/todos/:id", schema=Todo, url_prefix=api.url, optimistic=True),
        PlainTodo=resource(path="/todos/:id", schema=Todo, url_prefix=api.url),
        User=resource(path="/users{/:id}", schema=User, url_prefix=api.url),
        slow=RestEndpoint(path="/_test/slow", url_prefix=api.url),
        status=RestEndpoint(path="/_test/status/:code", url_prefix=api.url),
        raw=RestEndpoint(path="/todos/:id", url_prefix=api.url),
    )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ctrl() -> Iterator[Controller]:
    c = Controller()
    yield c
    c.close()


@pytest.fixture
def cctrl(clock: Clock) -> Iterator[Controller]:
    """A controller on the settable clock."""
    c = Controller(clock=clock)
    yield c
    c.close()


@pytest.fixture(scope="session")
def gates() -> Iterator[Gates]:
    """A server on 127.0.0.1 whose `/gate/{name}` replies wait until the test opens them."""
    yield from gate_server()


@pytest.fixture
def gated(gates: Gates) -> RestEndpoint:
    """`GET /gate/:name` on the gate server (a deduplicable read)."""
    return RestEndpoint(path="/gate/:name", url_prefix=gates.url)


@pytest.fixture
def rec() -> Recorder:
    """Records every action of `rctrl`."""
    return Recorder()


@pytest.fixture
def rctrl(clock: Clock, rec: Recorder) -> Iterator[Controller]:
    """A controller on the settable clock whose actions `rec` records."""
    c = Controller(clock=clock, managers=[rec])
    yield c
    c.close()
