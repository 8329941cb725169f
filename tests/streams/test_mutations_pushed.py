"""The example API announces GraphQL mutations on its push feeds (/events, /ws) like REST writes."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from examples.todo_api import LocalServer
from restlayer import Controller, Entity
from restlayer.graphql import GQLEndpoint
from restlayer.streams import Message, SSEStream, Stream, StreamManager, WebSocketStream, Writes

UPDATE = "mutation up($id: ID!, $title: String) { updateTodo(id: $id, title: $title) { id title } }"
CREATE = "mutation add($userId: Int!, $title: String!) { createTodo(userId: $userId, title: $title) { id title } }"


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


class Feed:
    """The `on=` handler: records each announcement (event type, data) and stores its todo."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, object]] = []

    def __call__(self, message: Message, writes: Writes) -> None:
        if message.event == "subscribed":  # the WebSocket feed's "listening from now on"
            return
        self.seen.append((message.event, message.data))
        writes.set(Todo, message.data)


def sse(api: LocalServer, feed: Feed) -> Stream:
    return SSEStream(f"{api.url}/events", on=feed)


def ws(api: LocalServer, feed: Feed) -> Stream:
    url = api.url.replace("http://", "ws://") + "/ws"
    return WebSocketStream(url, on=feed, on_open=lambda last: [{"type": "subscribe", "lastEventId": last}])


async def mutate(client: httpx.AsyncClient, api: LocalServer, query: str, variables: dict[str, object]) -> object:
    reply = await client.post(f"{api.url}/graphql", json={"query": query, "variables": variables})
    reply.raise_for_status()
    return reply.json()


@pytest.mark.parametrize("transport", [sse, ws], ids=["sse", "websocket"])
async def test_graphql_mutations_reach_the_store_by_push_and_rejected_ones_are_not_announced(
    api: LocalServer, transport: Callable[[LocalServer, Feed], Stream]
) -> None:
    feed = Feed()
    stream = transport(api, feed)
    ctrl = Controller()
    async with StreamManager(ctrl, [stream]), httpx.AsyncClient() as other:
        await stream.until(lambda s: s.connected and s.last_event_id is not None)  # the server listens now
        rejected = await mutate(other, api, UPDATE, {"id": "2", "title": "REJECT"})
        assert isinstance(rejected, dict) and rejected["errors"]
        await mutate(other, api, UPDATE, {"id": "2", "title": "by a GraphQL mutation"})
        await stream.until(lambda s: len(feed.seen) == 1)
        created = await mutate(other, api, CREATE, {"userId": 1, "title": "made by GraphQL"})
        await stream.until(lambda s: len(feed.seen) == 2)
    assert isinstance(created, dict)
    new_id = int(created["data"]["createTodo"]["id"])
    assert [event for event, _ in feed.seen] == ["todos.updated", "todos.created"]
    assert feed.seen[0][1] == api.db.get("todos", 2)  # the whole record, as a REST update announces it
    assert feed.seen[1][1] == api.db.get("todos", new_id)
    assert ctrl.get(Todo, {"id": 2}) == Todo(id=2, userId=1, title="by a GraphQL mutation")
    assert ctrl.get(Todo, {"id": new_id}) == Todo(id=new_id, userId=1, title="made by GraphQL")
    assert stream.ignored == 0


async def test_a_graphql_subscription_sees_a_graphql_mutation(api: LocalServer) -> None:
    gql = GQLEndpoint(f"{api.url}/graphql")
    changed = gql.subscription("subscription { todoChanged(id: 3) { id title } }", {"todoChanged": Todo})
    update = gql.mutation(UPDATE, {"updateTodo": Todo})
    ctrl = Controller()
    titles: list[str] = []
    async with changed.events(ctrl) as events:
        async for data in events:
            titles.append(data["todoChanged"].title)
            if len(titles) == 2:
                break
            await ctrl.fetch(update, {"id": "3", "title": "seen by the subscription"})
    assert titles == ["fugiat veniam minus", "seen by the subscription"]
