"""A user's resource and controller calls: the result types follow the schema."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Mapping
from typing import Any

from typing_extensions import assert_type

from restlayer import DLE, All, Collection, Controller, Entity, Query, Resource, Response, RestEndpoint, resource, sync
from restlayer.pagination import Page, cursor_in_body, paginate
from restlayer.rest import ExtendedResource


class Todo(Entity):
    id: int = 0
    title: str = ""
    completed: bool = False


TodoResource = resource(path="/todos/:id", url_prefix="https://api.example.com", schema=Todo, pagination_field="page")
assert_type(TodoResource, Resource[Todo])
assert_type(TodoResource.get, RestEndpoint[Todo])
assert_type(TodoResource.get_list, RestEndpoint[list[Todo]])
assert_type(TodoResource.get_list.push, RestEndpoint[Todo])
assert_type(TodoResource.get_list.unshift, RestEndpoint[Todo])
assert_type(TodoResource.get_list.get_page, RestEndpoint[list[Todo]])
assert_type(TodoResource.update, RestEndpoint[Todo])
assert_type(TodoResource.partial_update, RestEndpoint[Todo])
assert_type(TodoResource.delete, RestEndpoint[Any])  # returns the JSON naming the deleted item
assert_type(TodoResource.get.url({"id": 1}), str)

# extend keeps the standard members typed; added members are read by name.
Extended = TodoResource.extend("toggle", path="/todos/:id/toggle", method="POST")
assert_type(Extended, ExtendedResource[Todo])
assert_type(Extended.get, RestEndpoint[Todo])
assert_type(Extended["toggle"], RestEndpoint[Any])
assert_type(Extended["get"], RestEndpoint[Todo])  # standard members read by name are typed too
assert_type(TodoResource["get_list"], RestEndpoint[list[Todo]])
assert_type(TodoResource["partial_update"], RestEndpoint[Todo])
assert_type(TodoResource.extend(get={"data_expiry_length": 0}).get, RestEndpoint[Todo])
assert_type(TodoResource.extend({"get": {"path": "/v2/todos/:id"}}).get, RestEndpoint[Todo])
# A standard member given a new schema no longer reads a Todo: Any, never the old type.
assert_type(TodoResource.extend(get={"schema": [Todo]}), ExtendedResource[Any])
assert_type(TodoResource.extend(get={"schema": [Todo]}).get, RestEndpoint[Any])
assert_type(TodoResource.extend(get_list={"schema": Todo, "name": "one"}).get_list, RestEndpoint[list[Any]])
assert_type(TodoResource.extend({"get": {"schema": [Todo]}}).get, RestEndpoint[Any])
assert_type(TodoResource.extend("get", schema=[Todo]).get, RestEndpoint[Any])
assert_type(TodoResource.extend("update", process=len, schema=None).update, RestEndpoint[Any])
assert_type(TodoResource.extend("toggle", schema=Todo, method="POST").get, RestEndpoint[Todo])  # a new member
# extend(function): the function is handed the resource, typed, so its members are checked.
Toggled = TodoResource.extend(lambda base: {"toggle": base.get.extend(path="/todos/:id/toggle", method="POST")})
assert_type(Toggled, ExtendedResource[Todo])
assert_type(Toggled.get, RestEndpoint[Todo])
assert_type(Toggled.extend(lambda base: {"again": base.toggle}).again, RestEndpoint[Any])
TodoResource.extend(lambda base: {"x": base.gett})  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownLambdaType]


async def use_async(ctrl: Controller) -> None:
    assert_type(await ctrl.fetch(TodoResource.get, {"id": 1}), Todo)
    assert_type(await ctrl.fetch(TodoResource.get, id=1), Todo)
    assert_type(await ctrl.fetch(TodoResource.get_list), list[Todo])
    assert_type(await ctrl.fetch(TodoResource.get_list.push, {"title": "x"}), Todo)
    assert_type(await ctrl.fetch_if_stale(TodoResource.get, id=1), Todo)
    assert_type(await ctrl.suspense(TodoResource.get_list), list[Todo])
    assert_type(ctrl.cache(TodoResource.get_list), list[Todo] | None)
    assert_type(ctrl.get(Todo, {"id": 1}), Todo | None)
    assert_type(ctrl.get(All(Todo)), list[Todo] | None)
    assert_type(ctrl.get(Collection([Todo]), {}), list[Todo] | None)
    assert_type(ctrl.get([Todo]), list[Todo] | None)  # the list shorthand reads like Array(Todo)
    assert_type(ctrl.get({"todos": [Todo]}), dict[str, Any] | None)
    # An endpoint's schema reads the list it stores (as the collections guide does): a schema, read untyped.
    assert_type(ctrl.get(TodoResource.get_list.schema, {}), Any)
    assert_type(ctrl.dle(TodoResource.get, id=1), DLE[Todo])
    assert_type(ctrl.dle(TodoResource.get, id=1).data, Todo | None)
    assert_type(ctrl.get_response(TodoResource.get, id=1), Response[Todo])
    assert_type(ctrl.get_response(TodoResource.get, id=1).data, Todo | None)
    assert_type(ctrl.live(TodoResource.get, id=1), AsyncIterator[Todo])
    async for todo in ctrl.live(TodoResource.get, id=1):
        assert_type(todo, Todo)

    def on_change(todos: list[Todo] | None) -> None:  # None once the data is gone (deleted, store reset)
        print(len(todos or []))

    def count(todos: list[Todo]) -> None:
        print(len(todos))

    ctrl.watch(TodoResource.get_list, callback=on_change)
    assert_type(ctrl.get_error(TodoResource.get_list.push, {"title": "x"}), BaseException | None)
    ctrl.invalidate(TodoResource.get_list.push)

    def open_todos(todos: list[Todo], *args: object) -> list[Todo]:
        return [t for t in todos if not t.completed]

    assert_type(ctrl.get(Query(All(Todo), open_todos)), list[Todo] | None)

    # Mistakes a checker must catch.
    TodoResource.gett  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    await ctrl.fetch("x")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType, reportCallIssue]
    ctrl.watch(TodoResource.get, callback=on_change)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    on_change(await ctrl.fetch(TodoResource.get))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    ctrl.watch(TodoResource.get_list, callback=count)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def use_sync(ctrl: sync.Controller) -> None:
    assert_type(ctrl.fetch(TodoResource.get, id=1), Todo)
    assert_type(ctrl.fetch(TodoResource.get_list), list[Todo])
    assert_type(ctrl.fetch_if_stale(TodoResource.get, id=1), Todo)
    assert_type(ctrl.suspense(TodoResource.get, id=1), Todo)
    assert_type(ctrl.cache(TodoResource.get, id=1), Todo | None)
    assert_type(ctrl.get(Todo, {"id": 1}), Todo | None)
    assert_type(ctrl.get([Todo]), list[Todo] | None)
    assert_type(ctrl.get(TodoResource.get_list.schema, {}), Any)
    assert_type(ctrl.dle(TodoResource.get, id=1), DLE[Todo])
    assert_type(ctrl.get_response(TodoResource.get, id=1), Response[Todo])
    assert_type(ctrl.live(TodoResource.get, id=1), Generator[Todo, None, None])

    def on_change(todo: Todo | None) -> None:
        print("deleted" if todo is None else todo.title)

    def show_title(todo: Todo) -> None:
        print(todo.title)

    ctrl.watch(TodoResource.get, id=1, callback=on_change)
    ctrl.watch(TodoResource.get, id=1, callback=show_title)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    ctrl.fetch(TodoResource.gett)  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]


def use_extended() -> None:
    """Members added by extend are reachable (as endpoints of Any); standard ones stay typed."""
    extended = TodoResource.extend("toggle", path="/todos/:id/toggle", method="POST")
    assert_type(extended.toggle, RestEndpoint[Any])
    assert_type(extended.get_list.push, RestEndpoint[Todo])


async def use_paginate(ctrl: Controller, blocking_ctrl: sync.Controller) -> None:
    """Walking pages yields the endpoint's type, async and blocking."""
    async for page in paginate(ctrl, TodoResource.get_list, {"limit": 2}, next_page=cursor_in_body()):
        assert_type(page, list[Todo])
    for todos in sync.paginate(blocking_ctrl, TodoResource.get_list, next_page=cursor_in_body()):
        assert_type(todos, list[Todo])

    def after_last(page: Page[list[Todo]]) -> dict[str, object] | None:
        """A reader of this endpoint's pages sees their data typed."""
        assert_type(page.data, list[Todo])
        return {"after": page.data[-1].id} if page.data else None

    async for todos in paginate(ctrl, TodoResource.get_list, next_page=after_last):
        assert_type(todos, list[Todo])
    for todos in sync.paginate(blocking_ctrl, TodoResource.get_list, next_page=after_last):
        assert_type(todos, list[Todo])

    def until_total(page: Page[list[Todo]]) -> dict[str, object] | None:
        """The pagination guide's reader: the params are the caller's own values, read as such."""
        total = int(page.response.headers["X-Total-Count"]) if page.response is not None else 0
        number = int(page.params.get("page", 1))
        return None if number * int(page.params["limit"]) >= total else {**page.params, "page": number + 1}

    async for todos in paginate(ctrl, TodoResource.get_list, {"limit": 4}, next_page=until_total):
        assert_type(todos, list[Todo])

    # Mistakes a checker must catch: a reader of another endpoint's pages.
    paginate(ctrl, TodoResource.get, next_page=after_last)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def use_state(ctrl: Controller) -> None:
    """The store's state reads typed, by attribute and by name."""
    state = ctrl.get_state()
    assert_type(state["last_reset"], float)
    assert_type(state["endpoints"].get("GET /todos"), object | None)  # a normalized result: pks for entities
    meta = state["meta"]["GET /todos"]
    assert_type(meta.get("expires_at"), float | None)
    assert_type(meta.get("error"), BaseException | None)
    row = state.entities["Todo"]["1"]
    if isinstance(row, Mapping):  # else a collection's list, or INVALID once deleted
        assert_type(row, Mapping[str, object])
    assert_type(state["entitiez"], object)  # a name that is no table reads as `object` (KeyError at run time)


class AppController(Controller):
    """A controller of the app's own, with helpers of its own."""

    def todo(self, id: int) -> Todo | None:
        return self.cache(TodoResource.get, id=id)


class BlockingAppController(sync.Controller):
    def todo(self, id: int) -> Todo | None:
        return self.cache(TodoResource.get, id=id)


async def use_subclass() -> None:
    """`async with` / `with` a Controller subclass gives that subclass, its helpers typed."""
    async with AppController() as ctrl:
        assert_type(ctrl, AppController)
        assert_type(ctrl.todo(1), Todo | None)
    with BlockingAppController() as blocking:
        assert_type(blocking, BlockingAppController)
        assert_type(blocking.todo(1), Todo | None)
