"""StreamManager: running, removing and closing streams; polling of keys no connected stream covers."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import re
import weakref
from collections.abc import Callable

import pytest

from examples.todo_api import LocalServer
from restlayer import (
    ClosedError,
    Controller,
    Entity,
    ParamError,
    RestLayerError,
    StreamTimeoutError,
    SubscriptionManager,
    resource,
    sync,
)
from restlayer.graphql import GQLEndpoint
from restlayer.streams import Message, SSEStream, StreamManager, WebSocketStream, Writes
from tests.streams._script import Script

ScriptFactory = Callable[..., tuple[str, Script]]


class Todo(Entity):
    id: int = 0
    title: str = ""


def event(n: int) -> tuple[int, str, str]:
    return (n, "todos.updated", json.dumps({"id": n, "title": f"t{n}"}))


def ws_of(server: LocalServer, query: str) -> WebSocketStream:
    """A WebSocket stream of the script server's scripted events, resuming after the last event id."""
    return WebSocketStream(
        f"{server.url.replace('http://', 'ws://')}/_stream/ws{query}",
        on={"todos.updated": Todo},
        on_open=lambda last: [{"lastEventId": last}],
    )


def sse_and_ws(server: LocalServer, query: str) -> tuple[SSEStream, WebSocketStream]:
    """One SSE and one WebSocket stream of the same scripted events."""
    return SSEStream(f"{server.url}/_stream/sse{query}", on={"todos.updated": Todo}), ws_of(server, query)


def test_only_streams_are_managed_and_only_once() -> None:
    manager = StreamManager(Controller())
    with pytest.raises(RestLayerError, match="needs a Stream"):
        manager.add("http://127.0.0.1:9/events")  # type: ignore[arg-type]
    stream = manager.add(SSEStream("http://127.0.0.1:9/events", on={}))
    with pytest.raises(RestLayerError, match="already managed"):
        manager.add(stream)


async def test_starting_without_a_controller_is_refused() -> None:
    with pytest.raises(RestLayerError, match="no controller"):
        StreamManager().start()


def test_starting_outside_an_event_loop_is_a_restlayer_error() -> None:
    stream = SSEStream("http://127.0.0.1:9/events", on={})
    manager = StreamManager(Controller(), [stream])
    with pytest.raises(RestLayerError, match="running event loop"):
        manager.start()
    assert stream.connects == 0 and not stream.closed


async def test_a_blocking_controller_or_another_object_is_a_param_error_not_an_attribute_error() -> None:
    """Streams write into the store from tasks of the running loop: a `restlayer.sync.Controller` cannot serve."""
    stream = SSEStream("http://127.0.0.1:9/events", on={})
    with sync.Controller() as blocking:
        with pytest.raises(ParamError, match=r"needs a restlayer\.Controller, not Controller \(a restlayer\.sync"):
            StreamManager(blocking, [stream])  # type: ignore[arg-type]
        with pytest.raises(ParamError, match=r"run needs a restlayer\.Controller, not Controller \(a restlayer\.sync"):
            await stream.run(blocking)  # type: ignore[arg-type]
        sub = GQLEndpoint("http://127.0.0.1:9/graphql").subscription("subscription { x }")
        with pytest.raises(ParamError, match=r"need a restlayer\.Controller \(async\) or None, not Controller"):
            sub.events(blocking)  # type: ignore[call-overload]
    with pytest.raises(ParamError, match=r"needs a restlayer\.Controller, not int"):
        StreamManager(42, [stream])  # type: ignore[arg-type]
    assert stream.connects == 0 and not stream.closed


def test_a_manager_serves_one_controller() -> None:
    manager = StreamManager(Controller())
    with pytest.raises(RestLayerError, match="another controller"):
        Controller(managers=[manager])


def test_covers_takes_endpoints_or_a_key_test() -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix="http://127.0.0.1:9")
    by_endpoint = SSEStream("http://127.0.0.1:9/e", on={}, covers=todos.get)
    by_function = SSEStream("http://127.0.0.1:9/e", on={}, covers=lambda key: key.endswith("/todos/1"))
    key = todos.get.key({"id": 1})
    assert by_endpoint.covers(key) and by_function.covers(key)
    assert not by_endpoint.covers(todos.get_list.key())
    with pytest.raises(ParamError, match="covers="):
        SSEStream("http://127.0.0.1:9/e", on={}, covers=[42])  # type: ignore[list-item]


