"""WebSocketStream against real servers on 127.0.0.1: the example API's /ws feed and scripted faults."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx
import pytest

from examples.todo_api import LocalServer
from restlayer import All, BodyTooLargeError, Controller, Entity, ParamError, RestLayerError, StatusError
from restlayer.streams import (
    Backoff,
    Message,
    SSEStream,
    Stream,
    StreamManager,
    WebSocketStream,
    parse_json_message,
)
from tests.streams._script import Script

ScriptFactory = Callable[..., tuple[str, Script]]


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


def subscribe(last_event_id: str | None) -> list[dict[str, Any]]:
    """The first message both servers expect: subscribe, resuming after the last id seen."""
    return [{"type": "subscribe", "lastEventId": last_event_id}]


class Delays:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


def ws_url(server: LocalServer, path: str) -> str:
    return server.url.replace("http://", "ws://") + path


def titles(ctrl: Controller) -> dict[int, str]:
    return {t.id: t.title for t in ctrl.get(All(Todo)) or []}


async def test_an_update_by_another_client_arrives_over_the_websocket(api: LocalServer) -> None:
    ctrl = Controller()
    on = {"todos.updated": Todo, "subscribed": lambda message, writes: None}
    stream = WebSocketStream(ws_url(api, "/ws"), on=on, on_open=subscribe, backoff=Backoff(sleep=Delays()))
    async with StreamManager(ctrl, [stream]), httpx.AsyncClient() as other:
        await stream.until(lambda s: s.applied == 1)  # the server's "subscribed": it listens now
        (await other.patch(f"{api.url}/todos/2", json={"title": "by push"})).raise_for_status()
        await stream.until(lambda s: s.applied == 2)
    assert titles(ctrl) == {2: "by push"}
    assert stream.last_event_id is not None and int(stream.last_event_id) > 0


async def test_an_abnormal_close_reconnects_and_resumes_after_the_last_id(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    events = [(i, "todos.updated", json.dumps({"id": i, "title": f"t{i}"})) for i in (1, 2, 3)]
    query, played = script(events, drop_after=2)
    delays = Delays()
    stream = WebSocketStream(
        ws_url(script_server, f"/_stream/ws{query}"),
        on={"todos.updated": Todo},
        on_open=subscribe,
        backoff=Backoff(initial=0.2, jitter=0, sleep=delays),
    )
    ctrl = Controller()
    async with StreamManager(ctrl, [stream]):
        await stream.until(lambda s: s.applied == 3)
    assert played.resumed_from == ["", "2"]
    assert delays.delays == [0.2]
    assert titles(ctrl) == {1: "t1", 2: "t2", 3: "t3"}


async def test_malformed_frames_and_unknown_types_are_logged_and_change_nothing(
    script_server: LocalServer, script: ScriptFactory, caplog: pytest.LogCaptureFixture
) -> None:
    events = [
        (1, "todos.updated", "{not json"),
        (2, "gadgets.created", json.dumps({"id": 1})),
        (3, "todos.updated", json.dumps({"id": 5, "title": "kept"})),
    ]
    query, _ = script(events)
    stream = WebSocketStream(
        ws_url(script_server, f"/_stream/ws{query}"), on={"todos.updated": Todo}, on_open=subscribe
    )
    ctrl = Controller()
    with caplog.at_level(logging.WARNING, logger="restlayer"):
        async with StreamManager(ctrl, [stream]):
            await stream.until(lambda s: s.applied + s.ignored == 3)
    assert titles(ctrl) == {5: "kept"}
    lines = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert "event '?' (id None) ignored: malformed data" in lines[0]
    assert "event 'gadgets.created' (id 2) ignored: no mapping" in lines[1]


async def test_a_frame_nested_too_deeply_is_ignored_without_dropping_the_connection(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    query, played = script([(1, "todos.updated", deep), (2, "todos.updated", json.dumps({"id": 5, "title": "kept"}))])
    stream = WebSocketStream(
        ws_url(script_server, f"/_stream/ws{query}"), on={"todos.updated": Todo}, on_open=subscribe
    )
    ctrl = Controller()
    async with StreamManager(ctrl, [stream]):
        await stream.until(lambda s: s.applied + s.ignored == 2)
    assert (stream.applied, stream.ignored) == (1, 1)
    assert titles(ctrl) == {5: "kept"}
    assert stream.connects == 1 and played.resumed_from == [""]


async def test_a_handshake_refused_with_a_client_error_ends_the_stream(script_server: LocalServer) -> None:
    """No WebSocket route there: the server answers the handshake 403; reconnecting cannot mend it."""
    stream = WebSocketStream(ws_url(script_server, "/nowhere"), on={}, backoff=Backoff(jitter=0, sleep=Delays()))
    with pytest.raises(StatusError, match="403") as info:
        await asyncio.wait_for(stream.run(Controller()), timeout=10)
    assert info.value.status == 403 and stream.closed and stream.connects == 0


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (1002, 400),
        (1003, 415),
        (1007, 400),
        (1008, 403),
        (1009, 413),  # the server's own limit: a message of this client's was too big for it (not `max_size`)
        (1010, 400),
        (4401, 401),
        (4403, 403),
        (4404, 404),
    ],
)
async def test_a_close_refusing_the_client_ends_the_stream(
    script_server: LocalServer, script: ScriptFactory, code: int, status: int
) -> None:
    """A protocol error, unsupported data, an invalid payload, a policy violation, a message too big, a
    missing extension, or 4000 + an HTTP client error: every reconnect would resend what was refused,
    and be refused the same way."""
    events = [(i, "todos.updated", json.dumps({"id": i, "title": f"t{i}"})) for i in (1, 2)]
    query, played = script(events, drop_after=1, drop_code=code)
    delays = Delays()
    stream = WebSocketStream(
        ws_url(script_server, f"/_stream/ws{query}"),
        on={"todos.updated": Todo},
        on_open=subscribe,
        backoff=Backoff(jitter=0, sleep=delays),
    )
    with pytest.raises(StatusError, match=f"closed with code {code}") as info:
        await asyncio.wait_for(stream.run(Controller()), timeout=10)
    assert info.value.status == status
    assert (stream.connects, stream.applied, delays.delays, played.resumed_from) == (1, 1, [], [""])
    assert stream.closed and not stream.connected


async def test_a_close_refusing_the_client_before_its_first_message_ends_the_stream(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """A server that accepts, checks the handshake, then closes with 4401 at once: the refusal may come
    while the client still sends its `on_open` messages (their send fails), not only while it reads."""
    query, played = script([], refuse_code=4401)

    async def after_the_close(stream: Stream) -> None:  # the first send comes once the close has arrived
        if stream.connected:
            await asyncio.to_thread(played.refused.wait, 10)

    delays = Delays()
    stream = WebSocketStream(
        ws_url(script_server, f"/_stream/ws{query}"), on={}, on_open=subscribe, backoff=Backoff(sleep=delays)
    )
    stream.add_listener(after_the_close)
    with pytest.raises(StatusError, match="closed with code 4401") as info:
        await asyncio.wait_for(stream.run(Controller()), timeout=10)
    assert (info.value.status, stream.connects, delays.delays) == (401, 1, [])


@pytest.mark.parametrize("code", [1001, 1011, 1012, 1013, 1014, 4408, 4429, 4000])
async def test_a_close_that_may_pass_or_is_the_servers_own_reconnects(
    script_server: LocalServer, script: ScriptFactory, code: int
) -> None:
    events = [(i, "todos.updated", json.dumps({"id": i, "title": f"t{i}"})) for i in (1, 2)]
    query, played = script(events, drop_after=1, drop_code=code)
    stream = WebSocketStream(
        ws_url(script_server, f"/_stream/ws{query}"),
        on={"todos.updated": Todo},
        on_open=subscribe,
        backoff=Backoff(jitter=0, sleep=Delays()),
    )
    ctrl = Controller()
    async with StreamManager(ctrl, [stream]):
        await stream.until(lambda s: s.applied == 2)
    assert played.resumed_from == ["", "1"]
    assert titles(ctrl) == {1: "t1", 2: "t2"}


async def test_a_message_over_max_size_ends_the_stream_and_a_larger_max_size_takes_it(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """Each reconnect would resume before that message and be sent it again: an error saying what to raise."""
    big = "x" * (1 << 20)  # with the frame around it, past the 1 MiB default
    events = [
        (1, "todos.updated", json.dumps({"id": 1, "title": "small"})),
        (2, "todos.updated", json.dumps({"id": 2, "title": big})),
    ]
    query, played = script(events)
    delays = Delays()
    url = ws_url(script_server, f"/_stream/ws{query}")
    stream = WebSocketStream(url, on={"todos.updated": Todo}, on_open=subscribe, backoff=Backoff(sleep=delays))
    ctrl = Controller()
    with pytest.raises(BodyTooLargeError, match=r"max_size=1048576 bytes.*raise max_size") as info:
        await asyncio.wait_for(stream.run(ctrl), timeout=10)
    assert isinstance(info.value, RestLayerError)
    assert (stream.connects, stream.applied, delays.delays, played.resumed_from) == (1, 1, [], [""])
    assert titles(ctrl) == {1: "small"}
    roomy = WebSocketStream(url, on={"todos.updated": Todo}, on_open=subscribe, max_size=4 << 20)
    async with StreamManager(ctrl, [roomy]):
        await roomy.until(lambda s: s.applied == 2)
    assert titles(ctrl) == {1: "small", 2: big}


async def test_a_server_requiring_a_subprotocol_accepts_a_stream_offering_it(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """Such a server refuses a handshake naming none of its subprotocols: `subprotocols=` offers them."""
    query, played = script([(1, "todos.updated", json.dumps({"id": 1, "title": "t1"}))], subprotocol="feed.v2")
    url = ws_url(script_server, f"/_stream/ws{query}")
    with pytest.raises(StatusError, match="403"):
        await asyncio.wait_for(WebSocketStream(url, on={}, on_open=subscribe).run(Controller()), timeout=10)
    stream = WebSocketStream(url, on={"todos.updated": Todo}, on_open=subscribe, subprotocols=["feed.v1", "feed.v2"])
    ctrl = Controller()
    async with StreamManager(ctrl, [stream]):
        await stream.until(lambda s: s.applied == 1)
    assert titles(ctrl) == {1: "t1"} and played.resumed_from == [""]


@pytest.mark.parametrize(
    ("on_open", "match"),
    [
        (lambda last: None, "on_open must return the messages to send .* not NoneType"),
        (lambda last: {"type": "subscribe"}, "on_open must return the messages to send .* not dict"),
        (lambda last: [{"type": "subscribe", "since": object()}], "on_open gave a message JSON cannot encode"),
    ],
)
async def test_an_on_open_giving_no_messages_to_send_ends_the_stream_with_a_param_error(
    api: LocalServer, on_open: Callable[[str | None], Any], match: str
) -> None:
    """Each connection would fail the same way: not retried forever, nor counted as connected."""
    delays = Delays()
    stream = WebSocketStream(ws_url(api, "/ws"), on={}, on_open=on_open, backoff=Backoff(sleep=delays))
    with pytest.raises(ParamError, match=match):
        await asyncio.wait_for(stream.run(Controller()), timeout=10)
    assert (stream.connects, delays.delays) == (0, []) and stream.closed


@pytest.mark.parametrize("offered", [None, ["feed.v1"]])
async def test_a_server_choosing_a_subprotocol_not_offered_ends_the_stream(
    script_server: LocalServer, script: ScriptFactory, offered: list[str] | None
) -> None:
    """The server answers every handshake the same: a RestLayerError naming the fix, not reconnects forever."""
    query, _ = script([], forced_subprotocol="feed.v2")
    delays = Delays()
    stream = WebSocketStream(
        ws_url(script_server, f"/_stream/ws{query}"), on={}, subprotocols=offered, backoff=Backoff(sleep=delays)
    )
    with pytest.raises(RestLayerError, match=r"cannot be agreed to .* offer the one it speaks with subprotocols="):
        await asyncio.wait_for(stream.run(Controller()), timeout=10)
    assert (stream.connects, delays.delays) == (0, []) and stream.closed


def on_open_raising(last_event_id: str | None) -> list[object]:
    raise KeyError("token")


def on_open_giving_messages_that_raise(last_event_id: str | None) -> Iterator[object]:
    yield {"type": "subscribe"}
    raise KeyError("token")


@pytest.mark.parametrize("broken", [on_open_raising, on_open_giving_messages_that_raise])
async def test_an_on_open_that_raises_ends_the_stream_with_its_error_as_the_cause(
    api: LocalServer, caplog: pytest.LogCaptureFixture, broken: Callable[[str | None], Iterable[object]]
) -> None:
    """It would raise again at every reconnect: the stream ends (the manager logs it) instead of retrying forever."""

    delays = Delays()
    stream = WebSocketStream(ws_url(api, "/ws"), on={}, on_open=broken, backoff=Backoff(sleep=delays))
    with pytest.raises(RestLayerError, match="on_open raised KeyError: 'token'; not reconnecting") as info:
        await asyncio.wait_for(stream.run(Controller()), timeout=10)
    assert isinstance(info.value.__cause__, KeyError)
    assert (stream.connects, delays.delays) == (0, []) and stream.closed
    managed = WebSocketStream(ws_url(api, "/ws"), on={}, on_open=broken, backoff=Backoff(sleep=delays))
    with caplog.at_level(logging.ERROR, logger="restlayer"):
        async with StreamManager(Controller(), [managed]):
            await managed.until(lambda s: s.closed)
    assert delays.delays == []
    assert any("on_open raised KeyError" in str(r.exc_info and r.exc_info[1]) for r in caplog.records)


async def test_a_handshake_failing_with_a_server_error_is_retried(script_server: LocalServer) -> None:
    delays = Delays()
    stream = WebSocketStream(  # an unknown script key: the handler fails before accepting (500)
        ws_url(script_server, "/_stream/ws?key=none"), on={}, backoff=Backoff(jitter=0, sleep=delays)
    )
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: len(delays.delays) >= 2)
        assert not stream.closed
    assert stream.connects == 0


async def test_a_parse_function_returning_no_message_has_its_frames_ignored(
    script_server: LocalServer, script: ScriptFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A `parse=` giving something else than a Message: each frame is logged and ignored, the connection stays."""
    query, played = script([(1, "todos.updated", json.dumps({"id": 1, "title": "a"}))])
    stream = WebSocketStream(
        ws_url(script_server, f"/_stream/ws{query}"),
        on={"todos.updated": Todo},
        on_open=subscribe,
        parse=json.loads,  # a dict, not a Message
    )
    ctrl = Controller()
    with caplog.at_level(logging.WARNING, logger="restlayer"):
        async with StreamManager(ctrl, [stream]):
            await stream.until(lambda s: s.ignored == 1)
    assert (stream.applied, stream.connects, played.resumed_from) == (0, 1, [""])
    assert any("parse= returned dict, not a Message" in r.getMessage() for r in caplog.records)
    assert titles(ctrl) == {}


