"""resource(): members, paths, methods, names, extend, optimistic responses, and the
schemas its members carry."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

import pytest
from typing_extensions import TypedDict

from restlayer.errors import AbortOptimistic, DefinitionError, ParamError, RestLayerError
from restlayer.rest import Resource, RestEndpoint, resource
from restlayer.schema import (
    INVALID,
    Collection,
    Entity,
    Invalidate,
    Union,
    Values,
    find_collection,
    normalize,
)
from tests._present import present


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


class User(Entity):
    id: int = 0
    username: str = ""


class Group(Entity):
    id: int = 0
    name: str = ""


@pytest.fixture
def todos() -> Resource:
    return resource(path="/todos/:id", schema=Todo, pagination_field="page")


# -- 1.6 list paths -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "list_path"),
    [
        ("/:first/:second", "/:first"),
        ("/:owner/*path", "/:owner"),
        ("/todos/:id.json", "/todos"),
        ("/todos/:id/detail", "/todos"),
        ("/:first", "/"),
        ("/:group/posts{/:id}", "/:group/posts"),
    ],
)
def test_list_paths(path: str, list_path: str) -> None:
    assert resource(path=path, schema=Todo).get_list.path == list_path


def test_path_without_params_raises() -> None:
    with pytest.raises(RestLayerError, match="Resource path requires at least one :parameter"):
        resource(path="/todos", schema=Todo)


def test_nested_resource_paths_and_methods() -> None:
    r = resource(path="/users/:userId/todos/:id", schema=Todo)
    assert r.get_list.path == "/users/:userId/todos"
    assert r.get_list.move.path == "/users/:userId/todos/:id"
    assert r.get_list.remove.method == "PATCH"
    assert r.get_list.remove.path == "/users/:userId/todos"


# -- 2.2 methods and side effects, 2.3 names ----------------------------------------------


def test_member_methods_side_effects_and_names(todos: Resource) -> None:
    table = {
        "get": (todos.get, "GET", None, "Todo.get"),
        "get_list": (todos.get_list, "GET", None, "Todo.get_list"),
        "push": (todos.get_list.push, "POST", True, "Todo.get_list.create"),
        "unshift": (todos.get_list.unshift, "POST", True, "Todo.get_list.create"),
        "assign": (todos.get_list.assign, "POST", True, "Todo.get_list.create"),
        "update": (todos.update, "PUT", True, "Todo.update"),
        "partial_update": (todos.partial_update, "PATCH", True, "Todo.partial_update"),
        "delete": (todos.delete, "DELETE", True, "Todo.delete"),
        "move": (todos.get_list.move, "PATCH", True, "Todo.get_list.partial_update"),
        "remove": (todos.get_list.remove, "PATCH", True, "Todo.get_list.partial_update"),
        "get_page": (todos.get_list.get_page, "GET", None, "Todo.get_list.get_page"),
    }
    for label, (ep, method, side_effect, name) in table.items():
        assert (ep.method, ep.side_effect, ep.name) == (method, side_effect, name), label


def test_member_paths_and_keys(todos: Resource) -> None:
    assert todos.get.key({"id": 1}) == "GET /todos/1"
    assert todos.get_list.key({"userId": 1}) == "GET /todos?userId=1"
    assert todos.get_list.push.key({"userId": 1}, {"title": "x"}) == "POST /todos?userId=1"
    assert todos.get_list.push.key({"title": "x"}) == "POST /todos"
    assert todos.update.key({"id": 1}, {"title": "x"}) == "PUT /todos/1"
    assert todos.partial_update.key({"id": 1}, {}) == "PATCH /todos/1"
    assert todos.delete.key({"id": 1}) == "DELETE /todos/1"
    assert todos.get_list.move.key({"id": 1}, {"userId": 2}) == "PATCH /todos/1"


def test_get_page(todos: Resource) -> None:
    page = todos.get_list.get_page
    assert page.key({"userId": 1, "page": 2}) == "GET /todos?userId=1"
    assert page.key({"userId": 1, "page": 2}) == todos.get_list.key({"userId": 1})
    assert page.url({"userId": 1, "page": 2}) == "/todos?page=2&userId=1"
    assert page.test_key(page.key({"userId": 1, "page": 2}))


def test_get_page_absent_without_pagination_field() -> None:
    r = resource(path="/todos/:id", schema=Todo)
    with pytest.raises(AttributeError, match="pagination_field"):
        r.get_list.get_page  # noqa: B018
    assert not hasattr(r.get_list, "get_page")


def test_paginated_with_function() -> None:
    ep = RestEndpoint(path="/todos", schema=Collection([Todo]))

    def remove_cursor(params: dict[str, Any]) -> list[Any]:
        return [{k: v for k, v in params.items() if k != "cursor"}]

    page = ep.paginated(remove_cursor)
    assert page.key({"cursor": "abc", "userId": 1}) == "GET /todos?userId=1"
    assert page.url({"cursor": "abc"}) == "/todos?cursor=abc"
    assert page.name == "/todos.get_page"


@pytest.mark.parametrize("wrong", [None, 5, "userId=1", {"userId": 1}], ids=["None", "int", "str", "the params dict"])
async def test_paginated_function_returning_no_argument_list_is_a_param_error(api: Any, wrong: object) -> None:
    """`paginated(fn)`: fn returns the list endpoint's arguments; None failed with a bare TypeError and
    the params dict itself (not `[params]`) was read as the arguments ("userId",)."""
    from restlayer.core import Controller

    lists = RestEndpoint(path="/todos", url_prefix=api.url, schema=Collection([Todo]))
    page = lists.paginated(lambda *args: wrong)  # type: ignore[arg-type]  # the misuse under test
    ctrl = Controller()
    try:
        await ctrl.fetch(lists, {"userId": 1})
        state = ctrl.get_state()
        api.requests.clear()
        with pytest.raises(ParamError, match="must return the list endpoint's arguments as a list"):
            await ctrl.fetch(page, {"userId": 1, "page": 2})
        with pytest.raises(ParamError, match="must return the list endpoint's arguments as a list"):
            normalize(page.schema, [{"id": 9}], args=({"userId": 1, "page": 2},), state=state)
        assert api.requests == []
        assert ctrl.get_state() is state
    finally:
        ctrl.close()


async def test_paginated_function_that_raises_is_a_rest_layer_error_naming_it(api: Any) -> None:
    """`paginated(fn)` with an fn that raises (a page call without the field it reads) gave `key()`,
    `ctrl.fetch` and the reads the bare KeyError; it is a RestLayerError naming the function, the
    original as its cause (as an overridden `key()` or `url()` raising is), and no request is sent."""
    from restlayer.core import Controller

    def by_owner(params: dict[str, Any]) -> list[Any]:
        return [{"userId": params["owner"]}]

    page = RestEndpoint(path="/todos", url_prefix=api.url, schema=Collection([Todo])).paginated(by_owner)
    async with Controller() as ctrl:
        calls: list[Callable[[], object]] = [lambda: page.key({"page": 2}), lambda: ctrl.cache(page, {"page": 2})]
        for call in calls:
            with pytest.raises(RestLayerError, match=r"remove_cursor 'by_owner' raised KeyError: 'owner'") as info:
                call()
            assert isinstance(info.value.__cause__, KeyError)
        with pytest.raises(RestLayerError, match=r"remove_cursor 'by_owner' raised KeyError"):
            await ctrl.fetch(page, {"page": 2})
    assert api.requests.matching("GET", "/todos") == []


def test_paginated_needs_a_collection() -> None:
    with pytest.raises(RestLayerError, match="Missing Collection"):
        RestEndpoint(path="/todos", schema=[Todo]).paginated("page")
    with pytest.raises(RestLayerError, match="Missing Collection"):
        RestEndpoint(path="/todos").paginated("page")


def test_paginated_collection_inside_object_schema() -> None:
    schema = {"results": Collection([Todo]), "next": None}
    ep = RestEndpoint(path="/todos", schema=schema, pagination_field="cursor")
    page_schema = ep.get_page.schema
    assert isinstance(page_schema, dict)
    assert page_schema["next"] is None and page_schema["results"] is not schema["results"]
    first = normalize(ep.schema, {"results": [{"id": 1}], "next": "c"}, args=({"userId": 1},))
    result = normalize(
        page_schema,
        {"results": [{"id": 1}, {"id": 2}], "next": None},
        args=({"userId": 1, "cursor": "c"},),
        state=first,
    )
    assert result.entities["[Todo]"]['{"userId":"1"}'] == ["1", "2"]


# -- schemas of the members ---------------------------------------------------------------


def test_member_schemas(todos: Resource) -> None:
    assert todos.get.schema is Todo and todos.update.schema is Todo
    assert todos.partial_update.schema is Todo
    collection = todos.get_list.schema
    assert isinstance(collection, Collection) and collection.key == "[Todo]"
    assert todos.get_list.push.schema is collection.push
    assert todos.get_list.unshift.schema is collection.unshift
    assert todos.get_list.remove.schema is collection.remove
    assert todos.get_list.move.schema is collection.move
    assert isinstance(todos.delete.schema, Invalidate)


def test_delete_schema_for_union_and_other_schemas() -> None:
    union = Union({"users": User, "groups": Group}, "type")
    assert isinstance(resource(path="/x/:id", schema=union).delete.schema, Invalidate)
    values = Values(Todo)
    assert resource(path="/x/:id", schema=values).delete.schema is values


def test_delete_process(todos: Resource) -> None:
    empty: object
    for empty in ({}, None, ""):
        assert todos.delete.process(empty, {"id": 5}) == {"id": 5}
    assert todos.delete.process({"id": 7, "x": 1}, {"id": 5}) == {"id": 7, "x": 1}
    assert todos.delete.process("7", {"id": 5}) == "7"


def test_delete_invalidates_entity_named_by_params(todos: Resource) -> None:
    stored = normalize(todos.get_list.schema, [{"id": 1}, {"id": 2}], args=({},))
    value = todos.delete.process(None, {"id": 1})
    result = normalize(todos.delete.schema, value, args=({"id": 1},), state=stored)
    assert result.result == "1"
    assert result.entities["Todo"]["1"] is INVALID
    assert result.entities["Todo"]["2"] == {"id": 2}


def _lists(*arg_sets: dict[str, Any]) -> Any:
    """A store holding one list per args dict (all with Todo 1 and 2)."""
    state = None
    schema = resource(path="/todos/:id", schema=Todo).get_list.schema
    for args in arg_sets:
        state = normalize(schema, [{"id": 1, "userId": 1}, {"id": 2, "userId": 2}], args=(args,), state=state)
    return state


def test_push_reaches_matching_lists(todos: Resource) -> None:
    state = _lists({"userId": 1}, {"userId": 2}, {}, {"userId": 1, "orderBy": "title"})
    result = normalize(
        todos.get_list.push.schema,
        {"id": 3, "userId": 1},
        args=({"userId": 1}, {"title": "x"}),
        state=state,
    )
    lists = result.entities["[Todo]"]
    assert lists['{"userId":"1"}'] == ["1", "2", "3"]
    assert lists["{}"] == ["1", "2", "3"]
    assert lists['{"orderBy":"title","userId":"1"}'] == ["1", "2", "3"]
    assert lists['{"userId":"2"}'] == ["1", "2"]


def test_unshift_and_remove(todos: Resource) -> None:
    state = _lists({"userId": 1}, {})
    unshifted = normalize(todos.get_list.unshift.schema, {"id": 9}, args=({"userId": 1}, {}), state=state)
    assert unshifted.entities["[Todo]"]['{"userId":"1"}'] == ["9", "1", "2"]
    removed = normalize(todos.get_list.remove.schema, {"id": 1}, args=({"userId": 1},), state=state)
    assert removed.entities["[Todo]"]['{"userId":"1"}'] == ["2"]
    assert removed.entities["[Todo]"]["{}"] == ["2"]


def test_non_filter_argument_keys_reach_the_collection() -> None:
    r = resource(path="/todos/:id", schema=Todo, non_filter_argument_keys=["sort"])
    assert isinstance(r.get_list.schema, Collection)
    names = r.get_list.schema.non_filter_argument_keys
    assert names("sort") and not names("orderBy")
    pattern = re.compile("^sort")
    by_pattern = resource(path="/t/:id", schema=Todo, non_filter_argument_keys=pattern).get_list.schema
    assert isinstance(by_pattern, Collection)
    assert by_pattern.non_filter_argument_keys("sortBy") and not by_pattern.non_filter_argument_keys("order")


def test_get_page_appends_unique(todos: Resource) -> None:
    first = normalize(todos.get_list.schema, [{"id": 1}, {"id": 2}], args=({"userId": 1},))
    page = normalize(
        todos.get_list.get_page.schema,
        [{"id": 2}, {"id": 3}],
        args=({"userId": 1, "page": 2},),
        state=first,
    )
    assert page.entities["[Todo]"]['{"userId":"1"}'] == ["1", "2", "3"]


def test_collection_class_and_endpoint_class() -> None:
    class MyCollection(Collection):
        pass

    class MyEndpoint(RestEndpoint):
        url_prefix = "https://api.example.com"

    r = resource(path="/todos/:id", schema=Todo, collection_class=MyCollection, endpoint_class=MyEndpoint)
    assert type(r.get_list.schema) is MyCollection
    assert find_collection(r.get_list.schema) is r.get_list.schema
    for name in r:
        assert type(r[name]) is MyEndpoint
        assert r[name].url_prefix == "https://api.example.com"
    assert type(r.get_list.push) is MyEndpoint
    assert r.get.key({"id": 1}) == "GET https://api.example.com/todos/1"


def test_options_passed_to_every_member() -> None:
    r = resource(
        path="/todos/:id",
        schema=Todo,
        url_prefix="http://h",
        data_expiry_length=60_000,
        error_expiry_length=1_000,
        invalid_if_stale=True,
        poll_frequency=500,
        error_policy=None,
    )
    for name, ep in r.members().items():
        assert ep.url_prefix == "http://h", name
        assert (ep.data_expiry_length, ep.error_expiry_length) == (60_000, 1_000)
        assert ep.invalid_if_stale is True and ep.poll_frequency == 500
    assert r.get_list.push.data_expiry_length == 60_000


def test_body_option_only_types_the_body() -> None:
    r = resource(path="/todos/:id", schema=Todo, body=None, search_params=None)
    assert r.update.key({"id": 1}, {"title": "x"}) == "PUT /todos/1"
    assert r.get_list.push.key({"userId": 1}, {"title": "x"}) == "POST /todos?userId=1"


# -- the Resource object ----------------------------------------------------------------


def test_members_iteration_and_immutability(todos: Resource) -> None:
    assert list(todos) == ["get", "get_list", "update", "partial_update", "delete"]
    assert list(todos.members()) == list(todos)
    assert todos.members()["get"] is todos.get is todos["get"]
    assert "get" in todos and "create" not in todos and len(todos) == 5
    with pytest.raises(AttributeError, match="immutable"):
        todos.get = todos.update  # type: ignore[misc]
    with pytest.raises(AttributeError, match="no member 'nope'"):
        todos.nope  # type: ignore[attr-defined]  # noqa: B018
    todos.members()["get"] = None  # type: ignore[assignment]
    assert todos.get is not None


def test_extend_with_function(todos: Resource) -> None:
    extended = todos.extend(
        lambda base: {
            "get": base.get.extend(data_expiry_length=0),
            "current": base.get.extend(path="/user", name="Todo.current"),
        }
    )
    assert extended.get.data_expiry_length == 0 and todos.get.data_expiry_length is None
    assert extended.current.url() == "/user"
    assert "current" not in todos
    assert extended.update is todos.update


def test_extend_member_options(todos: Resource) -> None:
    extended = todos.extend(get={"data_expiry_length": 0}, delete={"url_prefix": "http://h"})
    assert extended.get.data_expiry_length == 0
    assert extended.delete.key({"id": 1}) == "DELETE http://h/todos/1"
    assert extended.delete.process(None, {"id": 1}) == {"id": 1}
    assert todos.get.data_expiry_length is None
    assert todos.extend({"get": {"name": "X"}}).get.name == "X"
    with pytest.raises(ParamError, match="no member 'vote'"):
        todos.extend(vote={"method": "POST"})


def test_extend_named_member(todos: Resource) -> None:
    extended = todos.extend("vote", path="/todos/:id/vote", method="POST", body=None)
    vote = extended.vote
    assert (vote.method, vote.side_effect, vote.name) == ("POST", True, "Todo.vote")
    assert vote.key({"id": 1}) == "POST /todos/1/vote"
    assert vote.schema is Todo
    changed = todos.extend("get", data_expiry_length=5)
    assert changed.get.data_expiry_length == 5 and changed.get.name == "Todo.get"
    assert "vote" not in todos


@pytest.mark.parametrize("name", ["members", "extend", "_members"])
def test_a_member_named_like_a_resource_method_is_refused(todos: Resource, name: str) -> None:
    """`team.members` would be the method, never the member (`extend("members", path=...)` is a natural
    name for a team's members): a ParamError naming the clash, in every form of extend."""
    with pytest.raises(ParamError, match=f"{name!r} is an attribute of Resource"):
        todos.extend(name, path="/todos/:id/members")
    with pytest.raises(ParamError, match=f"{name!r} is an attribute of Resource"):
        todos.extend(lambda base: {name: base.get})


def test_extend_refuses_members_that_are_no_endpoints_or_have_no_str_name(todos: Resource) -> None:
    """Refused when the resource is built, not at the first fetch of the member."""
    with pytest.raises(ParamError, match="member 'vote' must be an endpoint"):
        todos.extend(lambda base: {"vote": cast(Any, 5)})  # what a caller's mistake passes, past the checker
    with pytest.raises(ParamError, match="member names must be str, not 5"):
        todos.extend(lambda base: {cast(Any, 5): base.get})
    assert todos.extend(lambda base: {"vote": base.get.extend(method="POST")}).vote.method == "POST"


# -- optimistic responses ------------------------------------------------------------------


class Snapshot:
    """The part of the controller snapshot optimistic responses use."""

    abort = AbortOptimistic("abort")

    def __init__(self, stored: Any = None) -> None:
        self.stored = stored
        self.calls: list[Any] = []

    def get(self, schema: Any, *args: Any) -> Any:
        self.calls.append((schema, args))
        return self.stored


def test_optimistic_option() -> None:
    r = resource(path="/todos/:id", schema=Todo, optimistic=True)
    snap = Snapshot()
    assert r.get.get_optimistic_response is None
    assert present(r.update.get_optimistic_response)(snap, {"id": 1}, {"title": "y"}) == {"id": 1, "title": "y"}
    push = present(r.get_list.push.get_optimistic_response)
    assert push(snap, {"userId": 1}, {"title": "n"}) == {"userId": 1, "title": "n"}
    assert push(snap, {"title": "n"}) == {"title": "n"}
    assert present(r.delete.get_optimistic_response)(snap, {"id": 1}) == {"id": 1}


def test_optimistic_partial_reads_store() -> None:
    r = resource(path="/todos/:id", schema=Todo, optimistic=True)
    stored = Todo(id=1, userId=1, title="old", completed=False)
    snap = Snapshot(stored)
    partial = present(r.partial_update.get_optimistic_response)
    assert partial(snap, {"id": 1}, {"completed": True}) == {
        "id": 1,
        "userId": 1,
        "title": "old",
        "completed": True,
    }
    assert snap.calls == [(Todo, ({"id": 1},))]
    with pytest.raises(AbortOptimistic):
        partial(Snapshot(None), {"id": 1}, {"completed": True})


def test_not_optimistic_by_default(todos: Resource) -> None:
    for ep in (todos.update, todos.partial_update, todos.delete, todos.get_list.push):
        assert ep.get_optimistic_response is None


class SortDoesNotFilter(Collection):
    """`sort` reorders lists but does not filter them: named by overriding the method."""

    def non_filter_argument_keys(self, name: str) -> bool:
        return name == "sort"


async def test_collection_class_method_override_decides_where_creates_land(api: Any) -> None:
    from restlayer.core import Controller

    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, collection_class=SortDoesNotFilter)
    assert isinstance(todos.get_list.schema, SortDoesNotFilter)
    ctrl = Controller()
    try:
        await ctrl.fetch(todos.get_list, userId=1, sort="title")
        created = await ctrl.fetch(todos.get_list.push, {"userId": 1}, {"title": "sorted in", "userId": 1})
        assert present(ctrl.cache(todos.get_list, userId=1, sort="title"))[-1] is created
    finally:
        ctrl.close()


