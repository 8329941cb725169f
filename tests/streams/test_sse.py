"""SSEStream against real servers on 127.0.0.1: the example API's /events feed and scripted faults."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from examples.todo_api import LocalServer
from restlayer import (
    All,
    BodyTooLargeError,
    ClosedError,
    Controller,
    DecodeError,
    Entity,
    Invalidate,
    ParamError,
    RedirectError,
    RestLayerError,
    StatusError,
    SubscriptionManager,
    resource,
)
from restlayer.rest import aclose, configure_client
from restlayer.streams import Backoff, Message, SSEStream, Stream, StreamManager, Writes
from tests.streams._script import PACED, Script

ScriptFactory = Callable[..., tuple[str, Script]]


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


def todos(api: LocalServer) -> Any:
    return resource(path="/todos/:id", schema=Todo, url_prefix=api.url)


def table(api: LocalServer) -> dict[str, Any]:
    """The example API's events mapped to store writes."""
    return {
        "todos.created": todos(api).get_list.push,
        "todos.updated": Todo,
        "todos.deleted": Invalidate(Todo),
    }


class Delays:
    """An injectable backoff sleep: records each wait and yields to the loop once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


def fast(delays: Delays | None = None) -> Backoff:
    return Backoff(jitter=0, sleep=delays or Delays())


async def changed(ctrl: Controller, endpoint: Any, *args: Any, action: Any) -> Any:
    """Run `action()` and wait (bounded) until the watched value changes; the new value."""
    seen: asyncio.Queue[Any] = asyncio.Queue()
    unwatch = ctrl.watch(endpoint, *args, callback=seen.put_nowait)
    try:
        await action()
        return await asyncio.wait_for(seen.get(), 10)
    finally:
        unwatch()


# -- the example API's feed ---------------------------------------------------------------


async def test_an_update_by_another_client_reaches_the_store_by_push(api: LocalServer) -> None:
    ctrl = Controller()
    await ctrl.fetch(todos(api).get, id=1)
    stream = SSEStream(f"{api.url}/events", on=table(api), backoff=fast())
    async with StreamManager(ctrl, [stream]), httpx.AsyncClient() as other:
        await stream.until(lambda s: s.connected)

        async def edit() -> None:
            (await other.patch(f"{api.url}/todos/1", json={"title": "pushed"})).raise_for_status()

        value = await changed(ctrl, todos(api).get, {"id": 1}, action=edit)
    assert value.title == "pushed"
    assert ctrl.get(Todo, {"id": 1}) == value
    assert len(api.requests.matching("GET", "/todos/1")) == 1  # no refetch: the push carried the data


async def test_a_create_grows_the_list_and_a_delete_removes_the_item(api: LocalServer) -> None:
    ctrl = Controller()
    before = await ctrl.fetch(todos(api).get_list)
    stream = SSEStream(f"{api.url}/events", on=table(api), backoff=fast())
    async with StreamManager(ctrl, [stream]), httpx.AsyncClient() as other:
        await stream.until(lambda s: s.connected)

        async def create() -> None:
            (await other.post(f"{api.url}/todos", json={"userId": 1, "title": "new"})).raise_for_status()

        grown = await changed(ctrl, todos(api).get_list, action=create)
        assert [t.title for t in grown[len(before) :]] == ["new"]

        async def delete() -> None:
            (await other.delete(f"{api.url}/todos/1")).raise_for_status()

        shrunk = await changed(ctrl, todos(api).get_list, action=delete)
        assert 1 not in [t.id for t in shrunk]
        assert len(shrunk) == len(before)


# -- scripted faults ----------------------------------------------------------------------


def updated(event_id: int, todo_id: int, title: str) -> tuple[int, str, str]:
    return (event_id, "todos.updated", json.dumps({"id": todo_id, "title": title}))


async def test_a_connection_dropped_mid_event_resumes_from_the_last_complete_id(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    query, played = script([updated(1, 1, "a"), updated(2, 2, "b"), updated(3, 1, "c")], drop_after=1)
    ctrl = Controller()
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, backoff=fast())
    async with StreamManager(ctrl, [stream]):
        await stream.until(lambda s: s.applied == 3)
    assert played.resumed_from == ["", "1"]
    assert stream.connects == 2
    assert stream.ignored == 0  # the half-sent event was never applied
    assert titles(ctrl) == {1: "c", 2: "b"}
    assert stream.last_event_id == "3"


def titles(ctrl: Controller) -> dict[int, str]:
    """Every Todo in the store: id -> title."""
    return {t.id: t.title for t in ctrl.get(All(Todo)) or []}


async def test_malformed_and_unknown_events_are_logged_and_change_nothing(
    script_server: LocalServer, script: ScriptFactory, caplog: pytest.LogCaptureFixture
) -> None:
    events = [
        (1, "todos.updated", '{"id": 1, "title": '),
        (2, "widgets.updated", json.dumps({"id": 7})),
        (3, "todos.updated", json.dumps({"title": "no id"})),
        updated(4, 2, "fine"),
    ]
    query, _ = script(events)
    ctrl = Controller()
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, backoff=fast())
    with caplog.at_level(logging.WARNING, logger="restlayer"):
        async with StreamManager(ctrl, [stream]):
            await stream.until(lambda s: s.applied + s.ignored == 4)
    assert (stream.applied, stream.ignored) == (1, 3)
    assert titles(ctrl) == {2: "fine"}
    lines = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert "'todos.updated' (id 1) ignored: malformed data" in lines[0]
    assert "'widgets.updated' (id 2) ignored: no mapping for this event type" in lines[1]
    assert "'todos.updated' (id 3) ignored: SchemaError" in lines[2]
    assert stream.last_event_id == "4"


async def test_a_message_whose_second_write_does_not_fit_applies_none(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    query, _ = script([(1, "pair", json.dumps([{"id": 1, "title": "x"}, {"title": "no id"}])), updated(2, 3, "ok")])

    def pair(message: Message, writes: Writes) -> None:
        for item in message.data:
            writes.set(Todo, item)

    ctrl = Controller()
    stream = SSEStream(
        f"{script_server.url}/_stream/sse{query}", on={"pair": pair, "todos.updated": Todo}, backoff=fast()
    )
    async with StreamManager(ctrl, [stream]):
        await stream.until(lambda s: s.applied + s.ignored == 2)
    assert titles(ctrl) == {3: "ok"}
    assert stream.ignored == 1


async def test_an_updater_in_a_message_sees_the_messages_earlier_writes_and_skips_what_is_not_stored(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    renamed = {"id": 1, "userId": 1, "title": "renamed", "completed": False}
    query, _ = script([(1, "renamed-and-done", json.dumps(renamed)), (2, "two-done", json.dumps({"id": 2, "of": 99}))])

    def done(todo: Todo) -> dict[str, Any]:
        return {"id": todo.id, "userId": todo.userId, "title": todo.title, "completed": True}

    def renamed_and_done(message: Message, writes: Writes) -> None:
        writes.set(Todo, message.data)
        writes.set(Todo, {"id": message.data["id"]}, done)

    def two_done(message: Message, writes: Writes) -> None:
        writes.set(Todo, {"id": message.data["id"], "title": "two"})
        writes.set(Todo, {"id": message.data["of"]}, done)  # not stored: skipped, as Controller.set does

    ctrl = Controller()
    ctrl.set(Todo, {"id": 1, "userId": 1, "title": "old", "completed": False})
    stream = SSEStream(
        f"{script_server.url}/_stream/sse{query}",
        on={"renamed-and-done": renamed_and_done, "two-done": two_done},
        backoff=fast(),
    )
    async with StreamManager(ctrl, [stream]):
        await stream.until(lambda s: s.applied + s.ignored == 2)
    assert (stream.applied, stream.ignored) == (2, 0)
    assert ctrl.get(Todo, {"id": 1}) == Todo(id=1, userId=1, title="renamed", completed=True)
    assert titles(ctrl) == {1: "renamed", 2: "two"}
    assert ctrl.get(Todo, {"id": 99}) is None


@pytest.mark.parametrize(
    ("retry_ms", "waited"),
    [(250, 0.25), (0, 0.1)],  # 0: the floor of a server's reconnection time, no reconnecting in a tight loop
    ids=["the_servers_retry_field_sets_the_reconnection_time", "a_retry_of_zero_still_waits_before_reconnecting"],
)
async def test_the_servers_retry_field(
    script_server: LocalServer, script: ScriptFactory, retry_ms: int, waited: float
) -> None:
    query, played = script([updated(1, 1, "a"), updated(2, 1, "b")], drop_after=1, retry_ms=retry_ms)
    delays = Delays()
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, backoff=fast(delays))
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.applied == 2)
    assert delays.delays == [waited]
    assert played.resumed_from == ["", "1"]


async def test_connections_ended_after_frames_that_are_no_message_still_back_off(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """A `retry:`-only frame, then the server ends the connection: nothing was applied, so the
    backoff grows as after a failed connection (it restarts only once a message is applied)."""
    query, _ = script([], retry_ms=100, hold=False)
    delays = Delays()
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={}, backoff=fast(delays))
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: len(delays.delays) >= 4)
    assert delays.delays[:4] == [0.1, 0.2, 0.4, 0.8]
    assert stream.connects >= 4 and stream.applied == 0


async def test_a_connection_that_applied_a_message_restarts_the_backoff(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    query, played = script([updated(1, 1, "a"), updated(2, 1, "b")], drop_after=1, retry_ms=100, hold=False)
    delays = Delays()
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, backoff=fast(delays))
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: len(delays.delays) >= 4)
    # event 1 applied, dropped; event 2 applied, ended; then connections that apply nothing
    assert delays.delays[:4] == [0.1, 0.1, 0.2, 0.4]
    assert played.resumed_from[:4] == ["", "1", "2", "2"]


async def test_failed_connections_back_off_exponentially_up_to_the_cap(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    query, played = script([], status=503)
    delays = Delays()
    backoff = Backoff(initial=1, factor=2, cap=3, jitter=0, sleep=delays)
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={}, backoff=backoff)
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: len(delays.delays) >= 4)
    assert delays.delays[:4] == [1, 2, 3, 3]
    assert stream.connects == 0
    assert played.resumed_from[:4] == ["", "", "", ""]


@pytest.mark.parametrize(("initial", "factor", "cap"), [(0, 2, 30), (0.5, 2, 0), (1e-9, 1, 30)])
async def test_a_backoff_of_no_wait_still_waits_before_reconnecting_to_a_failing_server(
    script_server: LocalServer, script: ScriptFactory, initial: float, factor: float, cap: float
) -> None:
    """A server answering 503 at once: reconnecting without a wait would be a tight loop against it."""
    query, _ = script([], status=503)
    delays = Delays()
    backoff = Backoff(initial=initial, factor=factor, cap=cap, jitter=0, sleep=delays)
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={}, backoff=backoff)
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: len(delays.delays) >= 3)
    assert min(delays.delays) >= 0.1  # the least wait between connections, as for a server's `retry:`


@pytest.mark.parametrize("factor", [0, 0.5, 0.999])
def test_a_backoff_whose_waits_shrink_is_a_param_error(factor: float) -> None:
    """Waits that shrink towards none would reconnect ever faster to a server that is down."""
    with pytest.raises(ParamError, match=f"Backoff: factor must be >= 1.*not {factor!r}"):
        Backoff(factor=factor)


async def test_a_plain_function_listens_to_the_status_as_an_async_one_does(
    script_server: LocalServer, script: ScriptFactory, caplog: pytest.LogCaptureFixture
) -> None:
    query, _ = script([updated(1, 1, "a")])
    seen: dict[str, list[bool]] = {"plain": [], "async": []}

    def plain(stream: Stream) -> None:
        seen["plain"].append(stream.connected)

    async def awaited(stream: Stream) -> None:
        seen["async"].append(stream.connected)

    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo})
    stream.add_listener(plain)
    stream.add_listener(awaited)
    with caplog.at_level(logging.ERROR, logger="restlayer"):
        async with StreamManager(Controller(), [stream]):
            await stream.until(lambda s: s.applied == 1)
    assert seen == {"plain": [True, False], "async": [True, False]}
    assert "listener failed" not in caplog.text
    with pytest.raises(ParamError, match="add_listener takes a function"):
        stream.add_listener(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410])
async def test_a_client_error_reply_ends_the_stream_with_a_status_error(
    script_server: LocalServer, script: ScriptFactory, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Reconnecting cannot mend a refusal (unauthorized, not found...): one try, then StatusError."""
    query, played = script([], status=status)
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={}, backoff=fast())
    with pytest.raises(StatusError, match=f"answered {status}") as info:
        await asyncio.wait_for(stream.run(Controller()), timeout=10)
    assert info.value.status == status
    assert played.resumed_from == [""] and stream.closed
    managed = SSEStream(f"{script_server.url}/_stream/sse{query}", on={}, backoff=fast())
    with caplog.at_level(logging.ERROR, logger="restlayer"):
        async with StreamManager(Controller(), [managed]):
            await managed.until(lambda s: s.closed)
    assert played.resumed_from == ["", ""]
    assert any(f"answered {status}" in r.getMessage() + str(r.exc_info) for r in caplog.records)


