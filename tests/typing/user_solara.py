"""A user's Solara components: the hooks' results follow the endpoint's schema."""

from __future__ import annotations

from concurrent.futures import Future

from typing_extensions import assert_type

from restlayer import DLE, Entity, resource
from restlayer.solara import Fetch, use_cache, use_dle, use_fetch, use_live, use_suspense


class Todo(Entity):
    id: int = 0
    title: str = ""


TodoResource = resource(path="/todos/:id", url_prefix="https://api.example.com", schema=Todo)


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
