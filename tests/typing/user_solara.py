"""A user's Solara components: the hooks' results follow the endpoint's schema."""

from __future__ import annotations

from concurrent.futures import Future

from typing_extensions import TypedDict, assert_type

from restlayer import DLE, Entity, RestEndpoint, resource
from restlayer.solara import Fetch, use_cache, use_dle, use_fetch, use_live, use_subscription, use_suspense


class Todo(Entity):
    id: int = 0
    title: str = ""


class TodoParams(TypedDict):
    id: int


TodoResource = resource(path="/todos/:id", url_prefix="https://api.example.com", schema=Todo)
get_todo = RestEndpoint(path="/todos/:id", url_prefix="https://api.example.com", schema=Todo, params=TodoParams)


def todo_title(id: int) -> str:
    todo = use_suspense(TodoResource.get, id=id)
    assert_type(todo, Todo)
    assert_type(use_live(TodoResource.get_list), list[Todo])
    assert_type(use_dle(TodoResource.get, id=id), DLE[Todo])
    assert_type(use_cache(TodoResource.get, id=id), Todo | None)
    fetch = use_fetch()
    assert_type(fetch, Fetch)
    assert_type(fetch(TodoResource.partial_update, {"id": id}, {"title": "new"}), Future[Todo])
    return todo.title


def typed_todo(id: int | None) -> str:
    """The hooks check a typed endpoint's parameters as the Controller does; None skips the read."""
    assert_type(use_suspense(get_todo, {"id": 1}), Todo)
    assert_type(use_live(get_todo, {"id": 1}), Todo)
    assert_type(use_dle(get_todo, {"id": 1}), DLE[Todo])
    assert_type(use_cache(get_todo, {"id": 1}), Todo | None)
    use_subscription(get_todo, {"id": 1})
    assert_type(use_fetch()(get_todo, {"id": 1}), Future[Todo])
    skipped = use_suspense(get_todo, None)
    assert_type(skipped, Todo | None)
    assert_type(use_live(get_todo, None), Todo | None)
    assert_type(use_dle(get_todo, None), DLE[Todo])
    assert_type(use_cache(get_todo, None), Todo | None)
    use_subscription(get_todo, None)

    # Mistakes a checker must catch.
    use_suspense(get_todo, {"id": "1"})  # type: ignore[misc]  # pyright: ignore[reportCallIssue, reportArgumentType]
    use_live(get_todo, {"idd": 1})  # type: ignore[misc]  # pyright: ignore[reportCallIssue, reportArgumentType]
    use_dle(get_todo, id=1)  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue]
    use_cache(get_todo)  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue]
    use_subscription(get_todo, {"id": "1"})  # type: ignore[misc]  # pyright: ignore[reportCallIssue, reportArgumentType]
    use_fetch()(get_todo, {"id": "1"})  # type: ignore[typeddict-item]  # pyright: ignore[reportArgumentType]
    return skipped.title if skipped is not None else ""