def test_parse_json_message_reads_type_data_and_id() -> None:
    assert parse_json_message('{"type": "a", "data": [1], "id": 7}') == Message("a", [1], "7")
    assert parse_json_message('{"event": "b"}') == Message("b", None, None)
    with pytest.raises(ValueError, match="no event type"):
        parse_json_message('{"data": 1}')
    with pytest.raises(ValueError, match="JSON object"):
        parse_json_message("[1]")


def test_parse_json_message_takes_the_event_when_type_is_null() -> None:
    """`"type": null` is a type left unset: the frame's `event` names it (it was refused as having none)."""
    assert parse_json_message('{"type": null, "event": "x", "data": 1}') == Message("x", 1, None)
    assert parse_json_message('{"type": "a", "event": "x"}') == Message("a", None, None)  # `type` first
    with pytest.raises(ValueError, match="no event type"):
        parse_json_message('{"type": null, "event": null}')


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:1/ws", "https://example.com/ws", "127.0.0.1:1/ws", "ws://", "nota url"]
)
def test_a_url_no_websocket_can_open_is_a_param_error(url: str) -> None:
    """It would fail every connect: refused at once rather than retried forever."""
    with pytest.raises(ParamError, match="ws:// or wss://"):
        WebSocketStream(url, on={})


@pytest.mark.parametrize("kind", [SSEStream, WebSocketStream])
@pytest.mark.parametrize("address", ["[::1", "127.0.0.1:99999", "127.0.0.1:abc", "127.0.0.1:-1"])
def test_a_url_whose_host_or_port_cannot_be_read_is_a_param_error(kind: type[Stream], address: str) -> None:
    """An unclosed IPv6 bracket raised a bare ValueError; a port no socket has was taken, to fail every connect."""
    scheme = "ws" if kind is WebSocketStream else "http"
    with pytest.raises(ParamError, match=f"not '{re.escape(scheme)}://{re.escape(address)}/e'"):
        kind(f"{scheme}://{address}/e", on={})


