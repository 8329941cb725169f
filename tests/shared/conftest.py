"""Fixtures of the shared-store tests: a real redis-server, namespaces, resources of the example API.

`redis_server`: one server for the session (tests use their own `namespace`);
`private_redis`: a server of the test's own, which it may stop and restart.
Without redis-server installed these tests skip (and fail under CI=true).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from examples.redis_server import RedisServer, require_redis
from restlayer.rest import RestEndpoint, resource
from tests.core._models import Todo, User


def _server() -> RedisServer:
    reason = require_redis()
    if reason is not None:
        pytest.skip(reason)
    return RedisServer()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = _server()
    server.start()
    yield server
    server.close()


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    server = _server()
    server.start()
    yield server
    server.close()


@pytest.fixture
def namespace() -> str:
    return "t" + secrets.token_hex(6)


@pytest.fixture
def res(api: Any) -> SimpleNamespace:
    """Resources of the example API."""
    return SimpleNamespace(
        Todo=resource(path="/todos/:id", schema=Todo, url_prefix=api.url),
        User=resource(path="/users{/:id}", schema=User, url_prefix=api.url),
        slow=RestEndpoint(path="/_test/slow", url_prefix=api.url),
        status=RestEndpoint(path="/_test/status/:code", url_prefix=api.url),
    )