@pytest.mark.parametrize("covers", [42, "todos", b"todos"])
def test_covers_of_another_kind_is_a_param_error(covers: object) -> None:
    """`covers=42` raised a bare TypeError (not iterable); a str was taken letter by letter."""
    with pytest.raises(ParamError, match=f"covers= takes endpoints or a key predicate, not {re.escape(repr(covers))}"):
        SSEStream("http://127.0.0.1:9/e", on={}, covers=covers)  # type: ignore[arg-type]


def test_streams_given_as_something_else_than_streams_is_a_param_error() -> None:
    """`StreamManager(ctrl, stream)` (one stream, not a list) or a number raised a bare TypeError."""
    with pytest.raises(ParamError, match="streams= must be a list of streams, not 42"):
        StreamManager(Controller(), 42)  # type: ignore[arg-type]
    with pytest.raises(ParamError, match="streams= must be a list of streams, not SSEStream"):
        StreamManager(Controller(), SSEStream("http://127.0.0.1:9/e", on={}))  # type: ignore[arg-type]


async def test_a_stream_added_while_running_starts_and_remove_stops_it(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    query, _ = script([event(1)])
    ctrl = Controller()
    async with StreamManager(ctrl) as manager:
        stream = manager.add(SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}))
        await stream.until(lambda s: s.applied == 1)
        await manager.remove(stream)
        assert stream.closed and manager.streams == []
    assert ctrl.get(Todo, {"id": 1}) == Todo(id=1, title="t1")


async def test_a_stream_runs_in_one_manager_at_a_time(script_server: LocalServer, script: ScriptFactory) -> None:
    """Two connections would share one stream's state (connected, counters, last event id); and a
    manager must not pause its polling for a stream that pushes into another controller."""
    query, played = script([event(1)])
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=script_server.url, poll_frequency=10_000)
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo}, covers=[todos.get])
    first = Controller()
    other = StreamManager(streams=[stream])
    second = Controller(managers=[other])
    async with StreamManager(first, [stream]) as manager:
        await stream.until(lambda s: s.applied == 1)
        with pytest.raises(RestLayerError, match="runs in another StreamManager"):
            other.start()
        async with StreamManager(second) as third:
            with pytest.raises(RestLayerError, match="runs in another StreamManager"):
                third.add(stream)
            assert third.streams == []
        with pytest.raises(RestLayerError, match="already running"):
            await stream.run(second)
        await second.subscribe(todos.get, id=1)
        assert other.polling(todos.get.key({"id": 1}))  # nothing pushes into `second`: it polls
        await second.unsubscribe(todos.get, id=1)
        await manager.remove(stream)
        async with other:  # free now: the second connection resumes the first
            await stream.until(lambda s: s.connects == 2)
    assert played.resumed_from == ["", "1"] and stream.applied == 1
    second.close()


async def test_a_stream_run_directly_is_refused_by_a_manager_up_front(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """`start()` and `add()` refuse a stream `await stream.run(ctrl)` runs already (as one another manager
    runs), instead of starting a task that fails with "already running" only in the log."""
    query, _ = script([event(1)])
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo})
    ctrl = Controller()
    running = asyncio.ensure_future(stream.run(ctrl))
    try:
        await stream.until(lambda s: s.applied == 1)
        manager = StreamManager(ctrl, [stream])
        with pytest.raises(RestLayerError, match=f"stream {re.escape(stream.name)} is already running"):
            manager.start()
        async with StreamManager(ctrl) as other:
            with pytest.raises(RestLayerError, match=f"stream {re.escape(stream.name)} is already running"):
                other.add(stream)
            assert other.streams == []
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    async with StreamManager(ctrl, [stream]):  # free again: a manager runs it
        await stream.until(lambda s: s.connects == 2)
    ctrl.close()