async def parse_later(frame: str | bytes) -> Message:
    return parse_json_message(frame)


async def subscribe_later(last_event_id: str | None) -> list[dict[str, Any]]:
    return subscribe(last_event_id)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"parse": None}, "parse="),
        ({"on_open": [{"type": "subscribe"}]}, "on_open="),
        ({"parse": parse_later}, "parse= must be a plain function, not an async one"),
        ({"on_open": subscribe_later}, "on_open= must be a plain function, not an async one"),
        ({"open_timeout": "10"}, "open_timeout="),
        ({"open_timeout": -1}, "open_timeout="),
        ({"open_timeout": 0}, "open_timeout= must be a number of seconds > 0"),
        ({"max_size": 0}, "max_size="),
        ({"max_size": 1.5}, "max_size="),
        ({"subprotocols": "feed.v1"}, "subprotocols= must be a list of names"),
        ({"subprotocols": ["feed v1"]}, "subprotocols= names must be HTTP tokens"),
        ({"subprotocols": [""]}, "subprotocols= names must be HTTP tokens"),
        ({"headers": {"Authorization": None}}, "headers="),
        ({"headers": "Authorization: x"}, "headers= must map names to values"),  # was a bare ValueError
        ({"headers": [("Authorization", "x")]}, "headers= must map names to values"),
        ({"headers": {"X-A": "a\r\nX-B: b"}}, "headers=: header 'X-A' value contains a line break"),
        ({"headers": {"Authorization": "Bearer é"}}, "headers=: header 'Authorization' value is not ASCII"),
        # the handshake's own: sent twice, the server refuses the handshake (retried forever)
        ({"headers": {"sec-websocket-protocol": "feed.v1"}}, "'sec-websocket-protocol' is the WebSocket handshake's"),
        ({"headers": {"Host": "other"}}, "headers=: 'Host' is the WebSocket handshake's own"),
        ({"headers": {"Sec-WebSocket-Key": "abc"}}, "'Sec-WebSocket-Key' is the WebSocket handshake's own"),
    ],
)
def test_options_every_connect_would_fail_with_are_param_errors(options: dict[str, Any], match: str) -> None:
    """Wrong kinds would fail each connect, retried forever; refused when the stream is made."""
    with pytest.raises(ParamError, match=match):
        WebSocketStream("ws://127.0.0.1:1/ws", on={}, **options)


