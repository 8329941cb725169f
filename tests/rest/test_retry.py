"""`retry=`: transient failures are sent again against the real example server.

The waits go through an injected `sleep` that records them (no real time passes)
except in one test that checks a real `Retry-After: 1` is waited.
"""

from __future__ import annotations

import asyncio
import io
import logging
import socket
import time
import uuid
from collections.abc import AsyncIterator
from email.utils import formatdate
from typing import Any

import httpx
import pytest

from examples.todo_api import LocalServer
from restlayer import Controller, Entity, ParamError, Retry, resource
from restlayer.errors import NetworkError
from restlayer.rest import RestEndpoint, aclose

FLAKY = "/_test/flaky"


class Todo(Entity):
    id: int = 0
    title: str = ""


@pytest.fixture(autouse=True)
async def _close_shared_client() -> AsyncIterator[None]:
    yield
    await aclose()


class Waits:
    """An injectable `sleep` recording each wait; returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def flaky(api: LocalServer, method: str = "GET", **retry: Any) -> tuple[RestEndpoint, str]:
    """An endpoint on /_test/flaky with a fresh key, and that key."""
    key = uuid.uuid4().hex
    ep = RestEndpoint(path=FLAKY, url_prefix=api.url, method=method, retry=Retry(**retry) if retry else None)
    return ep, key


def sent(api: LocalServer, key: str) -> int:
    """How many requests the server received for this flaky key."""
    return sum(1 for r in api.requests.matching(path=FLAKY) if r.query_params.get("key") == key)


async def test_server_failing_twice_with_503_then_answering_takes_three_requests(api: LocalServer) -> None:
    waits = Waits()
    ep, key = flaky(api, sleep=waits, jitter=0)
    ctrl = Controller()
    assert await ctrl.fetch(ep, key=key, fail=2) == {"ok": True, "method": "GET"}
    assert sent(api, key) == 3
    assert waits.delays == [0.5, 1.0]


async def test_post_is_not_retried_by_default(api: LocalServer) -> None:
    waits = Waits()
    ep, key = flaky(api, "POST", sleep=waits)
    with pytest.raises(NetworkError) as info:
        await ep({"key": key, "fail": 1}, {"title": "x"})
    assert info.value.status == 503
    assert sent(api, key) == 1
    assert waits.delays == []


async def test_post_is_retried_when_methods_include_it(api: LocalServer) -> None:
    ep, key = flaky(api, "POST", sleep=Waits(), methods={"GET", "POST"})
    assert await ep({"key": key, "fail": 1}, {"title": "x"}) == {"ok": True, "method": "POST"}
    assert sent(api, key) == 2


async def test_a_streamed_body_is_not_resent_empty(api: LocalServer) -> None:
    """A one-shot body (async iterable, file) cannot be replayed: not retried (it would go empty)."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"title":"x"}'

    for body in (chunks(), io.BytesIO(b'{"title":"x"}')):
        waits = Waits()
        ep, key = flaky(api, "PUT", sleep=waits)
        with pytest.raises(NetworkError) as info:
            await ep({"key": key, "fail": 1}, body)
        assert info.value.status == 503
        assert [r.body for r in api.requests.matching("PUT", FLAKY) if r.query_params["key"] == key] == [
            b'{"title":"x"}'
        ]
        assert waits.delays == []


async def test_a_bytes_body_is_resent_whole(api: LocalServer) -> None:
    ep, key = flaky(api, "PUT", sleep=Waits())
    assert await ep({"key": key, "fail": 1}, b'{"title":"x"}') == {"ok": True, "method": "PUT"}
    bodies = [r.body for r in api.requests.matching("PUT", FLAKY) if r.query_params["key"] == key]
    assert bodies == [b'{"title":"x"}', b'{"title":"x"}']


