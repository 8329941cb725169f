"""A user's endpoints and schemas: the result type follows the schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from typing_extensions import assert_type

from restlayer import All, Array, Collection, Controller, Entity, Invalidate, Query, RestEndpoint, Union, Values
from restlayer.graphql import GQLEndpoint, GQLEvents, GQLSubscription
from restlayer.schema import Schema


class Todo(Entity):
    id: int = 0
    title: str = ""


class User(Entity):
    id: int = 0
    name: str = ""


URL = "https://api.example.com"

# Schemas are generic in what a read returns.
assert_type(Array(Todo), Array[Todo])
assert_type(Values(Todo), Values[Todo])
assert_type(Collection([Todo]), Collection[list[Todo]])
assert_type(Collection(Values(Todo)), Collection[dict[str, Todo]])
assert_type(All(Todo), All[Todo])
assert_type(All(Union({"todos": Todo}, "type")), All[Entity])  # every member table, read as instances
assert_type(Invalidate(Todo), Invalidate[Todo])
# A deleting endpoint returns its reply (what names the deleted item), never an entity: like `resource().delete`.
assert_type(RestEndpoint(path="/todos/:id", method="DELETE", schema=Invalidate(Todo)), RestEndpoint[Any])


# A Collection's derived schemas read what a call sends: one item, or (`assign`) the dict.
todos = Collection([Todo])
assert_type(todos.push, Schema[Todo])
assert_type(todos.unshift, Schema[Todo])
assert_type(todos.remove, Schema[Todo])
assert_type(todos.move, Schema[Todo])
assert_type(Collection(Values(Todo)).assign, Schema[dict[str, Todo]])


def append_new(existing: list[object], incoming: list[object]) -> list[object]:
    return [*existing, *incoming]


def no_cursor(*args: object) -> list[object]:
    return list(args)


def no_cursor_key(*args: object) -> dict[str, object]:
    return {}


# A key or cursor function given as a lambda (as the collections guide writes them) has typed parameters:
# the call's arguments (none, the params, or params and body), so pyright --strict takes it.
by_user = Collection([Todo], args_key=lambda params: {"userId": params["id"]})
assert_type(by_user, Collection[list[Todo]])
assert_type(Collection([Todo], args_key=lambda params, body: {"userId": body["userId"]}), Collection[list[Todo]])
assert_type(Collection(Values(Todo), args_key=lambda: {}), Collection[dict[str, Todo]])
assert_type(Collection([Todo], args_key=no_cursor_key), Collection[list[Todo]])
same_user = Collection([Todo], create_collection_filter=lambda body: lambda key: key.get("userId") == body["userId"])
assert_type(same_user, Collection[list[Todo]])
by_params = todos.add_with(append_new, lambda params, body: lambda key: key.get("userId") == params["userId"])
assert_type(by_params, Schema[Todo])
assert_type(todos.paginated(lambda params: [{k: v for k, v in params.items() if k != "cursor"}]), Schema[list[Todo]])
assert_type(todos.add_with(append_new), Schema[Todo])
assert_type(todos.add_with(lambda existing, incoming: [*incoming, *existing]), Schema[Todo])  # a lambda's typed
assert_type(todos.move_with(lambda existing, incoming: [*existing, *incoming]), Schema[Todo])
assert_type(todos.move_with(append_new), Schema[Todo])
assert_type(todos.paginated(no_cursor), Schema[list[Todo]])
assert_type(RestEndpoint(path="/todos", method="POST", schema=todos.push), RestEndpoint[Todo])
assert_type(RestEndpoint(path="/todos/:id", method="PATCH", schema=todos.move), RestEndpoint[Todo])


def count(todos: list[Todo], *args: object) -> int:
    return len(todos)


def as_int(value: object, *args: object) -> int:
    return int(str(value))


assert_type(Query(All(Todo), count), Query[int])
assert_type(Query(All(Todo), lambda todos: [t.title for t in todos]), Query[list[str]])  # a lambda's items typed
assert_type(Query(Todo, lambda todo: todo.title), Query[str])
# A lambda that also reads the call's params (`ctrl.get(query, {"title": ...})`): both parameters typed.
by_title = Query(All(Todo), lambda todos, params: [t for t in todos if t.title == params["title"]])
assert_type(by_title, Query[list[Todo]])
assert_type(Controller().get(by_title, {"title": "x"}), list[Todo] | None)
assert_type(Query(Todo, lambda todo, params: todo.title + str(params)), Query[str])


def first_title(todos: list[Todo]) -> str:  # the call's arguments need not be taken
    return todos[0].title if todos else ""


assert_type(Query(All(Todo), first_title), Query[str])
assert_type(Union({"users": User, "todos": Todo}, "type"), Union)
assert_type(RestEndpoint(path="/feed", schema=Union({"users": User, "todos": Todo}, "type")), RestEndpoint[Entity])

# Endpoints carry the result type derived from `schema` (or `process`).
assert_type(RestEndpoint(path="/todos/:id", url_prefix=URL, schema=Todo), RestEndpoint[Todo])
assert_type(RestEndpoint(path="/todos", schema=[Todo]), RestEndpoint[list[Todo]])
assert_type(RestEndpoint(path="/todos", schema=Array(Todo)), RestEndpoint[list[Todo]])
assert_type(RestEndpoint(path="/todos", schema=Collection([Todo])), RestEndpoint[list[Todo]])
assert_type(RestEndpoint(path="/todos", schema=Values(Todo)), RestEndpoint[dict[str, Todo]])
assert_type(RestEndpoint(path="/page", schema={"results": [Todo]}), RestEndpoint[dict[str, Any]])

# A list shorthand of any schema, not only of an Entity class, reads a list.
feed = Union({"users": User, "todos": Todo}, "type")
assert_type(Collection([feed]), Collection[list[Entity]])
assert_type(Collection([feed]).push, Schema[Entity])
assert_type(RestEndpoint(path="/feed", schema=Collection([feed])).push, RestEndpoint[Entity])
assert_type(RestEndpoint(path="/feed", schema=[feed]), RestEndpoint[list[Entity]])
assert_type(RestEndpoint(path="/gone", method="DELETE", schema=[Invalidate(Todo)]), RestEndpoint[list[Any]])
assert_type(RestEndpoint(path="/by-tag", schema=[Values(Todo)]), RestEndpoint[list[dict[str, Todo]]])
assert_type(RestEndpoint(path="/pages", schema=[[Todo]]), RestEndpoint[list[Any]])
assert_type(RestEndpoint(path="/count", process=as_int), RestEndpoint[int])


def loose_count(value: Any, *args: Any) -> int:  # Any in the parameters must not blur the result
    return len(value)


assert_type(RestEndpoint(path="/count", process=loose_count), RestEndpoint[int])
assert_type(RestEndpoint(path="/raw"), RestEndpoint[Any])
# extend(process=..., schema=None) leaves no schema: the result is process's value, as the constructor infers.
# (`process=` alone keeps the type: the endpoint may have a schema, and the result is then the schema's.)
assert_type(RestEndpoint(path="/raw").extend(process=as_int, schema=None), RestEndpoint[int])
assert_type(RestEndpoint(path="/todos/:id", schema=Todo).extend(process=len, schema=None), RestEndpoint[int])
assert_type(RestEndpoint(path="/count", process=as_int).extend(process=str, schema=None), RestEndpoint[str])
assert_type(RestEndpoint(path="/todos/:id", schema=Todo).extend(process=len), RestEndpoint[Todo])

get_todo = RestEndpoint(path="/todos/:id", schema=Todo)
assert_type(get_todo.url({"id": 1}), str)
assert_type(get_todo.key({"id": 1}), str)
assert_type(get_todo.extend(data_expiry_length=0), RestEndpoint[Todo])
assert_type(get_todo.extend(schema=User), RestEndpoint[User])
assert_type(get_todo.extend(schema=[User]), RestEndpoint[list[User]])
assert_type(get_todo.extend(schema=[feed]), RestEndpoint[list[Entity]])
assert_type(get_todo.extend(schema=[[Todo]]), RestEndpoint[list[Any]])  # never the old result type

todo_list = RestEndpoint(path="/todos", schema=Collection([Todo]), pagination_field="page")
assert_type(todo_list.push, RestEndpoint[Todo])
assert_type(todo_list.unshift, RestEndpoint[Todo])
assert_type(todo_list.remove, RestEndpoint[Todo])
assert_type(todo_list.move, RestEndpoint[Todo])
assert_type(todo_list.get_page, RestEndpoint[list[Todo]])
assert_type(todo_list.paginated("cursor"), RestEndpoint[list[Todo]])
assert_type(
    todo_list.paginated(lambda params: [{k: v for k, v in params.items() if k != "cursor"}]), RestEndpoint[list[Todo]]
)
assert_type(todo_list.paginated(no_cursor), RestEndpoint[list[Todo]])
page_endpoint = RestEndpoint(path="/feed", schema={"results": Collection([Todo])}, pagination_field="cursor")
assert_type(page_endpoint.get_page, RestEndpoint[dict[str, Any]])
assert_type(page_endpoint.push, RestEndpoint[Any])  # a list inside a dict: the item type is not inferred
# A Values collection's push (unshift, remove, move) merges keyed entries: what a call sends is not inferred.
by_key = RestEndpoint(path="/todos/by-key", schema=Collection(Values(Todo)))
assert_type(by_key.push, RestEndpoint[Any])
assert_type(by_key.remove, RestEndpoint[Any])
# `assign` reads the dict a call sends, as `Collection(Values(Todo)).assign` does.
assert_type(by_key.assign, RestEndpoint[dict[str, Todo]])
assert_type(todo_list.assign, RestEndpoint[Any])  # a list collection: nothing keyed to infer


# A subclass names its result type explicitly.
class AuthEndpoint(RestEndpoint[Any]):
    def get_headers(self, headers: dict[str, str]) -> dict[str, str]:
        return {**headers, "Authorization": "Bearer token"}


assert_type(AuthEndpoint(path="/me"), AuthEndpoint)


@dataclass(frozen=True)
class File:
    name: str
    content: bytes


class FileDownload(RestEndpoint[File]):
    """The downloads guide's endpoint: the parsed reply (bytes for `content="blob"`) is the raw reply, untyped."""

    content = "blob"

    async def parse_response(self, response: httpx.Response) -> File:
        data = await super().parse_response(response)
        return File(name=response.headers.get("content-disposition", "download"), content=data)