@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_redirect_the_client_does_not_follow_ends_the_stream_with_a_redirect_error(
    script_server: LocalServer, script: ScriptFactory, status: int
) -> None:
    """Every reconnect would be sent the same redirect: one try, then RedirectError naming where it points."""
    query, played = script([], status=status)
    delays = Delays()
    async with httpx.AsyncClient() as client:  # httpx's default: redirects are not followed
        stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={}, client=client, backoff=fast(delays))
        with pytest.raises(RedirectError, match=f"answered {status}.*follow_redirects") as info:
            await asyncio.wait_for(stream.run(Controller()), timeout=10)
    assert (info.value.status, info.value.location) == (status, f"{script_server.url}/_stream/moved")
    assert played.resumed_from == [""] and delays.delays == [] and stream.closed


async def test_more_redirects_than_the_client_follows_end_the_stream_instead_of_retrying(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """A loop, or a chain longer than max_redirects, is sent again at every reconnect: one try, then RedirectError."""
    query, played = script([(1, "todos.updated", json.dumps({"id": 1, "title": "a"}))])
    target = f"{script_server.url}/_stream/sse{query}"
    for _ in range(2):
        target = f"{script_server.url}/_stream/redirect?to={quote(target)}"
    delays = Delays()
    async with httpx.AsyncClient(follow_redirects=True, max_redirects=1) as client:
        stream = SSEStream(target, on={"todos.updated": Todo}, client=client, backoff=fast(delays))
        with pytest.raises(RedirectError, match="more than 1 redirects") as info:
            await asyncio.wait_for(stream.run(Controller()), timeout=10)
    assert info.value.location.startswith(f"{script_server.url}/_stream/sse")
    assert played.resumed_from == [] and delays.delays == [] and stream.closed


@pytest.mark.parametrize("leaves_origin", [False, True])
async def test_a_followed_redirect_sends_the_stream_and_configured_headers_only_while_on_the_origin(
    api: LocalServer, script_server: LocalServer, script: ScriptFactory, leaves_origin: bool
) -> None:
    """The stream's own headers and what configure_client sends are for its API: a redirect keeps them on the
    origin; once a hop leaves it (here to another port), that hop and every later one, even one coming back,
    go without them. The stream's own Accept, Cache-Control and Last-Event-ID go everywhere."""
    query, played = script([(1, "todos.updated", json.dumps({"id": 1, "title": "a"}))])
    target = f"{script_server.url}/_stream/sse{query}"
    if leaves_origin:  # to the API's origin, then back to the stream's
        target = f"{api.url}/_test/redirect?to={quote(target)}"
    url = f"{script_server.url}/_stream/redirect?to={quote(target)}"
    configure_client(headers={"X-Api-Key": "secret"}, cookies={"sid": "abc"})
    try:
        stream = SSEStream(url, on={"todos.updated": Todo}, headers={"X-Own": "tok", "Last-Event-ID": "0"})
        async with StreamManager(Controller(), [stream]):
            await asyncio.wait_for(stream.until(lambda s: s.applied == 1), timeout=10)
    finally:
        configure_client()
    sent = dict(played.sent_headers[0])
    credentials = {name: sent.get(name) for name in ("x-own", "x-api-key", "cookie")}
    kept = {"x-own": "tok", "x-api-key": "secret", "cookie": "sid=abc"}
    assert credentials == ({name: None for name in kept} if leaves_origin else kept)
    assert (sent["accept"], sent["cache-control"], sent["last-event-id"]) == ("text/event-stream", "no-store", "0")


@pytest.mark.parametrize("status", [408, 429, 500, 503])
async def test_a_reply_saying_to_try_again_later_is_retried(
    script_server: LocalServer, script: ScriptFactory, status: int
) -> None:
    query, played = script([], status=status)
    delays = Delays()
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={}, backoff=fast(delays))
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: len(delays.delays) >= 2)
        assert not stream.closed
    assert played.resumed_from[:2] == ["", ""]


