"""The narrated restlayer demo: `python3 dev.py demo` (or `python -m examples.demo`).

It starts the example todo API on 127.0.0.1 in the background, then walks
through what the normalized store does, printing the server's request count
as proof of what was (and was not) sent. Every step checks its own claim and
the demo exits non-zero if one does not hold.
"""

from __future__ import annotations

import asyncio
import sys
import time

import httpx

from examples.todo_api.server import LocalServer
from restlayer import Controller, Entity, NetworkError, resource
from restlayer.graphql import GQLEndpoint
from restlayer.streams import SSEStream, StreamManager


# --- 1. A resource in a few lines -------------------------------------------------------------
class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


class User(Entity):
    id: int = 0
    username: str = ""
    name: str = ""
    todos: list[Todo] = []
    schema = {"todos": [Todo]}


STEP = 0


def step(title: str) -> None:
    global STEP
    STEP += 1
    print(f"\n[{STEP}] {title}")


def say(text: str) -> None:
    print(f"    {text}")


def check(claim: str, ok: bool) -> None:
    print(f"    {'OK  ' if ok else 'FAIL'} {claim}")
    if not ok:
        raise SystemExit(f"demo step {STEP} failed: {claim}")


def titles(todos: list[Todo] | None) -> list[str]:
    return [t.title for t in todos or []]


async def run(server: LocalServer) -> None:
    api = server.url
    TodoResource = resource(path="/todos/:id", schema=Todo, url_prefix=api, optimistic=True)
    UserResource = resource(path="/users/:id", schema=User, url_prefix=api)
    log = server.requests
    ctrl = Controller()

    step("Define resources: one line each gives get, get_list (+ .push, .unshift), update, partial_update, delete")
    say('TodoResource = resource(path="/todos/:id", schema=Todo, url_prefix=api, optimistic=True)')
    say(f"members: {', '.join(TodoResource.members())}")

    step("Fetch a list once; the second read is served from the cache")
    before = log.total
    todos = await ctrl.suspense(TodoResource.get_list, userId=1)
    say(f"user 1 todos: {titles(todos)}")
    again = await ctrl.suspense(TodoResource.get_list, userId=1)
    sent = log.total - before
    say(f"server requests for two reads: {sent}")
    check("second read sent no request and returned the very same list object", sent == 1 and again is todos)

    step("Update one todo; the list and the user's nested todos change without refetching")
    user = await ctrl.suspense(UserResource.get, id=1, expand="todos")
    first = todos[0]
    say(f"before: list[0].title={first.title!r}, user.todos[0].title={user.todos[0].title!r}")
    before = log.total
    await ctrl.fetch(TodoResource.partial_update, {"id": first.id}, {"title": "Buy oat milk"})
    todos = ctrl.cache(TodoResource.get_list, userId=1)
    user = ctrl.cache(UserResource.get, id=1, expand="todos")
    say(f"after:  list[0].title={todos[0].title!r}, user.todos[0].title={user.todos[0].title!r}")
    check(
        "one PATCH request, both views updated from the store",
        log.total - before == 1 and todos[0].title == user.todos[0].title == "Buy oat milk",
    )

    step("Create a todo; it appears in exactly the lists it belongs to")
    user2 = await ctrl.suspense(TodoResource.get_list, userId=2)
    new = await ctrl.fetch(TodoResource.get_list.push, {"userId": 1}, {"title": "Write docs", "userId": 1})
    ones = ctrl.cache(TodoResource.get_list, userId=1)
    twos = ctrl.cache(TodoResource.get_list, userId=2)
    say(f"created todo {new.id}; user 1 list: {titles(ones)}")
    check(
        "added to user 1's list, not to user 2's",
        new.id in [t.id for t in ones] and new.id not in [t.id for t in twos] and len(twos) == len(user2),
    )

    step("Delete a todo; it disappears everywhere")
    await ctrl.fetch(TodoResource.delete, id=new.id)
    ones = ctrl.cache(TodoResource.get_list, userId=1)
    check(
        "gone from the list and from the entity table",
        new.id not in [t.id for t in ones] and ctrl.get(Todo, {"id": new.id}) is None,
    )

    step("Optimistic update: visible at once, rolled back when the server refuses")
    target = ones[0]
    say(f"current title: {target.title!r}; sending title 'REJECT' (the example API answers 400)")
    task = asyncio.create_task(ctrl.fetch(TodoResource.partial_update, {"id": target.id}, {"title": "REJECT"}))
    await asyncio.sleep(0)  # let the fetch start: the optimistic value is applied right away
    shown = ctrl.get(Todo, {"id": target.id})
    say(f"before the server answered: {shown.title!r}")
    try:
        await task
        refused = False
    except NetworkError as error:
        refused = error.status == 400
        say(f"server answered {error.status}")
    after = ctrl.get(Todo, {"id": target.id})
    say(f"after the answer: {after.title!r}")
    check("optimistic value shown, then rolled back", shown.title == "REJECT" and refused and after == target)

    step("live(): poll every 200 ms and print each change another client makes")
    polled = TodoResource.get.extend(poll_frequency=200)
    changes: list[str] = []

    async def other_client() -> None:
        async with httpx.AsyncClient() as client:
            for title in ("Edited elsewhere #1", "Edited elsewhere #2"):
                await asyncio.sleep(0.35)
                await client.patch(f"{api}/todos/{target.id}", json={"title": title})

    writer = asyncio.create_task(other_client())
    started = time.monotonic()
    async for todo in ctrl.live(polled, id=target.id):
        say(f"t+{time.monotonic() - started:4.1f}s  title={todo.title!r}")
        changes.append(todo.title)
        if todo.title == "Edited elsewhere #2" or time.monotonic() - started > 5:
            break
    await writer
    check("saw both remote edits through polling", changes[-2:] == ["Edited elsewhere #1", "Edited elsewhere #2"])

    step("Server push: another client's edit arrives over SSE the moment it is made, no polling")
    stream = SSEStream(f"{api}/events", on={"todos.updated": Todo})
    arrived = asyncio.Event()
    async with StreamManager(ctrl, [stream]), httpx.AsyncClient() as client:
        await stream.until(lambda s: s.connected)
        unwatch = ctrl.watch(TodoResource.get, {"id": target.id}, callback=lambda todo: arrived.set())
        sent = time.perf_counter()
        await client.patch(f"{api}/todos/{target.id}", json={"title": "Pushed from elsewhere"})
        await asyncio.wait_for(arrived.wait(), 5)
        delay_ms = (time.perf_counter() - sent) * 1000
        unwatch()
    say(f"watch callback {delay_ms:.1f} ms after the edit was sent (polling above: up to 200 ms)")
    check("saw the remote edit by push", ctrl.get(Todo, {"id": target.id}).title == "Pushed from elsewhere")

    step("GraphQL: the same entity fetched over GraphQL is the same entity in the store")
    gql = GQLEndpoint(f"{api}/graphql")
    get_todo = gql.query("query getTodo($id: ID!) { todo(id: $id) { id title completed userId } }", {"todo": Todo})
    data = await ctrl.fetch(get_todo, {"id": str(target.id)})
    say(f"GraphQL says: {data['todo'].title!r}")
    via_rest = ctrl.get(Todo, {"id": target.id})
    check("REST view of the entity shows the GraphQL data", via_rest.title == data["todo"].title)

    print(f"\nDone: {log.total} requests reached the server in total.")


def main() -> int:
    print("Starting the example API on 127.0.0.1 ...", flush=True)
    with LocalServer() as server:
        print(f"Example API listening at {server.url}")
        asyncio.run(run(server))
    print("Server stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