# -- typed path parameters (params=) ---------------------------------------------------


class TodoParams(TypedDict):
    id: int


def test_params_option_reaches_the_item_members_only() -> None:
    typed = resource(path="/todos/:id", schema=Todo, params=TodoParams)
    assert [typed[name].params for name in ("get", "update", "partial_update", "delete")] == [TodoParams] * 4
    assert typed.get_list.params is None  # its path ("/todos") has no `id`
    assert typed.get.extend(data_expiry_length=0).params is TodoParams


def test_params_without_a_path_parameter_is_refused_at_construction() -> None:
    class Filters(TypedDict):
        user_id: int

    with pytest.raises(ParamError, match=r"Filters lacks the path parameter\(s\) id"):
        resource(path="/todos/:id", schema=Todo, params=Filters)
    with pytest.raises(ParamError, match="params must be a TypedDict class"):
        RestEndpoint(path="/todos/:id", params=dict)
    with pytest.raises(ParamError, match="params must be a TypedDict class"):
        RestEndpoint(path="/todos/:id", params={"id": 1})


async def test_typed_params_fetch_like_untyped_ones(api: Any) -> None:
    from restlayer.core import Controller

    typed = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, params=TodoParams)
    assert typed.get.url({"id": 1}) == f"{api.url}/todos/1"
    ctrl = Controller()
    try:
        todo = await ctrl.fetch(typed.get, {"id": 1})
        assert isinstance(todo, Todo) and todo.id == 1
        assert ctrl.cache(typed.get, {"id": 1}) is todo
    finally:
        ctrl.close()


