"""Lifecycle: `async with Controller()`, several `asyncio.run` calls, the global client configuration, time options."""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

import restlayer
from restlayer import Controller, Entity, ParamError, RestEndpoint, configure_client, resource
from restlayer.rest import get_client

ROOT = Path(__file__).resolve().parents[1]


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


@pytest.fixture
def default_client_config() -> Iterator[None]:
    """Whatever a test configures, the next one starts from the defaults."""
    configure_client()
    yield
    configure_client()


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## In fifteen lines\s+```python\n(.*?)```", text, re.S)
    assert block, "README lost its fifteen-line example"
    return block.group(1)


def test_readme_example_leaves_no_resource_warning(api: Any) -> None:
    source = _readme_example().replace("http://127.0.0.1:8000", api.url)
    script = source + "\nimport asyncio\nasyncio.run(main())\nprint('done')\n"
    ran = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error::ResourceWarning", "-c", script],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "done\n"
    # -X dev also reports callbacks slower than 100 ms ("Executing <Task ...> took 0.2 seconds"):
    # a diagnostic of a loaded machine (the first TLS context load), not a warning about the code.
    reported = [line for line in ran.stderr.splitlines() if not line.startswith("Executing <")]
    assert reported == []


async def test_async_with_closes_polling_and_the_loop_client(api: Any) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url)
    polled = todos.get.extend(poll_frequency=timedelta(seconds=60))
    async with Controller() as ctrl:
        await ctrl.subscribe(polled, id=1)
        client = get_client()
        assert (await ctrl.fetch(todos.get, id=1)).id == 1
    assert client.is_closed
    assert get_client() is not client  # a later request opens a new client


async def test_leaving_async_with_lets_another_controllers_request_finish(api: Any) -> None:
    """The shared client is closed by the last request still on it, not under another controller's feet."""
    gate = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url)
    name = f"left-open-{secrets.token_hex(4)}"
    other = Controller()
    fetching = asyncio.ensure_future(other.fetch(gate, name=name))
    async with httpx.AsyncClient() as client:
        arrived = await client.get(f"{api.url}/_test/gate/{name}/arrivals", params={"count": 1}, timeout=20)
        assert arrived.status_code == 200
        shared = get_client()
        async with Controller():
            pass  # leaving it closes the loop's shared client...
        assert not shared.is_closed  # ...once the other controller's request is done
        (await client.post(f"{api.url}/_test/gate/{name}/open", timeout=10)).raise_for_status()
    assert await fetching == {"gate": name, "arrival": 1}
    assert shared.is_closed and get_client() is not shared
    other.close()


async def test_leaving_async_with_lets_another_controllers_streamed_body_finish(api: Any) -> None:
    """A `content="stream"` reply is under way until its body is read or closed: another controller
    leaving `async with` then closes the shared client, not while that body is still arriving."""
    drip = RestEndpoint(path="/_test/drip", url_prefix=api.url, content="stream")
    other = Controller()
    stream = await other.fetch(drip, {"chunks": 3, "ms": 10})
    shared = get_client()
    async with Controller():
        pass
    assert not shared.is_closed
    body = b"".join([chunk async for chunk in stream])
    assert body == b"   {}"
    assert shared.is_closed and get_client() is not shared
    other.close()


async def test_a_streamed_body_dropped_unread_still_lets_the_shared_client_close(api: Any) -> None:
    """A `content="stream"` body dropped without being read or closed does not keep a retired client open."""
    drip = RestEndpoint(path="/_test/drip", url_prefix=api.url, content="stream")
    stream = await drip({"chunks": 1, "ms": 10})
    shared = get_client()
    async with Controller():
        pass
    assert not shared.is_closed
    del stream
    gc.collect()
    for _ in range(100):  # the close runs in a task of this loop
        if shared.is_closed:
            break
        await asyncio.sleep(0)
    assert shared.is_closed


async def test_a_streamed_body_fetched_through_a_controller_and_dropped_lets_the_shared_client_close(
    api: Any,
) -> None:
    """The store kept a `content="stream"` body as the call's data, so one dropped unread by its caller
    held its reply, and a client `aclose()` retired, as long as the controller lived."""
    drip = RestEndpoint(path="/_test/drip", url_prefix=api.url, content="stream")
    ctrl = Controller()
    stream = await ctrl.fetch(drip, {"chunks": 1, "ms": 10})
    shared = get_client()
    async with Controller():
        pass
    assert not shared.is_closed
    del stream
    for _ in range(100):  # the fetch's callbacks let go of the body, then the close runs in a task of this loop
        await asyncio.sleep(0)
        gc.collect()
        if shared.is_closed:
            break
    assert shared.is_closed and not ctrl.closed
    ctrl.close()