@pytest.mark.parametrize("factor", [2, 2.0, 10.0])
def test_the_wait_after_a_very_long_outage_stays_at_the_cap(factor: float) -> None:
    """Past about a thousand failed connections the power overflows a float: the wait stays at the cap
    (an OverflowError would end the stream for good)."""
    backoff = Backoff(initial=1, factor=factor, cap=30, jitter=0)
    assert [backoff.delay(n) for n in (1, 2, 1025, 100_000)] == [1, factor, 30, 30]
    assert Backoff(initial=0, factor=factor, jitter=0).delay(5000) == 0  # no wait stays no wait


@pytest.mark.parametrize(
    ("path", "content_type", "named"),
    [
        ("/todos", None, "'application/json'"),  # a JSON list: the url of a resource, not of its events
        ("/_stream/sse", "text/html; charset=utf-8", "'text/html'"),  # a login page answered 200
        ("/_stream/sse", "", "'none'"),
    ],
)
async def test_a_reply_that_is_no_event_stream_ends_the_stream(
    api: LocalServer,
    script_server: LocalServer,
    script: ScriptFactory,
    caplog: pytest.LogCaptureFixture,
    path: str,
    content_type: str | None,
    named: str,
) -> None:
    """Every reconnect would be answered the same page: it was retried for ever, only in the log. Like the HTML
    standard's EventSource, the stream now fails for good, with a DecodeError naming the type it got."""
    played = None
    url = f"{api.url}/todos"
    if content_type is not None:
        query, played = script([updated(1, 1, "a")], content_type=content_type)
        url = f"{script_server.url}{path}{query}"
    delays = Delays()
    stream = SSEStream(url, on=table(api), backoff=fast(delays))
    with pytest.raises(DecodeError, match=f"with Content-Type {named}, not text/event-stream") as info:
        await asyncio.wait_for(stream.run(Controller()), timeout=10)
    assert info.value.status == 400
    assert stream.connects == 0 and not stream.connected and stream.closed and delays.delays == []
    if played is not None:
        assert played.resumed_from == [""]  # one try, no reconnect
    managed = SSEStream(url, on=table(api), backoff=fast(delays))
    with caplog.at_level(logging.WARNING, logger="restlayer"):
        async with StreamManager(Controller(), [managed]):
            await managed.until(lambda s: s.closed)
    assert managed.connects == 0 and delays.delays == []
    lines = [r.getMessage() + str(r.exc_info) for r in caplog.records]
    assert any("not text/event-stream" in line for line in lines), lines
    assert not any("retrying" in line or "connection lost" in line for line in lines), lines


