"""A user's typed path parameters: a `TypedDict` given as `params=` is checked at every call."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator
from typing import Any

from typing_extensions import NotRequired, TypedDict, assert_type

from restlayer import DLE, Controller, Endpoint, Entity, Resource, Response, RestEndpoint, Values, resource, sync
from restlayer.graphql import GQLEndpoint


class Todo(Entity):
    id: int = 0
    title: str = ""


class TodoParams(TypedDict):
    id: int


class TodoBody(TypedDict):
    title: str


class ScopedParams(TypedDict):
    id: int
    user_id: int


class Filters(TypedDict):
    user_id: NotRequired[int]


URL = "https://api.example.com"

# RestEndpoint: `params=` (and `body=`) type the call arguments and the URL.
get_todo = RestEndpoint(path="/todos/:id", url_prefix=URL, schema=Todo, params=TodoParams)
assert_type(get_todo, RestEndpoint[Todo, [TodoParams]])
assert_type(get_todo.url({"id": 1}), str)
update_todo = RestEndpoint(path="/todos/:id", method="PUT", schema=Todo, params=TodoParams, body=TodoBody)
assert_type(update_todo, RestEndpoint[Todo, [TodoParams], [TodoParams, TodoBody]])
assert_type(update_todo.url({"id": 1}), str)
todo_list = RestEndpoint(path="/todos", schema=[Todo], params=Filters)
# A POST/PUT/PATCH endpoint takes a body after its params, `body=` given or not (`body=None`: none).
add_note = RestEndpoint(path="/todos/:id/notes", method="POST", schema=Todo, params=TodoParams)
assert_type(add_note, RestEndpoint[Todo, [TodoParams], [TodoParams, object]])
assert_type(
    RestEndpoint(path="/todos/:id", method="PUT", schema=[Todo], params=TodoParams),
    RestEndpoint[list[Todo], [TodoParams], [TodoParams, object]],
)
assert_type(
    RestEndpoint(path="/todos/:id", method="PATCH", process=len, params=TodoParams),
    RestEndpoint[int, [TodoParams], [TodoParams, object]],
)
assert_type(
    RestEndpoint(path="/todos/:id", method="POST", schema=Todo, params=TodoParams, body=None),
    RestEndpoint[Todo, [TodoParams]],
)
assert_type(
    RestEndpoint(path="/todos/:id", method="GET", schema=Todo, params=TodoParams), RestEndpoint[Todo, [TodoParams]]
)
assert_type(todo_list, RestEndpoint[list[Todo], [Filters]])
assert_type(RestEndpoint(path="/count", process=len, params=Filters), RestEndpoint[int, [Filters]])
assert_type(get_todo.extend(process=len, schema=None), RestEndpoint[int, [TodoParams]])
assert_type(RestEndpoint(path="/count").extend(process=len, schema=None, params=Filters), RestEndpoint[int, [Filters]])
assert_type(
    update_todo.extend(process=len, schema=None, params=TodoParams, body=TodoBody),
    RestEndpoint[int, [TodoParams], [TodoParams, TodoBody]],
)
assert_type(get_todo.extend(data_expiry_length=0), RestEndpoint[Todo, [TodoParams]])
assert_type(get_todo.extend(schema=[Todo]), RestEndpoint[list[Todo], [TodoParams]])
assert_type(RestEndpoint(path="/todos/:id", schema=Todo).extend(params=TodoParams), RestEndpoint[Todo, [TodoParams]])
# A new method decides whether calls take a body, as in the constructor: GET/DELETE never, POST/PUT/PATCH
# unless `body=None` (without `params=`, their arguments are unchecked: a body cannot be appended to [TodoParams]).
assert_type(get_todo.extend(method="POST"), RestEndpoint[Todo, [TodoParams], ...])
assert_type(get_todo.extend(method="PUT", body=None), RestEndpoint[Todo, [TodoParams]])
assert_type(add_note.extend(method="GET"), RestEndpoint[Todo, [TodoParams]])
assert_type(update_todo.extend(method="DELETE"), RestEndpoint[Todo, [TodoParams]])
assert_type(get_todo.extend(method="PATCH", params=TodoParams), RestEndpoint[Todo, [TodoParams], [TodoParams, object]])
assert_type(add_note.extend(method="POST", params=TodoParams, body=None), RestEndpoint[Todo, [TodoParams]])
# A new schema with `params=` gives the new schema's type, whatever its kind.
assert_type(get_todo.extend(schema=Values(Todo), params=Filters), RestEndpoint[dict[str, Todo], [Filters]])
assert_type(get_todo.extend(schema={"todo": Todo}, params=TodoParams), RestEndpoint[dict[str, Any], [TodoParams]])
assert_type(get_todo.extend(schema=[Values(Todo)], params=Filters), RestEndpoint[list[dict[str, Todo]], [Filters]])
by_tag = RestEndpoint(path="/todos", schema=[Values(Todo)], params=Filters)
assert_type(by_tag, RestEndpoint[list[dict[str, Todo]], [Filters]])
assert_type(
    RestEndpoint(path="/todos", method="POST", schema=[Values(Todo)], params=Filters, body=TodoBody),
    RestEndpoint[list[dict[str, Todo]], [Filters], [Filters, TodoBody]],
)

# Untyped endpoints stay as they were: any arguments, checked at run time.
untyped = RestEndpoint(path="/todos/:id", schema=Todo)
assert_type(untyped, RestEndpoint[Todo])
assert_type(untyped.url({"id": "1", "extra": [1]}), str)
assert_type(untyped.extend(method="POST"), RestEndpoint[Todo])

# resource(params=...) types the item members; get_list (a shorter path) stays untyped.
TodoResource = resource(path="/todos/:id", url_prefix=URL, schema=Todo, params=TodoParams)
assert_type(TodoResource, Resource[Todo, [TodoParams], [TodoParams, object]])
assert_type(TodoResource.get, RestEndpoint[Todo, [TodoParams]])
assert_type(TodoResource.update, RestEndpoint[Todo, [TodoParams], [TodoParams, object]])
assert_type(TodoResource.partial_update, RestEndpoint[Todo, [TodoParams], [TodoParams, object]])
assert_type(TodoResource.delete, RestEndpoint[Any, [TodoParams]])
assert_type(TodoResource["delete"], RestEndpoint[Any, [TodoParams]])  # by name: typed like the attribute
assert_type(TodoResource["get"], RestEndpoint[Todo, [TodoParams]])
assert_type(TodoResource.get_list, RestEndpoint[list[Todo]])
assert_type(TodoResource.extend("toggle", path="/todos/:id/toggle").get, RestEndpoint[Todo, [TodoParams]])
assert_type(TodoResource.extend(get={"data_expiry_length": 0}).get, RestEndpoint[Todo, [TodoParams]])
# New params (or a new schema) for a standard member: it no longer takes a TodoParams, so Any.
assert_type(TodoResource.extend(get={"params": ScopedParams}).get, RestEndpoint[Any])
assert_type(TodoResource.extend("delete", params=ScopedParams).delete, RestEndpoint[Any])


# GQLEndpoint.extend(params=...) is a GQLEndpoint (what it returns), its variables typed by `params`.
todo_query = GQLEndpoint(URL + "/graphql").query("query Todo($id: Int!) { todo(id: $id) { id } }", Todo)
typed_query = todo_query.extend(params=TodoParams)
assert_type(typed_query, GQLEndpoint[Todo, [TodoParams]])
assert_type(todo_query.extend(schema=[Todo], params=TodoParams), GQLEndpoint[list[Todo], [TodoParams]])
assert_type(typed_query.extend(schema=[Todo]), GQLEndpoint[list[Todo], [TodoParams]])
assert_type(typed_query.extend(data_expiry_length=0), GQLEndpoint[Todo, [TodoParams]])
assert_type(typed_query.extend(process=len, schema=None), GQLEndpoint[int, [TodoParams]])
assert_type(typed_query.extend(method="POST", params=TodoParams), GQLEndpoint[Todo, [TodoParams], ...])


def generic_reader(endpoint: Endpoint[Todo]) -> None:
    """Code written for any endpoint accepts typed ones."""


generic_reader(get_todo)
generic_reader(TodoResource.update)


async def use_async(ctrl: Controller, maybe: TodoParams | None) -> None:
    assert_type(await ctrl.fetch(get_todo, {"id": 1}), Todo)
    assert_type(await ctrl.fetch(update_todo, {"id": 1}, {"title": "x"}), Todo)
    assert_type(await ctrl.fetch(add_note, {"id": 1}, {"text": "x"}), Todo)
    assert_type(await ctrl.fetch(TodoResource.partial_update, {"id": 1}, {"title": "x"}), Todo)
    assert_type(await ctrl.fetch(todo_list, {}), list[Todo])
    assert_type(await ctrl.fetch(get_todo.extend(method="POST"), {"id": 1}, {"title": "x"}), Todo)
    assert_type(await ctrl.fetch(add_note.extend(method="GET"), {"id": 1}), Todo)
    await ctrl.fetch(add_note.extend(method="GET"), {"id": 1}, {"title": "x"})  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    assert_type(await ctrl.fetch(todo_list, {"user_id": 2}), list[Todo])
    assert_type(await ctrl.fetch_if_stale(get_todo, {"id": 1}), Todo)
    assert_type(await ctrl.suspense(get_todo, {"id": 1}), Todo)
    assert_type(await ctrl.suspense(get_todo, None), Todo | None)  # None: skip, the result is None
    assert_type(ctrl.live(get_todo, None), AsyncIterator[Todo | None])
    assert_type(ctrl.cache(get_todo, {"id": 1}), Todo | None)
    assert_type(ctrl.cache(get_todo, None), Todo | None)  # None: skip the read
    assert_type(ctrl.dle(get_todo, {"id": 1}), DLE[Todo])
    assert_type(ctrl.dle(get_todo, None), DLE[Todo])
    assert_type(ctrl.get_response(get_todo, {"id": 1}), Response[Todo])
    assert_type(ctrl.live(get_todo, {"id": 1}), AsyncIterator[Todo])
    ctrl.invalidate(TodoResource.delete, {"id": 1})
    # set_response / set_error (and paginate) take a typed endpoint's params unchecked, on purpose: no
    # overload design checks them in both checkers. `set_response(endpoint, *args, response)` puts the
    # response after the endpoint's arguments, and a ParamSpec (what checks fetch's `*args: A.args`)
    # can only be followed by its `**kwargs`, never by one more positional. Overloads taking
    # `endpoint: Endpoint[T, [P]], params: P, response: object` (or a Protocol whose `__call__` takes a
    # `P`) work in pyright, but mypy (2.4) solves `P` from the dict literal as well as from the endpoint
    # (`dict[str, int]` against `TodoParams`) and reports "Cannot infer value of type parameter" on every
    # correct call such as the ones below; an accept-all overload after them would accept wrong params
    # again, in both checkers. paginate's `params` meets the same mypy limit (its `next_page=` is keyword-only,
    # so it cannot follow a ParamSpec's `*args` either). These correct calls must stay accepted.
    ctrl.set_response(get_todo, {"id": 1}, {"id": 1, "title": "x"})
    ctrl.set_response(update_todo, {"id": 1}, {"title": "x"}, {"id": 1, "title": "x"})
    ctrl.set_error(get_todo, {"id": 1}, ValueError("gone"))
    async with ctrl.subscription(get_todo, {"id": 1}):
        pass
    assert_type(await get_todo({"id": 1}), Any)  # the raw reply
    assert_type(await ctrl.fetch(typed_query, {"id": 1}), Todo)
    assert_type(await ctrl.fetch(typed_query.extend(method="POST"), {"id": 1}), Todo)
    await ctrl.fetch(typed_query, {"id": "1"})  # type: ignore[typeddict-item]  # pyright: ignore[reportArgumentType]

    # Params that may be None (fetch only once an id is known): the skip overloads take the union too.
    assert_type(await ctrl.suspense(get_todo, maybe), Todo | None)
    assert_type(ctrl.cache(get_todo, maybe), Todo | None)
    assert_type(ctrl.dle(get_todo, maybe), DLE[Todo])
    assert_type(ctrl.live(get_todo, maybe), AsyncIterator[Todo | None])
    assert_type(ctrl.get_response(get_todo, maybe), Response[Todo])
    assert_type(ctrl.get_error(get_todo, maybe), BaseException | None)
    ctrl.invalidate(get_todo, maybe)
    await ctrl.subscribe(get_todo, maybe)
    await ctrl.unsubscribe(get_todo, maybe)
    ctrl.dle(get_todo, {"id": "1"} if maybe else None)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]

    # Mistakes a checker must catch.
    await ctrl.fetch(get_todo, {"idd": 1})  # type: ignore[typeddict-item, typeddict-unknown-key]  # pyright: ignore[reportArgumentType]
    await ctrl.fetch(get_todo, {"id": "1"})  # type: ignore[typeddict-item]  # pyright: ignore[reportArgumentType]
    await ctrl.fetch(get_todo)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    await ctrl.fetch(get_todo, id=1)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    await ctrl.fetch(update_todo, {"id": 1}, {"titel": "x"})  # type: ignore[typeddict-item, typeddict-unknown-key]  # pyright: ignore[reportArgumentType]
    await ctrl.fetch(TodoResource.update, {"id": 1})  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    await ctrl.fetch(add_note, {"id": 1})  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    ctrl.cache(TodoResource.get, {})  # type: ignore[misc]  # pyright: ignore[reportCallIssue, reportArgumentType]
    ctrl.dle(get_todo, {"id": None})  # type: ignore[misc]  # pyright: ignore[reportCallIssue, reportArgumentType]
    await get_todo({"id": "1"})  # type: ignore[typeddict-item]  # pyright: ignore[reportArgumentType]
    get_todo.url({"id": "1"})  # type: ignore[typeddict-item]  # pyright: ignore[reportArgumentType]
    get_todo.url()  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    update_todo.url({"id": 1}, {"title": "x"})  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def use_sync(ctrl: sync.Controller, maybe: TodoParams | None) -> None:
    assert_type(ctrl.suspense(get_todo, maybe), Todo | None)
    assert_type(ctrl.dle(get_todo, maybe), DLE[Todo])
    assert_type(ctrl.cache(get_todo, maybe), Todo | None)
    assert_type(ctrl.live(get_todo, maybe), Generator[Todo | None, None, None])
    with ctrl.subscription(get_todo, maybe):
        pass
    assert_type(ctrl.fetch(get_todo, {"id": 1}), Todo)
    assert_type(ctrl.cache(get_todo, {"id": 1}), Todo | None)
    assert_type(ctrl.dle(get_todo, None), DLE[Todo])
    assert_type(ctrl.live(get_todo, {"id": 1}), Generator[Todo, None, None])
    assert_type(ctrl.suspense(get_todo, None), Todo | None)
    assert_type(ctrl.live(get_todo, None), Generator[Todo | None, None, None])
    ctrl.fetch(get_todo, {"id": "1"})  # type: ignore[typeddict-item]  # pyright: ignore[reportArgumentType]
    ctrl.suspense(get_todo, id=1)  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue]