def test_module_level_resource_works_across_several_asyncio_runs(api: Any) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url)

    async def title(pk: int) -> str:
        async with Controller() as ctrl:
            todo = await ctrl.fetch(todos.get, id=pk)
            return str(todo.title)

    first = asyncio.run(title(1))
    second = asyncio.run(title(2))
    third = asyncio.run(title(1))
    assert first == third and first != second
    assert len(api.requests.matching("GET")) == 3


async def test_configured_options_reach_new_shared_clients(api: Any, default_client_config: None) -> None:
    await restlayer.aclose()
    configure_client(headers={"X-Env": "staging"}, timeout=httpx.Timeout(5.0))
    echo = RestEndpoint(path="/_test/echo", url_prefix=api.url)
    async with Controller() as ctrl:
        seen = await ctrl.fetch(echo)
        assert get_client().timeout.read == 5.0
        assert get_client().follow_redirects is True  # defaults stay unless overridden
    assert seen["headers"]["x-env"] == "staging"


async def test_configured_factory_builds_the_client(api: Any, default_client_config: None) -> None:
    await restlayer.aclose()
    built: list[httpx.AsyncClient] = []

    def factory() -> httpx.AsyncClient:
        built.append(httpx.AsyncClient(headers={"X-Built": "yes"}))
        return built[-1]

    configure_client(factory)
    echo = RestEndpoint(path="/_test/echo", url_prefix=api.url)
    async with Controller() as ctrl:
        seen = await ctrl.fetch(echo)
    assert seen["headers"]["x-built"] == "yes" and len(built) == 1 and built[0].is_closed


async def test_configured_cookies_are_sent_but_cookies_servers_set_are_not_shared(
    api: Any, default_client_config: None
) -> None:
    await restlayer.aclose()
    configure_client(cookies={"given": "1"})
    set_cookie = RestEndpoint(path="/_test/set-cookie", url_prefix=api.url)
    echo = RestEndpoint(path="/_test/echo", url_prefix=api.url)
    async with Controller() as a, Controller() as b:
        await a.fetch(set_cookie)
        seen_by_b = await b.fetch(echo)
    assert seen_by_b["headers"]["cookie"] == "given=1"  # not the session cookie `a` was sent


@pytest.mark.parametrize("cookies", [5, "session=1", [("a",)]], ids=["int", "text", "bad-pair"])
def test_configure_client_refuses_cookies_it_cannot_send(cookies: object, default_client_config: None) -> None:
    with pytest.raises(ParamError, match=r"configure_client: .*cookies"):
        configure_client(cookies=cookies)


def test_configure_client_rejects_what_httpx_would_not_take(default_client_config: None) -> None:
    with pytest.raises(ParamError, match="retries"):
        configure_client(retries=3)
    with pytest.raises(ParamError, match="either"):
        configure_client(lambda: httpx.AsyncClient(), timeout=1.0)


async def test_own_client_passed_to_a_resource_is_used_and_left_open(api: Any) -> None:
    async with httpx.AsyncClient(headers={"X-Mine": "1"}, follow_redirects=True) as mine:
        echo = RestEndpoint(path="/_test/echo", url_prefix=api.url, client=mine)
        async with Controller() as ctrl:
            seen = await ctrl.fetch(echo)
        assert seen["headers"]["x-mine"] == "1"
        assert not mine.is_closed  # restlayer never closes a client it did not create


def test_time_options_accept_timedelta() -> None:
    endpoint = RestEndpoint(
        path="/todos/:id",
        data_expiry_length=timedelta(minutes=2),
        error_expiry_length=timedelta(seconds=1.5),
        poll_frequency=timedelta(seconds=5),
    )
    assert (endpoint.data_expiry_length, endpoint.error_expiry_length, endpoint.poll_frequency) == (
        120_000,
        1_500,
        5_000,
    )
    assert endpoint.extend(poll_frequency=timedelta(seconds=1)).poll_frequency == 1_000

    class Slow(RestEndpoint):
        data_expiry_length = timedelta(hours=1)  # type: ignore[assignment]  # turned into ms on construction

    assert Slow(path="/x").data_expiry_length == 3_600_000
    with pytest.raises(ParamError, match="poll_frequency"):
        RestEndpoint(path="/x", poll_frequency="5s")