def test_a_stream_runs_again_in_another_event_loop(api: LocalServer) -> None:
    stream = SSEStream(f"{api.url}/events", on=table(api))

    async def connect_once() -> None:
        async with StreamManager(Controller(), [stream]):
            await stream.until(lambda s: s.connected)
        await aclose()  # this loop's shared client

    asyncio.run(connect_once())
    asyncio.run(connect_once())  # `until` waits in the new loop too
    assert stream.connects == 2 and stream.closed


async def test_an_empty_id_field_forgets_the_last_event_id(script_server: LocalServer, script: ScriptFactory) -> None:
    """`id:` with no value resets the last event id (SSE standard): the reconnect sends no `Last-Event-ID`."""
    cleared = 'id:\nevent: todos.updated\ndata: {"id": 1, "title": "b"}\n\n'
    query, played = script([updated(1, 1, "a")], tail=cleared, hold=False)
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, backoff=fast())
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.connects >= 2)
    assert played.resumed_from[:2] == ["", ""]
    assert stream.applied >= 2


async def test_a_last_event_id_header_given_is_the_first_last_event_id_and_an_empty_id_forgets_it(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    cleared = 'id:\nevent: todos.updated\ndata: {"id": 1, "title": "b"}\n\n'
    query, played = script([updated(1, 1, "a")], tail=cleared, hold=False)
    url = f"{script_server.url}/_stream/sse{query}"
    stream = SSEStream(url, on={"todos.updated": Todo}, headers={"last-event-id": "0"}, backoff=fast())
    assert stream.last_event_id == "0" and stream.headers == {}
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.connects >= 2)
    assert played.resumed_from[:2] == ["0", ""]  # the server reset the id: the reconnect sends none


