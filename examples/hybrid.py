"""A hybrid resource: REST and GraphQL members over the same todos, one entity in the store.

Run with `python -m examples.hybrid`. It starts the example API on 127.0.0.1,
fetches todo 1 over REST and over GraphQL, changes it through one protocol and
reads the change through the other, printing the server's request count as
proof of what was (and was not) sent. Exits non-zero if a claim does not hold.
"""

from __future__ import annotations

import asyncio
from typing import Any

from examples.todo_api.server import LocalServer
from restlayer.core import Controller
from restlayer.graphql import GQLEndpoint
from restlayer.rest import Resource, client_session, resource
from restlayer.schema import Entity


class Todo(Entity):
    """One todo, whichever protocol delivered it.

    REST sends `{"id": 1, "userId": 1, ...}`; GraphQL sends `{"id": "1", "user":
    {"id": "1"}, ...}`. `process` maps both onto the REST shape, so they share a pk.
    """

    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False

    @classmethod
    def process(cls, input: Any, parent: Any, key: str | None, args: tuple[Any, ...]) -> Any:
        data = dict(input)
        if data.get("id") is not None:
            data["id"] = int(data["id"])
        user = data.pop("user", None)
        if isinstance(user, dict) and user.get("id") is not None:
            data["userId"] = int(user["id"])
        return data


GET_TODO = """
query getTodo($id: ID!) {
  todo(id: $id) { id title completed user { id } }
}
"""

UPDATE_TODO = """
mutation updateTodo($id: ID!, $title: String, $completed: Boolean) {
  updateTodo(id: $id, title: $title, completed: $completed) { id title completed user { id } }
}
"""


def todo_resource(url: str) -> Resource:
    """REST CRUD on /todos/:id plus the GraphQL members `gql_get` and `gql_update`."""
    gql = GQLEndpoint(f"{url}/graphql")
    return resource(path="/todos/:id", schema=Todo, url_prefix=url).extend(
        lambda base: {
            "gql_get": gql.query(GET_TODO, {"todo": Todo}),
            "gql_update": gql.mutation(UPDATE_TODO, {"updateTodo": Todo}),
        }
    )


def show(label: str, todo: Any) -> None:
    """One todo on one line."""
    print(f"    {label:<34} #{todo.id} {todo.title!r} completed={todo.completed} userId={todo.userId}")


def check(claim: str, ok: bool) -> None:
    """Print a claim and stop the example if it does not hold."""
    print(f"    {'OK  ' if ok else 'FAIL'} {claim}")
    if not ok:
        raise SystemExit(f"hybrid example failed: {claim}")


async def run(server: LocalServer) -> None:
    """The walk-through, against a running example server."""
    todos = todo_resource(server.url)
    log = server.requests
    ctrl = Controller()
    print(f"Example API at {server.url}")
    print(f"TodoResource members: {', '.join(todos)}")

    print("\n[1] Fetch todo 1 over REST, then over GraphQL")
    rest_todo = await ctrl.fetch(todos.get, id=1)
    show("REST    GET /todos/1", rest_todo)
    gql_data = await ctrl.fetch(todos.gql_get, {"id": "1"})
    show("GraphQL query getTodo(id: 1)", gql_data["todo"])  # processed: userId from user.id
    stored = ctrl.get_state()["entities"]["Todo"]
    print(f"    store: Todo pks = {sorted(stored)}, record = {stored['1']}")
    via_rest = ctrl.get_response(todos.get, id=1).data
    via_gql = ctrl.get_response(todos.gql_get, {"id": "1"}).data["todo"]
    show("read through the REST member", via_rest)
    show("read through the GraphQL member", via_gql)
    check("both protocols filled the same entity (one pk, one object)", list(stored) == ["1"] and via_gql is via_rest)

    print("\n[2] Change it over GraphQL; read it through the REST member")
    before = log.total
    updated = await ctrl.fetch(todos.gql_update, {"id": "1", "title": "changed over GraphQL", "completed": True})
    show("GraphQL mutation updateTodo", updated["updateTodo"])
    seen = ctrl.get_response(todos.get, id=1).data
    show("REST member, from the store", seen)
    check("REST sees the GraphQL change", seen.title == "changed over GraphQL" and seen.completed)
    check("without a new request (1 request: the mutation)", log.total - before == 1)

    print("\n[3] Change it over REST; read it through the GraphQL member")
    before = log.total
    patched = await ctrl.fetch(todos.partial_update, {"id": 1}, {"title": "changed over REST"})
    show("REST    PATCH /todos/1", patched)
    seen_gql = ctrl.get_response(todos.gql_get, {"id": "1"}).data["todo"]
    show("GraphQL member, from the store", seen_gql)
    check("GraphQL sees the REST change", seen_gql.title == "changed over REST")
    check("without a new request (1 request: the PATCH)", log.total - before == 1)

    print(f"\nRequests the server received: {[f'{r.method} {r.path}' for r in log]}")


def main() -> None:
    """Start the example API, run the walk-through, stop the server."""
    with LocalServer() as server:
        asyncio.run(_main(server))


async def _main(server: LocalServer) -> None:
    """`run`, closing the shared httpx client before the loop ends."""
    async with client_session():
        await run(server)


if __name__ == "__main__":
    main()
