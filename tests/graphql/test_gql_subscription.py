"""GraphQL subscriptions over WebSocket (graphql-transport-ws) against the example API's /graphql."""

from __future__ import annotations

import asyncio
import datetime
import gc
from collections.abc import AsyncIterator

import httpx
import pytest

from examples.todo_api import LocalServer
from restlayer import Controller, Entity, NetworkError, ParamError, StatusError
from restlayer.graphql import GQLEndpoint, GQLNetworkError, GQLSubscription
from restlayer.rest import aclose
from restlayer.streams import Backoff

TODO_CHANGED = "subscription changed($id: ID) { todoChanged(id: $id) { id title completed userId } }"


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


@pytest.fixture(autouse=True)
async def _close_shared_client() -> AsyncIterator[None]:
    yield
    await aclose()


def test_variables_json_cannot_encode_are_refused_before_any_socket_opens() -> None:
    gql = GQLEndpoint("http://127.0.0.1:9/graphql")  # nothing listens: refused before connecting
    changed = gql.subscription(TODO_CHANGED, {"todoChanged": Todo})
    with pytest.raises(ParamError, match=r"variables\['id'\]: datetime is not JSON-serializable"):
        changed.events(Controller(), {"id": datetime.datetime(2024, 1, 2)})
    with pytest.raises(ParamError, match=r"variables\['id'\]: nan is not valid JSON"):
        changed.events(Controller(), {"id": float("nan")})  # else sent as `NaN`, which no server can read


async def test_subscription_events_are_stored_like_query_results(api: LocalServer) -> None:
    gql = GQLEndpoint(f"{api.url}/graphql")
    changed = gql.subscription(TODO_CHANGED, {"todoChanged": Todo})
    ctrl = Controller()
    seen: list[str] = []
    async with changed.events(ctrl, {"id": "1"}) as events, httpx.AsyncClient() as other:
        async for data in events:
            seen.append(data["todoChanged"].title)
            if len(seen) == 1:  # the current state: the server listens from now on
                (await other.patch(f"{api.url}/todos/1", json={"title": "by subscription"})).raise_for_status()
            else:
                break
    assert seen == ["delectus aut autem", "by subscription"]
    stored = ctrl.get(Todo, {"id": 1})
    assert stored is not None and stored.title == "by subscription"
    cached = ctrl.cache(changed.endpoint, {"id": "1"})
    assert cached is not None and cached["todoChanged"] is stored


async def test_leaving_the_loop_early_without_aclose_closes_the_socket_and_logs_nothing(api: LocalServer) -> None:
    """A `return` out of `async for` leaves the generator to the interpreter, which finalizes it in a task
    of its own: that task must close the socket, and nothing may be reported to the loop."""
    changed = GQLEndpoint(f"{api.url}/graphql").subscription(TODO_CHANGED, {"todoChanged": Todo})
    ctrl = Controller()
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _, context: reported.append(context))

    async def first_event() -> str:
        async for data in changed.events(ctrl, {"id": "1"}):
            return str(data["todoChanged"].title)
        raise AssertionError("the subscription ended without an event")

    try:
        for _ in range(3):
            assert await first_event() == "delectus aut autem"
        gc.collect()
        for _ in range(10):  # a finalizing task may start others (the socket's own closing)
            finalizing = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            if not finalizing:
                break
            await asyncio.wait_for(asyncio.gather(*finalizing, return_exceptions=True), 10)
    finally:
        loop.set_exception_handler(None)
        ctrl.close()
    assert reported == []
    assert [task for task in asyncio.all_tasks() if task is not asyncio.current_task()] == []


class Restart:
    """The reconnect backoff's sleep: records each wait; the first waits until the old server has
    stopped (so the next connect is refused), the second starts a new server on the same port."""

    def __init__(self, old: LocalServer) -> None:
        self.old = old
        self.stopped = asyncio.get_running_loop().create_future()
        self.new: LocalServer | None = None
        self.delays: list[float] = []

    async def stop_old(self) -> None:
        await asyncio.to_thread(self.old.stop)  # uvicorn closes the socket: 1012, service restart
        self.stopped.set_result(None)

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        if len(self.delays) == 1:
            await self.stopped
        elif len(self.delays) == 2:
            self.new = await asyncio.to_thread(LocalServer(port=self.old.port).start)