def test_bad_stream_options_raise_param_error() -> None:
    with pytest.raises(ParamError, match="needs a url"):
        WebSocketStream("", on={})
    with pytest.raises(ParamError, match="on= must be"):
        WebSocketStream("ws://127.0.0.1:1/", on=42)  # type: ignore[arg-type]
    with pytest.raises(ParamError, match="jitter"):
        Backoff(jitter=3)
    for name in ("initial", "factor", "cap", "jitter"):  # a NaN wait would be no wait: a tight reconnect loop
        with pytest.raises(ParamError, match=f"Backoff: {name} must be a non-negative number"):
            Backoff(**{name: float("nan")})  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["initial", "factor", "cap"])
def test_a_backoff_of_infinite_seconds_is_a_param_error(name: str) -> None:
    """An infinite wait would never reconnect (the stream or subscription silently stays down)."""
    with pytest.raises(ParamError, match=f"Backoff: {name} must be a finite"):
        Backoff(**{name: float("inf")})  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", [SSEStream, WebSocketStream])
@pytest.mark.parametrize("name", [123, b"feed", ["feed"]])
def test_a_stream_name_that_is_no_str_is_a_param_error(kind: type[Stream], name: object) -> None:
    """The name is what logs, task names and errors call the stream by: `name=123` was kept as an int."""
    url = "ws://127.0.0.1:1/ws" if kind is WebSocketStream else "http://127.0.0.1:1/events"
    with pytest.raises(ParamError, match=f"name= must be a str or None, not {re.escape(repr(name))}"):
        kind(url, on={}, name=name)  # type: ignore[arg-type]
    assert kind(url, on={}, name=None).name == url
