"""GraphQL subscriptions over WebSocket (graphql-transport-ws) against the example API's /graphql."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from examples.todo_api import LocalServer
from restlayer import Controller, Entity, NetworkError
from restlayer.graphql import GQLEndpoint, GQLNetworkError
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
        backoff = Backoff(initial=0.05, factor=2, jitter=0, sleep=restart)
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
    assert restart.delays == [0.05, 0.1]  # lost, then refused while the server was down
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


def test_ws_url_follows_the_http_url() -> None:
    assert GQLEndpoint("https://example.org/graphql").subscription(TODO_CHANGED).ws_url == "wss://example.org/graphql"
    assert GQLEndpoint("http://a/graphql").subscription(TODO_CHANGED, ws_url="ws://b/ws").ws_url == "ws://b/ws"