async def test_a_removed_stream_keeps_nothing_of_its_manager(script_server: LocalServer, script: ScriptFactory) -> None:
    query, _ = script([event(1)])
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo})
    ctrl = Controller()
    manager = StreamManager(streams=[stream])
    Controller(managers=[manager])
    async with manager:
        await stream.until(lambda s: s.applied == 1)
        await manager.remove(stream)
    gone = weakref.ref(manager)
    del manager
    gc.collect()
    assert gone() is None  # the stream, reused elsewhere, no longer tells (nor keeps alive) its old manager
    async with StreamManager(ctrl, [stream]):
        await stream.until(lambda s: s.connects == 2)


@pytest.mark.parametrize("closing", ["aclose", "controller close"])
async def test_a_stream_kept_after_its_manager_closed_keeps_nothing_of_it(
    script_server: LocalServer, script: ScriptFactory, closing: str
) -> None:
    query, _ = script([event(1)])
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo})
    manager = StreamManager(streams=[stream])
    ctrl = Controller(managers=[manager])
    async with manager:
        await stream.until(lambda s: s.applied == 1)
        if closing == "controller close":
            ctrl.close()
    gone = weakref.ref(manager), weakref.ref(ctrl)
    del manager, ctrl
    gc.collect()
    assert [ref() for ref in gone] == [None, None]  # the stream, kept, holds neither its old manager nor controller
    async with StreamManager(Controller(), [stream]):
        await stream.until(lambda s: s.connects == 2)


async def test_a_manager_started_again_after_aclose_pauses_the_polling_its_streams_cover_again(
    api: LocalServer,
) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, poll_frequency=60_000)
    key = todos.get.key({"id": 1})
    stream = SSEStream(f"{api.url}/events", on={"todos.updated": Todo}, covers=todos.get)
    manager = StreamManager(streams=[stream])
    ctrl = Controller(managers=[manager, SubscriptionManager()])
    await ctrl.subscribe(todos.get, {"id": 1})
    connected = asyncio.Event()
    stream.add_listener(lambda s: connected.set() if s.connected else None)  # told after the manager
    for _ in range(2):
        connected.clear()
        assert manager.polling(key)  # no stream runs
        async with manager:
            await asyncio.wait_for(connected.wait(), 10)
            assert not manager.polling(key)  # the connected stream covers it
    await ctrl.unsubscribe(todos.get, {"id": 1})
    ctrl.close()


async def test_controller_close_cancels_the_streams(script_server: LocalServer, script: ScriptFactory) -> None:
    query, _ = script([event(1)])
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo})
    manager = StreamManager(streams=[stream])
    ctrl = Controller(managers=[manager])
    manager.start()
    await stream.until(lambda s: s.applied == 1)
    ctrl.close()
    await stream.until(lambda s: s.closed)
    assert not stream.connected


async def test_closing_the_controller_stops_the_streams_of_a_manager_it_was_not_given(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    query, _ = script([event(1)])  # then held open
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo})
    ctrl = Controller()
    async with StreamManager(ctrl, [stream]) as manager:
        await stream.until(lambda s: s.applied == 1)
        ctrl.close()  # the manager runs beside the controller: the close still ends its connections
        await stream.until(lambda s: s.closed)  # so nothing pushed later reaches the closed store
        assert not stream.connected
        with pytest.raises(ClosedError):
            manager.start()
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


async def test_a_stream_run_without_a_manager_ends_when_its_controller_closes(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    query, _ = script([event(1)])  # then held open
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo})
    ctrl = Controller()
    running = asyncio.ensure_future(stream.run(ctrl))
    await stream.until(lambda s: s.applied == 1)
    ctrl.close()
    await asyncio.wait_for(running, timeout=10)  # returns: the closed store gets nothing more
    assert stream.closed and not stream.connected
    with pytest.raises(ClosedError):
        await stream.run(ctrl)  # a closed controller: no connection at all
    assert stream.connects == 1