assert_type(FileDownload(path="/file"), FileDownload)

# GraphQL operations are typed the same way.
gql = GQLEndpoint(URL + "/graphql")
assert_type(gql.query("query { todo { id } }", Todo), GQLEndpoint[Todo])
assert_type(gql.query("query { todos { id } }", [Todo]), GQLEndpoint[list[Todo]])
assert_type(gql.query("query { todo { id } }", {"todo": Todo}), GQLEndpoint[dict[str, Any]])
assert_type(gql.query("query { feed { id } }", [feed]), GQLEndpoint[list[Entity]])
assert_type(gql.mutation("mutation { create { id } }", Todo), GQLEndpoint[Todo])
assert_type(gql.mutation("mutation { purge { id } }", [Invalidate(Todo)]), GQLEndpoint[list[Any]])
assert_type(gql.mutation("mutation { remove { id } }", Invalidate(Todo)), GQLEndpoint[Any])
# The query text may be a function of the variables (checked under strict settings like any lambda).
by_kind = gql.query(lambda variables: f"query {{ todos(kind: {variables['kind']}) {{ id }} }}", [Todo])
assert_type(by_kind, GQLEndpoint[list[Todo]])
assert_type(gql.mutation(lambda variables: "mutation { purge { id } }", Todo), GQLEndpoint[Todo])
todo_query = gql.query("query { todo { id } }", Todo)
assert_type(todo_query.extend(data_expiry_length=0), GQLEndpoint[Todo])  # extend keeps the operation's type
assert_type(todo_query.extend(url=URL + "/v2"), GQLEndpoint[Todo])
assert_type(todo_query.extend(schema=User), GQLEndpoint[User])
assert_type(todo_query.extend(schema=[User]), GQLEndpoint[list[User]])
assert_type(todo_query.extend(schema=Values(User)), GQLEndpoint[dict[str, User]])
assert_type(todo_query.extend(schema=[feed]), GQLEndpoint[list[Entity]])
assert_type(todo_query.extend(schema=[[Todo]]), GQLEndpoint[list[Any]])
assert_type(todo_query.extend(process=len, schema=None), GQLEndpoint[int])
changed = gql.subscription("subscription { todoChanged { id } }", {"todoChanged": Todo})
assert_type(changed, GQLSubscription[dict[str, Any]])
assert_type(changed.events(Controller()), GQLEvents[dict[str, Any]])
assert_type(changed.events(), GQLEvents[object])  # not stored: the data as the server sent it
assert_type(gql.subscription("subscription { todoChanged { id } }", Todo), GQLSubscription[Todo])
assert_type(gql.subscription("subscription { todosChanged { id } }", [Todo]), GQLSubscription[list[Todo]])
assert_type(gql.subscription("subscription { feedChanged { id } }", [feed]), GQLSubscription[list[Entity]])

# Mistakes a checker must catch.
Query(All(User), count)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
get_todo.push  # type: ignore[arg-type]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
get_todo.assign  # type: ignore[arg-type]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
gql.query(lambda: "query { todo { id } }", Todo)  # type: ignore[arg-type, misc]  # pyright: ignore[reportArgumentType, reportCallIssue]
get_todo.urll  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
Array(int)  # type: ignore[type-var]  # pyright: ignore[reportCallIssue, reportArgumentType]
RestEndpoint(path="/numbers", schema=[int])  # type: ignore[type-var]  # pyright: ignore[reportCallIssue, reportArgumentType]