async def test_retry_after_seconds_sets_the_wait(api: LocalServer) -> None:
    waits = Waits()
    ep, key = flaky(api, sleep=waits, backoff=0.01)
    await ep(key=key, fail=1, after=1)
    assert waits.delays == [1.0]


async def test_retry_after_one_second_is_really_waited(api: LocalServer) -> None:
    ep, key = flaky(api, backoff=0)
    started = time.monotonic()
    await ep(key=key, fail=1, after=1)
    assert time.monotonic() - started >= 0.95
    assert sent(api, key) == 2


async def test_retry_after_http_date_in_the_past_retries_at_once(api: LocalServer) -> None:
    waits = Waits()
    ep, key = flaky(api, sleep=waits)
    await ep(key=key, fail=1, after=formatdate(time.time() - 60, usegmt=True))
    assert waits.delays == [0.0]


async def test_retry_after_longer_than_max_retry_after_is_not_retried(api: LocalServer) -> None:
    waits = Waits()
    ep, key = flaky(api, sleep=waits, max_retry_after=5)
    with pytest.raises(NetworkError):
        await ep(key=key, fail=1, after=3600)
    assert sent(api, key) == 1
    assert waits.delays == []


async def test_gives_up_after_attempts_with_the_last_error(api: LocalServer) -> None:
    waits = Waits()
    ep, key = flaky(api, attempts=2, sleep=waits, jitter=0, backoff=1, factor=3)
    with pytest.raises(NetworkError) as info:
        await ep(key=key, fail=10, status=429)
    assert info.value.status == 429
    assert sent(api, key) == 3
    assert waits.delays == [1, 3]


async def test_statuses_outside_the_policy_are_not_retried(api: LocalServer) -> None:
    ep, key = flaky(api, sleep=Waits())
    with pytest.raises(NetworkError) as info:
        await ep(key=key, fail=1, status=500)
    assert info.value.status == 500
    assert sent(api, key) == 1


async def test_custom_statuses_are_retried(api: LocalServer) -> None:
    ep, key = flaky(api, sleep=Waits(), statuses={500})
    await ep(key=key, fail=1, status=500)
    assert sent(api, key) == 2


async def test_connection_refused_is_retried_then_raised() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    waits = Waits()
    ep = RestEndpoint(path="/x", url_prefix=f"http://127.0.0.1:{port}", retry=Retry(attempts=2, sleep=waits))
    with pytest.raises(NetworkError) as info:
        await ep()
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert len(waits.delays) == 2


async def test_read_timeout_is_retried(api: LocalServer) -> None:
    waits = Waits()
    ep = RestEndpoint(
        path="/_test/slow", url_prefix=api.url, request_init={"timeout": 0.05}, retry=Retry(attempts=1, sleep=waits)
    )
    with pytest.raises(NetworkError) as info:
        await ep(ms=400)
    assert isinstance(info.value.__cause__, httpx.TimeoutException)
    assert len(api.requests.matching(path="/_test/slow")) == 2


async def test_deduplicated_fetch_retries_once_for_all_callers(api: LocalServer) -> None:
    ep, key = flaky(api, sleep=Waits())
    ctrl = Controller()
    first, second = await asyncio.gather(ctrl.fetch(ep, key=key, fail=2), ctrl.fetch(ep, key=key, fail=2))
    assert first == second == {"ok": True, "method": "GET"}
    assert sent(api, key) == 3


async def test_cancelling_the_caller_stops_the_retries(api: LocalServer) -> None:
    waiting = asyncio.Event()
    cancelled = asyncio.Event()

    async def sleep_forever(seconds: float) -> None:
        waiting.set()
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    ep, key = flaky(api, sleep=sleep_forever)
    ctrl = Controller()
    caller = asyncio.create_task(ctrl.fetch(ep, key=key, fail=5))
    await asyncio.wait_for(waiting.wait(), 10)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await asyncio.wait_for(cancelled.wait(), 10)
    assert sent(api, key) == 1
    assert not ctrl.get_error(ep, key=key, fail=5)  # an aborted fetch stores no error