async def test_an_empty_id_field_before_any_id_of_a_resumed_connection_forgets_the_last_event_id(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """The server resets the id as soon as the stream resumes (nothing to replay after 1): the reconnect must
    send no `Last-Event-ID`, or the server replays from the id it said to forget."""
    cleared = 'id:\nevent: todos.updated\ndata: {"id": 1, "title": "b"}\n\n'
    query, played = script([updated(1, 1, "a")], tail=cleared, hold=False)
    url = f"{script_server.url}/_stream/sse{query}"
    stream = SSEStream(url, on={"todos.updated": Todo}, headers={"Last-Event-ID": "1"}, backoff=fast())
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.connects >= 2)
    assert played.resumed_from[:2] == ["1", ""]


@pytest.mark.parametrize("charset", ["iso-8859-1", "utf-16", "ascii"])
async def test_an_event_stream_is_read_as_utf8_whatever_charset_its_content_type_names(
    script_server: LocalServer, script: ScriptFactory, charset: str
) -> None:
    """SSE is always UTF-8 (the charset is no choice of the server's): read as latin-1, `café` was stored
    as `cafÃ©`; read as UTF-16, every connect failed with a UnicodeError, retried forever."""
    event = (1, "todos.updated", json.dumps({"id": 1, "title": "café ✓"}, ensure_ascii=False))  # sent as UTF-8
    query, _ = script([event], content_type=f"text/event-stream; charset={charset}")
    ctrl = Controller()
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, backoff=fast())
    async with StreamManager(ctrl, [stream]):
        await stream.until(lambda s: s.applied == 1)
    assert titles(ctrl) == {1: "café ✓"}


async def test_an_event_stream_content_type_is_recognized_in_any_case(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """Media types ignore case: `Text/Event-Stream` was taken for another kind of reply, retried forever."""
    query, _ = script([updated(1, 1, "a")], content_type="Text/Event-Stream")
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, backoff=fast())
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.applied == 1)
    assert stream.connects == 1


async def test_a_byte_order_mark_starting_the_event_stream_is_no_part_of_the_first_field(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """The SSE standard drops one leading BOM: kept, it made the first field `\ufeffid`, so the first
    event lost its id (and, were it first, its event type)."""
    query, _ = script([updated(1, 1, "a")], head="\ufeff")
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, backoff=fast())
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.applied == 1)
    assert stream.last_event_id == "1"


async def test_an_event_id_that_is_not_ascii_is_sent_back_as_utf8(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """A header cannot carry it as text: sent as UTF-8 bytes (as browsers do), the stream reconnects and resumes."""
    named = 'id: café✓\nevent: todos.updated\ndata: {"id": 1, "title": "b"}\n\n'
    query, played = script([], tail=named, hold=False)
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, backoff=fast())
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.connects >= 2)
    assert played.resumed_from[1].encode("latin-1").decode("utf-8") == "café✓"  # the server reads latin-1


async def test_a_last_event_id_header_given_that_is_not_ascii_is_sent_as_utf8(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """Unlike other headers, refused when not ASCII: it is an event id, sent as UTF-8 like the ids the server names."""
    query, played = script([], hold=False)
    stream = SSEStream(
        f"{script_server.url}/_stream/sse{query}", on={}, headers={"Last-Event-ID": "café"}, backoff=fast()
    )
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.connects >= 1)
    assert played.resumed_from[0].encode("latin-1").decode("utf-8") == "café"
    with pytest.raises(ParamError, match="line break"):
        SSEStream(f"{script_server.url}/_stream/sse{query}", on={}, headers={"Last-Event-ID": "1\r\nX: y"})