# -- assign belongs to Values collections -------------------------------------------------


async def test_assign_on_a_list_collection_is_refused_before_sending(api: Any) -> None:
    from restlayer.core import Controller

    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url)
    ctrl = Controller()
    try:
        await ctrl.fetch(todos.get_list, userId=1)
        state = ctrl.get_state()
        api.requests.clear()
        with pytest.raises(ParamError, match=r"assign.*Values.*push"):
            await ctrl.fetch(todos.get_list.assign, {"userId": 1}, {"title": "x", "userId": 1})
        with pytest.raises(ParamError, match=r"assign.*Values.*push"):
            await todos.get_list.assign({"userId": 1}, {"title": "x", "userId": 1})
        assert api.requests == []
        assert ctrl.get_state() is state
    finally:
        ctrl.close()


async def test_delete_on_a_union_resource_deletes_the_member_storing_the_pk(api: Any) -> None:
    """The server's `{}` reply reads as the URL params, which name no type: the delete failed after it was done."""
    from restlayer.core import Controller

    kinds = Union({"todos": Todo, "users": User}, lambda value, parent, key: "todos" if "title" in value else None)
    items = resource(path="/todos/:id", schema=kinds, url_prefix=api.url)
    ctrl = Controller()
    try:
        await ctrl.fetch(items.get_list, userId=1)
        assert await ctrl.fetch(items.delete, id=1) == {"id": 1}
        assert [item.pk() for item in present(ctrl.cache(items.get_list, userId=1))] == ["2", "3"]
    finally:
        ctrl.close()


def test_a_too_fast_poll_frequency_is_warned_about_once_not_once_per_member(caplog: pytest.LogCaptureFixture) -> None:
    class Item(Entity):
        id: int = 0

    with caplog.at_level("WARNING", logger="restlayer"):
        items = resource(path="/items/:id", schema=Item, poll_frequency=37)  # 37 ms: seconds meant, surely
        items.get.extend(name="again")
    warned = [r for r in caplog.records if "poll_frequency=37" in r.getMessage()]
    assert len(warned) == 1


@pytest.mark.parametrize("value", [None, "Todo", 5])
def test_a_resource_without_a_real_schema_is_refused_where_defined(value: object) -> None:
    with pytest.raises(DefinitionError, match="resource needs a schema"):
        resource(path="/todos/:id", schema=value)  # type: ignore[call-overload]