async def test_a_server_restarted_on_the_same_port_is_reconnected_and_the_subscription_resumes() -> None:
    ctrl = Controller()
    first = LocalServer().start()
    restart = Restart(first)
    try:
        gql = GQLEndpoint(f"{first.url}/graphql")
        backoff = Backoff(initial=0.1, factor=2, jitter=0, sleep=restart)
        changed = gql.subscription(TODO_CHANGED, {"todoChanged": Todo}, backoff=backoff)
        events = changed.events(ctrl, {"id": "1"})
        async with events, httpx.AsyncClient() as other:
            stream = aiter(events)
            assert (await anext(stream))["todoChanged"].title == "delectus aut autem"  # the state as it is
            (await other.patch(f"{first.url}/todos/1", json={"title": "before restart"})).raise_for_status()
            assert (await anext(stream))["todoChanged"].title == "before restart"
            await restart.stop_old()
            # the new server's todo 1, as it is, by the subscription made again on the new connection
            again = await asyncio.wait_for(anext(stream), 30)
            assert again["todoChanged"].title == "delectus aut autem"
            assert restart.new is not None
            (await other.patch(f"{restart.new.url}/todos/1", json={"title": "after restart"})).raise_for_status()
            assert (await asyncio.wait_for(anext(stream), 30))["todoChanged"].title == "after restart"
    finally:
        await asyncio.to_thread(first.stop)
        if restart.new is not None:
            await asyncio.to_thread(restart.new.stop)
    assert restart.delays == [0.1, 0.2]  # lost, then refused while the server was down
    assert events.connects == 2
    stored = ctrl.get(Todo, {"id": 1})
    assert stored is not None and stored.title == "after restart"


async def test_an_invalid_subscription_raises_gql_network_error(api: LocalServer) -> None:
    gql = GQLEndpoint(f"{api.url}/graphql")
    bad = gql.subscription("subscription { nosuchField { id } }")
    with pytest.raises(GQLNetworkError, match="nosuchField"):
        async with bad.events() as events:
            async for _ in events:
                pass


async def test_no_server_raises_network_error() -> None:
    gql = GQLEndpoint("http://127.0.0.1:9/graphql")
    with pytest.raises(NetworkError, match="cannot open the subscription socket"):
        async for _ in gql.subscription(TODO_CHANGED).events():
            pass


async def test_a_handshake_refused_with_a_client_error_raises_status_error_with_that_status(api: LocalServer) -> None:
    """No WebSocket route there: the server answers the handshake 403 (a reply, not a transport failure)."""
    gql = GQLEndpoint(f"{api.url}/graphql")
    refused = gql.subscription(TODO_CHANGED, ws_url=api.url.replace("http://", "ws://") + "/nowhere")
    with pytest.raises(StatusError, match="403") as info:
        async for _ in refused.events():
            pass
    assert info.value.status == 403


@pytest.mark.parametrize("open_timeout", ["10", -1, True, 0, float("nan")])
def test_an_open_timeout_that_is_no_number_of_seconds_is_a_param_error(open_timeout: object) -> None:
    endpoint = GQLEndpoint("http://127.0.0.1:9/graphql").subscription(TODO_CHANGED).endpoint
    with pytest.raises(ParamError, match="open_timeout"):
        GQLSubscription(endpoint, "ws://127.0.0.1:9/graphql", open_timeout=open_timeout)  # type: ignore[arg-type]


def test_ws_url_follows_the_http_url() -> None:
    assert GQLEndpoint("https://example.org/graphql").subscription(TODO_CHANGED).ws_url == "wss://example.org/graphql"
    assert GQLEndpoint("http://a/graphql").subscription(TODO_CHANGED, ws_url="ws://b/ws").ws_url == "ws://b/ws"


@pytest.mark.parametrize(
    ("url", "ws_url"),
    [("HTTP://127.0.0.1:9/graphql", "ws://127.0.0.1:9/graphql"), ("Https://example.org/gql", "wss://example.org/gql")],
)
def test_ws_url_follows_an_http_url_whatever_the_case_of_its_scheme(url: str, ws_url: str) -> None:
    """Schemes ignore case (the endpoint's queries go to `HTTP://...`): its subscription was a ParamError
    saying the url must be http:// or https://, which it is."""
    assert GQLEndpoint(url).subscription(TODO_CHANGED).ws_url == ws_url