async def test_fetch_time_overrides_accept_timedelta(api: Any) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, data_expiry_length=timedelta(seconds=30))
    async with Controller(clock=lambda: 1_000.0) as ctrl:
        await ctrl.fetch(todos.get, id=1)
        assert ctrl.get_response(todos.get, id=1).expires_at == 31_000.0


def test_poll_frequency_that_looks_like_seconds_logs_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="restlayer"):
        RestEndpoint(path="/x", poll_frequency=5)
        RestEndpoint(path="/y", poll_frequency=100)
        RestEndpoint(path="/z", poll_frequency=timedelta(seconds=5))
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1
    assert "poll_frequency=5 " in warned[0].getMessage() and "200 times a second" in warned[0].getMessage()


def test_configure_client_rejects_a_factory_that_is_not_one(default_client_config: None) -> None:
    with pytest.raises(ParamError, match="callable"):
        configure_client("httpx.AsyncClient")  # type: ignore[arg-type]


async def test_a_factory_returning_something_else_is_named(api: Any, default_client_config: None) -> None:
    await restlayer.aclose()
    configure_client(lambda: "not a client")  # type: ignore[arg-type, return-value]
    with pytest.raises(ParamError, match=r"not an httpx\.AsyncClient"):
        await RestEndpoint(path="/echo", url_prefix=api.url)()


@pytest.mark.parametrize(
    "options",
    [
        {"timeout": "30"},
        {"timeout": -1},
        {"limits": 5},
        {"headers": 5},
        {"proxy": 5},
        {"transport": "http"},
        {"follow_redirects": "no"},  # else taken for true: redirects followed
        {"follow_redirects": None},
        {"max_redirects": "5"},  # else a bare TypeError at the first redirect
        {"max_redirects": 1.5},
        {"max_redirects": -1},
        {"event_hooks": {"request": [5]}},  # else a bare TypeError at the first request
        {"event_hooks": {"sent": [print]}},
    ],
    ids=[
        "timeout-str",
        "timeout-negative",
        "limits",
        "headers",
        "proxy",
        "transport",
        "follow-str",
        "follow-none",
        "max-redirects-str",
        "max-redirects-float",
        "max-redirects-negative",
        "hook-not-callable",
        "hook-unknown-event",
    ],
)
def test_configure_client_rejects_bad_option_values_at_once(
    options: dict[str, object], default_client_config: None
) -> None:
    """A value httpx cannot use is a ParamError naming the option when configured, not a bare
    TypeError or AttributeError from the first request of some later controller."""
    name = next(iter(options))
    with pytest.raises(ParamError, match=f"configure_client: .*{name}"):
        configure_client(None, **options)


async def test_a_factory_that_raises_is_a_param_error_with_its_error_as_cause(
    api: Any, default_client_config: None
) -> None:
    await restlayer.aclose()

    def factory() -> httpx.AsyncClient:
        raise RuntimeError("no certificates")

    configure_client(factory)
    with pytest.raises(ParamError, match="configure_client: the factory raised RuntimeError: no certificates") as info:
        await RestEndpoint(path="/_test/echo", url_prefix=api.url)()
    assert type(info.value.__cause__) is RuntimeError


@pytest.mark.parametrize(
    ("headers", "match"),
    [
        ({"X-A": "a\r\nX-B: b"}, "header 'X-A' value contains a line break"),
        ({"bad name": "v"}, "'bad name' is not a valid header name"),
        ({"Authorization": "Bearer a\0b"}, "header 'Authorization' value contains a line break or NUL"),
        ([("X-A", " padded")], "header 'X-A' value starts or ends with whitespace"),
    ],
    ids=["line-break", "name", "nul", "padded"],
)
async def test_configure_client_refuses_headers_no_request_could_send(
    api: Any, headers: object, match: str, default_client_config: None
) -> None:
    """Checked as an endpoint's own headers are: else every request fails when sent, as a transport
    failure (status 500) error policies take for a server down, not the caller's mistake."""
    await restlayer.aclose()
    with pytest.raises(ParamError, match=f"configure_client: {match}"):
        configure_client(headers=headers)
    seen = await RestEndpoint(path="/_test/echo", url_prefix=api.url)()
    assert seen["path"] == "/_test/echo"  # the refused headers were not kept