@pytest.mark.parametrize("name", ["Last-Event-ID", "last-event-id", "LAST-EVENT-ID"])
async def test_a_last_event_id_header_given_starts_the_stream_and_the_seen_id_replaces_it(
    script_server: LocalServer, script: ScriptFactory, name: str
) -> None:
    """However the header is spelled, a reconnect sends one `Last-Event-ID`: the last id seen."""
    query, played = script([updated(1, 1, "a"), updated(2, 1, "b")], hold=False)
    stream = SSEStream(
        f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, headers={name: "1"}, backoff=fast()
    )
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.connects >= 2)
    assert played.resumed_from[:2] == ["1", "2"]
    assert stream.applied == 1  # event 2 only: the server resumed after 1, then after 2


@pytest.mark.parametrize("spelling", [str.lower, str.upper, str.title])
async def test_accept_and_cache_control_given_in_any_spelling_are_sent_once(
    script_server: LocalServer, script: ScriptFactory, spelling: Callable[[str], str]
) -> None:
    """An event stream asks for `text/event-stream`, uncached: given in another spelling than the library's
    own, the header went twice (the server may read either)."""
    query, played = script([updated(1, 1, "a")])
    given = {spelling("Accept"): "application/json", spelling("Cache-Control"): "max-age=60", "X-Feed": "1"}
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, headers=given)
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.applied == 1)
    sent = played.sent_headers[0]
    assert [value for name, value in sent if name == "accept"] == ["text/event-stream"]
    assert [value for name, value in sent if name == "cache-control"] == ["no-store"]
    assert ("x-feed", "1") in sent


@pytest.mark.parametrize("name", ["Content-Length", "transfer-encoding"])
def test_a_header_describing_a_body_is_a_param_error_not_a_connect_failing_for_ever(name: str) -> None:
    with pytest.raises(ParamError, match=f"'{name}' describes a request body"):
        SSEStream("http://127.0.0.1:1/events", on={}, headers={name: "5"})


async def test_an_id_only_frame_wakes_whoever_waits_for_that_last_event_id(script_server: LocalServer) -> None:
    key = uuid.uuid4().hex
    stream = SSEStream(f"{script_server.url}/_stream/paced?key={key}", on={}, backoff=fast())
    try:
        async with StreamManager(Controller(), [stream]), httpx.AsyncClient() as other:
            await stream.until(lambda s: s.connected)
            # Waiting before the frame is even asked for: only a wake-up at that frame ends the wait.
            moved = asyncio.ensure_future(stream.until(lambda s: s.last_event_id == "42"))
            body = {"first_id": 42, "count": 1, "rate": 1000, "entities": 1, "ids_only": True}
            burst = await other.post(f"{script_server.url}/_stream/paced/burst", params={"key": key}, json=body)
            burst.raise_for_status()
            await moved
    finally:
        PACED.pop(key, None)
    assert (stream.applied, stream.ignored) == (0, 0)


@pytest.mark.parametrize("ending", ["\n\n", ""], ids=["whole event", "endless line"])
async def test_an_event_over_max_size_ends_the_stream_and_a_larger_max_size_takes_it(
    script_server: LocalServer, script: ScriptFactory, ending: str
) -> None:
    """Held in memory until it ends (a line with no end, never): past `max_size` the stream ends; each reconnect
    would resume before that event and be sent it again."""
    big = "x" * (1 << 20)
    query, played = script([updated(1, 1, "small")], tail=f"id: 2\nevent: todos.updated\ndata: {big}{ending}")
    delays = Delays()
    url = f"{script_server.url}/_stream/sse{query}"
    stream = SSEStream(url, on={"todos.updated": Todo}, backoff=fast(delays))
    ctrl = Controller()
    with pytest.raises(BodyTooLargeError, match=r"an event exceeds max_size=1048576 .*raise max_size") as info:
        await asyncio.wait_for(stream.run(ctrl), timeout=10)
    assert isinstance(info.value, RestLayerError)
    assert (stream.connects, stream.applied, stream.last_event_id, delays.delays) == (1, 1, "1", [])
    assert played.resumed_from == [""]  # no reconnect
    assert ctrl.get(Todo, {"id": 1}) == Todo(id=1, title="small")
    if ending:  # a whole event (not JSON: it is ignored, yet read) fits a larger max_size
        roomy = SSEStream(url, on={"todos.updated": Todo}, max_size=2 << 20, backoff=fast())
        async with StreamManager(ctrl, [roomy]):
            await roomy.until(lambda s: s.last_event_id == "2")
        assert (roomy.applied, roomy.ignored) == (1, 1)


async def test_many_events_in_one_chunk_larger_than_max_size_are_all_taken(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """The limit is per event: a burst of small events arriving together is no event over it."""
    events = [updated(i, i, "t" * 50) for i in range(1, 201)]
    frames = "".join(f"id: {i}\nevent: {e}\ndata: {d}\r\n\r\n" for i, e, d in events)
    query, _ = script([], tail=frames)
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, max_size=1000)
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.applied == 200)
    assert stream.ignored == 0