async def test_messages_already_received_when_the_controller_closes_are_not_stored(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    both = "".join(
        f"id: {n}\nevent: todos.updated\ndata: {json.dumps({'id': n, 'title': f't{n}'})}\n\n" for n in (1, 2)
    )
    query, _ = script([], tail=both)  # one chunk: the second event is read without waiting for the network
    ctrl = Controller()

    def close_on_first(message: Message, writes: Writes) -> None:
        writes.set(Todo, message.data)
        ctrl.close()

    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": close_on_first})
    await asyncio.wait_for(stream.run(ctrl), timeout=10)
    assert ctrl.get(Todo, {"id": 1}) == Todo(id=1, title="t1")
    assert ctrl.get(Todo, {"id": 2}) is None and stream.applied == 1


async def test_a_manager_of_a_closed_controller_starts_no_stream(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    query, played = script([event(1)])
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo})
    ctrl = Controller()
    ctrl.close()
    with pytest.raises(ClosedError):
        async with StreamManager(ctrl, [stream]):
            pass
    assert played.resumed_from == [] and stream.connects == 0
    assert ctrl.get(Todo, {"id": 1}) is None


async def test_aclose_after_controller_close_waits_until_the_streams_are_closed(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    query, _ = script([event(1)])
    sse, ws = sse_and_ws(script_server, query)
    manager = StreamManager(streams=[sse, ws])
    ctrl = Controller(managers=[manager])
    async with manager:
        await sse.until(lambda s: s.applied == 1)
        await ws.until(lambda s: s.applied == 1)
        ctrl.close()  # cancels the streams without waiting for them
        await manager.aclose()
        assert sse.closed and ws.closed
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


async def test_a_second_aclose_while_one_is_under_way_returns_only_once_the_streams_are_closed(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """Two owners closing one manager at once: the second returned at once, its streams still running."""
    query, _ = script([event(1)])
    sse, ws = sse_and_ws(script_server, query)
    manager = StreamManager(Controller(), [sse, ws])
    manager.start()
    await sse.until(lambda s: s.applied == 1)
    await ws.until(lambda s: s.applied == 1)
    first = asyncio.ensure_future(manager.aclose())
    await asyncio.sleep(0)  # the first aclose has cancelled the streams and waits for them
    await manager.aclose()
    assert not sse.running and not ws.running and sse.closed and ws.closed
    await asyncio.wait_for(first, 10)
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


async def test_start_while_its_own_aclose_is_under_way_says_so(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """The stream was said to run "in another StreamManager": it is this one's, still closing."""
    query, _ = script([event(1)])
    sse = SSEStream(f"{script_server.url}/_stream/sse{query}", on={"todos.updated": Todo})
    manager = StreamManager(Controller(), [sse])
    manager.start()
    await sse.until(lambda s: s.applied == 1)
    closing = asyncio.ensure_future(manager.aclose())
    await asyncio.sleep(0)  # the aclose has cancelled the stream and waits for it
    with pytest.raises(RestLayerError, match=r"still closing \(this StreamManager's aclose\(\) is under way\)"):
        manager.start()
    await asyncio.wait_for(closing, 10)
    manager.start()  # once closed, it starts anew
    await sse.until(lambda s: s.connects == 2)
    await manager.aclose()


async def test_closing_the_controller_under_a_covered_subscription_logs_no_error(
    api: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, poll_frequency=10_000)
    stream = SSEStream(f"{api.url}/events", on={}, covers=[todos.get])
    manager = StreamManager(streams=[stream])
    ctrl = Controller(managers=[manager])
    with caplog.at_level(logging.WARNING, logger="restlayer"):
        async with manager:
            await stream.until(lambda s: s.connected)
            await ctrl.subscribe(todos.get, id=1)
            assert not manager.polling(todos.get.key({"id": 1}))  # paused: the stream covers it
            ctrl.close()
        assert stream.closed
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_keys_of_a_stream_that_is_down_are_polled(api: LocalServer) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, poll_frequency=10_000)
    stream = SSEStream(f"{api.url}/events", on={}, covers=[todos.get])  # never started: down
    manager = StreamManager(streams=[stream])
    ctrl = Controller(managers=[manager])
    polls = next(m for m in ctrl.managers if isinstance(m, SubscriptionManager)).polls
    covered, other = todos.get.key({"id": 1}), todos.get_list.key()
    await ctrl.subscribe(todos.get, id=1)  # the stream never connected: polling it is
    await ctrl.subscribe(todos.get_list)  # not covered: passed straight on
    assert manager.polling(covered) and covered in polls and other in polls
    await ctrl.unsubscribe(todos.get, id=1)
    await ctrl.unsubscribe(todos.get_list)
    assert not manager.polling(covered) and covered not in polls and other not in polls
    ctrl.close()


async def test_until_raises_stream_timeout_error_naming_the_state() -> None:
    stream = SSEStream("http://127.0.0.1:9/events", on={})  # never started
    with pytest.raises(StreamTimeoutError, match="connected=False, applied=0") as info:
        await stream.until(lambda s: s.connected, timeout=0.01)
    assert isinstance(info.value, TimeoutError)


@pytest.mark.parametrize("timeout", [0, -1])
async def test_until_a_state_that_holds_returns_even_with_no_time_to_wait(timeout: float) -> None:
    stream = SSEStream("http://127.0.0.1:9/events", on={})  # never started
    await stream.until(lambda s: not s.connected, timeout=timeout)  # holds now: no timeout to report
    with pytest.raises(StreamTimeoutError):
        await stream.until(lambda s: s.connected, timeout=timeout)


@pytest.mark.parametrize("timeout", ["5", float("nan"), True, [1]])
async def test_until_with_a_timeout_that_is_no_number_of_seconds_is_a_param_error(timeout: object) -> None:
    """Not a TypeError from inside asyncio (and a coroutine never awaited), nor, for NaN, a wait without end."""
    stream = SSEStream("http://127.0.0.1:9/events", on={})  # never started
    for predicate in (lambda s: s.connected, lambda s: not s.connected):
        with pytest.raises(ParamError, match=r"until: timeout must be a number of seconds"):
            await asyncio.wait_for(stream.until(predicate, timeout=timeout), 10)  # type: ignore[arg-type]


async def test_until_on_a_stream_that_has_ended_raises_at_once_not_after_its_timeout(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """An ended stream changes no more: waiting out the timeout would only delay the failure."""
    query, _ = script([], refuse_code=4403)
    stream = WebSocketStream(
        f"{script_server.url.replace('http://', 'ws://')}/_stream/ws{query}", on={"todos.updated": Todo}
    )
    ctrl = Controller()
    running = asyncio.ensure_future(stream.run(ctrl))
    with pytest.raises(StreamTimeoutError, match=r"ended, not in the awaited state \(connected=False, applied=0"):
        await asyncio.wait_for(stream.until(lambda s: s.applied == 1, timeout=3600), timeout=10)  # ends meanwhile
    with pytest.raises(RestLayerError, match="closed with code 4403"):
        await running
    with pytest.raises(StreamTimeoutError, match="ended"):
        await asyncio.wait_for(stream.until(lambda s: s.applied == 1, timeout=3600), timeout=10)  # ended before
    await stream.until(lambda s: s.closed and s.connects == 1, timeout=0)  # a state that holds still returns
    async with StreamManager(ctrl, [stream]):  # launched again: not ended, so waited for
        await stream.until(lambda s: s.connects == 2)
    ctrl.close()


async def test_start_again_restarts_a_stream_that_was_refused_and_leaves_no_task(
    script_server: LocalServer, script: ScriptFactory
) -> None:
    """Refused (say, an expired token): once mended, `start()` connects it again, as it connects every stream."""
    query, played = script([event(1)], refuse_code=4401)
    stream = ws_of(script_server, query)
    ctrl = Controller()
    async with StreamManager(ctrl, [stream]) as manager:
        await stream.until(lambda s: s.closed and s.connects == 1)
        played.refuse_code = None  # mended on the server's side
        manager.start()
        await stream.until(lambda s: s.applied == 1)
        manager.start()  # running: nothing more to start
        assert stream.connects == 2 and manager.streams == [stream]
    assert ctrl.get(Todo, {"id": 1}) == Todo(id=1, title="t1")
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    ctrl.close()