async def test_every_retry_is_logged_at_debug(api: LocalServer, caplog: pytest.LogCaptureFixture) -> None:
    ep, key = flaky(api, sleep=Waits(), jitter=0)
    with caplog.at_level(logging.DEBUG, logger="restlayer"):
        await ep(key=key, fail=2)
    debug = [r.getMessage() for r in caplog.records if r.name == "restlayer" and r.levelno == logging.DEBUG]
    lines = [line for line in debug if line.startswith("retry ")]
    assert len(lines) == 2
    assert lines[0].startswith("retry 1/3 of GET ") and "after status 503" in lines[0]
    assert lines[1].startswith("retry 2/3 of GET ")


async def test_resource_retry_applies_to_every_member(api: LocalServer) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, retry=2)
    assert todos.get.retry == Retry(attempts=2)
    assert todos.get_list.retry == Retry(attempts=2)
    assert todos.update.retry == Retry(attempts=2)
    assert todos.get.extend(retry=None).retry is None


def test_backoff_grows_by_factor_up_to_the_cap() -> None:
    policy = Retry(backoff=1, factor=2, max_backoff=5, jitter=0)
    assert [policy.delay(n) for n in range(1, 6)] == [1, 2, 4, 5, 5]


def test_the_wait_of_a_very_late_retry_stays_at_the_cap() -> None:
    """`attempts` has no bound: past about a thousand retries the power outgrows a float (no OverflowError)."""
    policy = Retry(attempts=5000, backoff=1, factor=2.0, max_backoff=5, jitter=0)
    assert [policy.delay(n) for n in (1025, 5000)] == [5, 5]
    assert Retry(backoff=0, factor=2.0, jitter=0).delay(5000) == 0  # no wait stays no wait


def test_jitter_shortens_the_wait_by_at_most_its_fraction() -> None:
    assert Retry(backoff=2, jitter=0.5, random=lambda: 0.5).delay(1) == 1.5
    assert Retry(backoff=2, jitter=0.5, random=lambda: 0.0).delay(1) == 2.0


def test_only_idempotent_methods_by_default() -> None:
    policy = Retry()
    assert [m for m in ("GET", "HEAD", "PUT", "DELETE", "POST", "PATCH") if policy.allows(m)] == [
        "GET",
        "HEAD",
        "PUT",
        "DELETE",
    ]


@pytest.mark.parametrize(
    "options",
    [
        {"attempts": -1},
        {"attempts": 1.5},
        {"backoff": -1},
        {"factor": 0},
        {"jitter": 2},
        {"statuses": 503},
        {"methods": "GET"},
        {"exceptions": (ValueError, "x")},
    ],
)
def test_bad_retry_options_raise_param_error(options: dict[str, Any]) -> None:
    with pytest.raises(ParamError, match="Retry: "):
        Retry(**options)


def test_retry_option_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(ParamError, match="retry must be a Retry"):
        RestEndpoint(path="/x", retry="often")


async def test_an_unreadable_retry_after_falls_back_to_the_backoff(api: LocalServer) -> None:
    waits = Waits()
    ep, key = flaky(api, sleep=waits, jitter=0)
    await ep(key=key, fail=1, after="soon")
    assert waits.delays == [0.5]


async def test_a_graphql_reply_with_a_transient_status_is_retried(api: LocalServer) -> None:
    from restlayer.graphql import GQLEndpoint

    key = uuid.uuid4().hex
    waits = Waits()
    retry = Retry(sleep=waits, methods={"POST"})
    gql = GQLEndpoint(f"{api.url}{FLAKY}?key={key}&fail=1", retry=retry).query("{ ok }")
    assert await gql() is None  # the flaky route answers {"ok": true}, which has no "data"
    assert sent(api, key) == 2
    assert len(waits.delays) == 1