@pytest.mark.parametrize("url", ["ws://127.0.0.1:1/events", "ftp://example.com/e", "/events", "http://", "nota url"])
async def test_a_url_no_event_stream_can_come_from_is_a_param_error(url: str) -> None:
    """It would fail every connect: refused at once rather than retried forever."""
    with pytest.raises(ParamError, match="http:// or https://"):
        SSEStream(url, on={})


async def decode_later(text: str) -> object:
    """Its data would come later than the message is handled: each one would be ignored."""
    return json.loads(text)


def test_a_client_that_is_no_async_httpx_client_is_a_param_error() -> None:
    """A blocking `httpx.Client` was taken, to fail every connect (retried forever, only in the log);
    a url given as `client=` raised a bare AttributeError."""
    refused = r"client= must be an httpx\.AsyncClient or None, not "
    with httpx.Client() as blocking, pytest.raises(ParamError, match=refused + r"<httpx\.Client"):
        SSEStream("http://127.0.0.1:9/e", on={}, client=blocking)  # type: ignore[arg-type]
    with pytest.raises(ParamError, match=refused + r"'http://127\.0\.0\.1:9'"):
        SSEStream("/e", on={}, client="http://127.0.0.1:9")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"decode": None}, "decode="),
        ({"backoff": {"initial": 1}}, "backoff= must be a Backoff"),  # each reconnect would fail: the stream dies
        ({"backoff": object()}, "backoff= must be a Backoff"),
        # the class, not one: its `delay` has no self (an AttributeError ended the stream at its first reconnect)
        ({"backoff": Backoff}, r"backoff= must be a Backoff \(restlayer.streams\), not the class: Backoff\(\)"),
        ({"max_size": 0}, "max_size= must be"),
        ({"max_size": 1.5}, "max_size= must be"),
        ({"max_size": -1}, "max_size= must be a number of characters"),  # what it counts (said bytes)
        ({"decode": decode_later}, "decode= must be a plain function, not an async one"),
        ({"timeout": "10"}, "timeout="),
        ({"timeout": httpx.Timeout(-1.0)}, "timeout="),
        ({"timeout": 0}, "timeout= must be a number of seconds > 0"),
        ({"timeout": httpx.Timeout(10.0, read=0)}, r"timeout= \(read\) must be a number of seconds > 0"),
        ({"timeout": float("nan")}, "timeout= must be a number of seconds > 0"),
        ({"headers": {"X-Count": 1}}, "headers="),
        ({"headers": {1: "x"}}, "headers="),
        ({"headers": {"Authorization": "Bearer é"}}, "headers=: header 'Authorization' value is not ASCII"),
        ({"headers": {"X-A": "a\r\nX-B: b"}}, "headers=: header 'X-A' value contains a line break"),
    ],
)
def test_options_every_connect_would_fail_with_are_param_errors(options: dict[str, Any], match: str) -> None:
    """Wrong kinds would fail each connect, retried forever; refused when the stream is made."""
    with pytest.raises(ParamError, match=match):
        SSEStream("http://127.0.0.1:9/events", on={}, **options)


async def test_a_timeout_given_as_seconds_bounds_the_connection_too(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    query, _ = script([updated(1, 1, "a")])
    url = f"{script_server.url}/_stream/sse{query}"
    stream = SSEStream(url, on={"todos.updated": Todo}, timeout=5.0)  # type: ignore[arg-type]  # seconds, as in httpx
    assert stream.timeout == httpx.Timeout(5.0)
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.applied == 1)


async def test_a_stream_whose_own_client_is_closed_ends_with_closed_error(script_server: LocalServer) -> None:
    """A closed client sends nothing any more: each reconnect would fail the same way, forever."""
    delays = Delays()
    async with httpx.AsyncClient() as client:
        stream = SSEStream(f"{script_server.url}/_stream/sse?key=none", on={}, client=client, backoff=fast(delays))
    with pytest.raises(ClosedError, match="its client= is closed"):
        await asyncio.wait_for(stream.run(Controller()), timeout=10)
    assert (stream.connects, delays.delays) == (0, []) and stream.closed


async def test_a_relative_url_is_read_against_the_clients_base_url(api: LocalServer) -> None:
    async with httpx.AsyncClient(base_url=api.url) as client:
        stream = SSEStream("/events", on={}, client=client)
        async with StreamManager(Controller(), [stream]):
            await stream.until(lambda s: s.connected)


async def test_a_server_that_never_answers_is_given_up_after_the_connect_timeout(
    script_server: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    """No read timeout for a quiet stream, but the reply's head must come within the connect timeout."""
    delays = Delays()
    stream = SSEStream(
        f"{script_server.url}/_stream/stalled", on={}, backoff=fast(delays), timeout=httpx.Timeout(0.2, read=None)
    )
    with caplog.at_level(logging.WARNING, logger="restlayer"):
        async with StreamManager(Controller(), [stream]):
            await stream.until(lambda s: len(delays.delays) >= 2)
    assert stream.connects == 0
    assert any("cannot connect" in r.getMessage() and "no reply within 0.2s" in r.getMessage() for r in caplog.records)


async def test_status_204_stops_the_stream(script_server: LocalServer, script: ScriptFactory) -> None:
    query, played = script([], status=204)
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={}, backoff=fast())
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.closed)
    assert played.resumed_from == [""]


