"""GraphQL subscriptions against a scripted graphql-transport-ws server: every protocol turn and failure."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from examples.todo_api import LocalServer
from restlayer import Controller, Entity, NetworkError, RestLayerError
from restlayer.graphql import GQLEndpoint, GQLNetworkError, GQLSubscription
from tests.streams._script import GQL_SCRIPTS

QUERY = "subscription { todoChanged { id title } }"


class Todo(Entity):
    id: int = 0
    title: str = ""


def nxt(payload: object) -> str:
    return json.dumps({"id": "1", "type": "next", "payload": payload})


Received = list[dict[str, Any]]
Scripted = Callable[[list[str]], tuple[GQLSubscription, Received]]


@pytest.fixture
def scripted(script_server: LocalServer) -> Iterator[Scripted]:
    """`scripted(frames)`: a subscription to a server playing `frames`, and what that server received."""
    keys: list[str] = []

    def make(frames: list[str]) -> tuple[GQLSubscription, Received]:
        key = uuid.uuid4().hex
        keys.append(key)
        received: Received = []
        GQL_SCRIPTS[key] = (frames, received)
        gql = GQLEndpoint(f"{script_server.url}/graphql")
        ws = script_server.url.replace("http://", "ws://") + f"/_stream/gql?key={key}"
        return gql.subscription(QUERY, {"todoChanged": Todo}, ws_url=ws), received

    yield make
    for key in keys:
        GQL_SCRIPTS.pop(key, None)


async def test_ping_is_answered_and_a_server_complete_ends_the_iteration(scripted: Scripted) -> None:
    sub, received = scripted(
        [
            json.dumps({"type": "ping"}),
            nxt({"data": {"todoChanged": {"id": 1, "title": "a"}}}),
            json.dumps({"id": "1", "type": "complete"}),
        ]
    )
    ctrl = Controller()
    seen = [data["todoChanged"].title async for data in sub.events(ctrl)]
    assert seen == ["a"]
    assert received[0] == {"type": "connection_init", "payload": {}}
    assert received[1]["type"] == "subscribe" and received[1]["payload"]["query"] == QUERY
    assert {"type": "pong"} in received
    assert ctrl.get(Todo, {"id": 1}) == Todo(id=1, title="a")
    assert "GQLSubscription(name=" in repr(sub)


async def test_without_a_controller_the_data_is_yielded_as_sent(scripted: Scripted) -> None:
    sub, _ = scripted([nxt({"data": {"todoChanged": {"id": 2, "title": "raw"}}})])
    async with sub.events() as events:
        async for data in events:
            assert data == {"todoChanged": {"id": 2, "title": "raw"}}
            break


async def test_leaving_early_sends_complete(scripted: Scripted, script_server: LocalServer) -> None:
    sub, received = scripted([nxt({"data": {"todoChanged": {"id": 3, "title": "x"}}})])
    async with sub.events(Controller()) as events:
        async for _ in events:
            break
    # the server thread records the frame when it reads it: wait (bounded) for that
    for _ in range(500):
        if received and received[-1] == {"id": "1", "type": "complete"}:
            break
        await asyncio.sleep(0.01)
    assert received[-1] == {"id": "1", "type": "complete"}


@pytest.mark.parametrize(
    ("frames", "error", "match"),
    [
        ([nxt({"data": None, "errors": [{"message": "resolver broke"}]})], GQLNetworkError, "resolver broke"),
        ([json.dumps({"id": "1", "type": "error", "payload": [{"message": "bad query"}]})], GQLNetworkError, "bad"),
        ([nxt("not an object")], GQLNetworkError, "no payload object"),
        (["{not json"], NetworkError, "not JSON"),
        (["[1, 2]"], NetworkError, "not a JSON object"),
        (["CLOSE"], NetworkError, "subscription socket failed"),
        ([nxt({"data": {"todoChanged": {"title": "no id"}}})], RestLayerError, "Error processing"),
    ],
)
async def test_protocol_failures_raise_restlayer_errors(
    scripted: Scripted, frames: list[str], error: type[Exception], match: str
) -> None:
    sub, _ = scripted(frames)
    with pytest.raises(error, match=match):
        async with sub.events(Controller()) as events:
            async for _ in events:
                pass


def test_a_non_http_url_is_used_as_the_websocket_url() -> None:
    assert GQLEndpoint("ws://host/graphql").subscription(QUERY).ws_url == "ws://host/graphql"