async def test_closing_the_manager_leaves_no_task_behind(script_server: LocalServer, script: ScriptFactory) -> None:
    query, _ = script([updated(1, 1, "a")])
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo})
    manager = StreamManager(Controller(), [stream])
    manager.start()
    await stream.until(lambda s: s.applied == 1)
    await manager.aclose()
    assert stream.closed and not stream.connected
    assert [t for t in asyncio.all_tasks() if t.get_name().startswith("restlayer-stream")] == []


async def test_a_server_restarted_on_the_same_port_is_reconnected_and_resumed(api: LocalServer) -> None:
    ctrl = Controller()
    with LocalServer() as first:
        port = first.port
        stream = SSEStream(f"{first.url}/events", on={"todos.updated": Todo}, backoff=Backoff(initial=0.01, cap=0.1))
        manager = StreamManager(ctrl, [stream])
        manager.start()
        await stream.until(lambda s: s.connected)
        async with httpx.AsyncClient() as other:
            await other.patch(f"{first.url}/todos/1", json={"title": "before restart"})
            await stream.until(lambda s: s.applied == 1)
            resumed = stream.last_event_id
    try:
        await stream.until(lambda s: not s.connected)
        with LocalServer(port=port) as second:
            await stream.until(lambda s: s.connected)
            async with httpx.AsyncClient() as other:
                await other.patch(f"{second.url}/todos/2", json={"title": "after restart"})
            await stream.until(lambda s: s.applied == 2)
            assert second.requests.matching("GET", "/events")[0].headers["last-event-id"] == resumed
            await manager.aclose()
    finally:
        await manager.aclose()
    assert titles(ctrl) == {1: "before restart", 2: "after restart"}


class Gate:
    """A backoff sleep that waits until the test opens it (the stream stays down meanwhile)."""

    def __init__(self) -> None:
        self.waiting = asyncio.Event()
        self.open = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.waiting.set()
        await self.open.wait()


async def test_polling_pauses_while_a_covering_stream_is_up_and_resumes_while_it_is_down(
    api: LocalServer, script_server: LocalServer, script: ScriptFactory
) -> None:
    polled = todos(api).get.extend(poll_frequency=20)
    query, played = script([updated(1, 1, "a"), updated(2, 1, "b")], drop_after=1)
    gate = Gate()
    stream = SSEStream(
        f"{script_server.url}/_stream/sse{query}",
        on={"todos.updated": Todo},
        covers=[polled],
        backoff=Backoff(sleep=gate),
    )
    manager = StreamManager(streams=[stream])
    ctrl = Controller(managers=[manager])
    subscriptions = next(m for m in ctrl.managers if isinstance(m, SubscriptionManager))
    key = polled.key({"id": 1})
    async with manager:
        await stream.until(lambda s: s.applied == 1)
        async with ctrl.subscription(polled, id=1):
            assert not manager.polling(key)
            assert key not in subscriptions.polls
            await asyncio.wait_for(gate.waiting.wait(), 10)  # the script dropped the connection
            assert manager.polling(key) and key in subscriptions.polls
            value = await changed(ctrl, polled, {"id": 1}, action=_nothing)  # a poll refetched it
            assert value.title == "delectus aut autem"
            gate.open.set()
            await stream.until(lambda s: s.applied == 2)
            assert not manager.polling(key)
            assert key not in subscriptions.polls
        assert manager.polling(key) is False
    assert played.resumed_from == ["", "1"]


async def _nothing() -> None:
    """No action: the change comes by itself."""


async def test_five_thousand_events_are_all_applied_in_order_per_entity(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    count, entities = 5000, 100
    events = [updated(n, n % entities + 1, f"t{n}") for n in range(1, count + 1)]
    query, _ = script(events)
    ctrl = Controller()
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, backoff=fast())
    seen: dict[int, list[int]] = {}

    def record(todo: Any) -> None:
        if todo is not None:
            seen.setdefault(todo.id, []).append(int(todo.title[1:]))

    for pk in (1, 50):
        ctrl.watch(todos_entity(), {"id": pk}, callback=record)
    async with StreamManager(ctrl, [stream]):
        await stream.until(lambda s: s.applied == count, timeout=60)
    assert stream.ignored == 0
    last = {pk: max(n for n in range(1, count + 1) if n % entities + 1 == pk) for pk in range(1, entities + 1)}
    assert titles(ctrl) == {pk: f"t{n}" for pk, n in last.items()}
    assert set(seen) == {1, 50}
    for pk, numbers in seen.items():
        assert numbers == sorted(numbers) and numbers[-1] == last[pk]


def todos_entity() -> Any:
    """An endpoint-like reader of one Todo by id, for `watch` (no network)."""
    from restlayer import RestEndpoint

    return RestEndpoint(path="/todos/:id", schema=Todo, url_prefix="http://127.0.0.1:9")
