"""The GraphQL side of the example API (graphql-core), over the same sqlite data.

Resolvers find the database in ``info.context["db"]`` so one schema object serves
every app instance; mutations announce their change on ``info.context["events"]``
(the app's ``EventHub``: ``/events``, ``/ws`` and subscriptions) like the REST routes.
``id`` fields are GraphQL ``ID`` and so travel as strings.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from graphql import (
    ExecutionResult,
    GraphQLArgument,
    GraphQLBoolean,
    GraphQLError,
    GraphQLField,
    GraphQLID,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLResolveInfo,
    GraphQLSchema,
    GraphQLString,
    execute,
    parse,
    subscribe,
    validate,
)

from examples.todo_api.db import Record, TodoDB

REJECT_TITLE = "REJECT"

if TYPE_CHECKING:  # generic only for type checkers (not at runtime on Python 3.10)
    from examples.todo_api.live import EventHub

    Info = GraphQLResolveInfo[dict[str, Any]]
else:
    Info = GraphQLResolveInfo


def _db(info: Info) -> TodoDB:
    """The database of the app executing this operation."""
    db: TodoDB = info.context["db"]
    return db


def _announce(info: Info, event: str, record: Record) -> Record:
    """Push a change to the listeners of the app's event feed (when it has one); returns `record`."""
    hub: EventHub | None = info.context.get("events")
    if hub is not None:
        hub.publish(event, record)
    return record


def _parse_id(value: Any) -> int:
    """GraphQL ID (a string, or an int literal) -> int primary key."""
    try:
        return int(value)
    except (TypeError, ValueError):
        raise GraphQLError(f"Invalid id: {value!r}") from None


def _resolve_user_todos(user: Record, info: Info) -> list[Record]:
    return _db(info).find("todos", {"userId": user["id"]})


def _resolve_todo_user(todo: Record, info: Info) -> Record | None:
    return _db(info).get("users", todo["userId"])


def _resolve_user(_root: Any, info: Info, id: Any) -> Record | None:
    return _db(info).get("users", _parse_id(id))


def _resolve_users(_root: Any, info: Info) -> list[Record]:
    return _db(info).find("users")


def _resolve_todo(_root: Any, info: Info, id: Any) -> Record | None:
    return _db(info).get("todos", _parse_id(id))


def _resolve_todos(_root: Any, info: Info, userId: int | None = None) -> list[Record]:
    filters = {} if userId is None else {"userId": userId}
    return _db(info).find("todos", filters)


def _check_title(title: str) -> None:
    """Same rules as REST: non-empty, and "REJECT" is refused (optimistic rollback demos)."""
    if not title.strip():
        raise GraphQLError("title must not be empty")
    if title == REJECT_TITLE:
        raise GraphQLError("title REJECT is rejected by the server")


def _resolve_update_todo(
    _root: Any,
    info: Info,
    id: Any,
    title: str | None = None,
    completed: bool | None = None,
) -> Record:
    pk = _parse_id(id)
    values: dict[str, Any] = {}
    if title is not None:
        _check_title(title)
        values["title"] = title
    if completed is not None:
        values["completed"] = completed
    updated = _db(info).update("todos", pk, values)
    if updated is None:
        raise GraphQLError(f"Todo {pk} not found")
    return _announce(info, "todos.updated", updated)


def _resolve_create_todo(_root: Any, info: Info, userId: int, title: str) -> Record:
    _check_title(title)
    created = _db(info).insert("todos", {"userId": userId, "title": title, "completed": False})
    return _announce(info, "todos.created", created)


UserType: GraphQLObjectType = GraphQLObjectType(
    "User",
    lambda: {
        "id": GraphQLField(GraphQLNonNull(GraphQLID)),
        "username": GraphQLField(GraphQLString),
        "name": GraphQLField(GraphQLString),
        "email": GraphQLField(GraphQLString),
        "todos": GraphQLField(GraphQLNonNull(GraphQLList(GraphQLNonNull(TodoType))), resolve=_resolve_user_todos),
    },
)

TodoType: GraphQLObjectType = GraphQLObjectType(
    "Todo",
    lambda: {
        "id": GraphQLField(GraphQLNonNull(GraphQLID)),
        "title": GraphQLField(GraphQLString),
        "completed": GraphQLField(GraphQLBoolean),
        "userId": GraphQLField(GraphQLInt),
        "user": GraphQLField(UserType, resolve=_resolve_todo_user),
    },
)


async def _subscribe_todo_changed(root: Any, info: Info, id: str | None = None) -> AsyncIterator[Record]:
    """Each created or updated todo (only todo `id` when given, starting with its current state)."""
    hub = info.context["events"]
    queue = hub.listen()
    try:
        if id is not None:
            current = info.context["db"].get("todos", int(id))
            if current is not None:
                yield current
        while True:
            event = await queue.get()
            if event.type in ("todos.created", "todos.updated") and (id is None or str(event.data["id"]) == id):
                yield event.data
    finally:
        hub.unlisten(queue)


schema = GraphQLSchema(
    subscription=GraphQLObjectType(
        "Subscription",
        {
            "todoChanged": GraphQLField(
                TodoType,
                args={"id": GraphQLArgument(GraphQLID)},
                subscribe=_subscribe_todo_changed,
                resolve=lambda record, info, **args: record,
            ),
        },
    ),
    query=GraphQLObjectType(
        "Query",
        {
            "user": GraphQLField(
                UserType,
                args={"id": GraphQLArgument(GraphQLNonNull(GraphQLID))},
                resolve=_resolve_user,
            ),
            "users": GraphQLField(GraphQLNonNull(GraphQLList(GraphQLNonNull(UserType))), resolve=_resolve_users),
            "todo": GraphQLField(
                TodoType,
                args={"id": GraphQLArgument(GraphQLNonNull(GraphQLID))},
                resolve=_resolve_todo,
            ),
            "todos": GraphQLField(
                GraphQLNonNull(GraphQLList(GraphQLNonNull(TodoType))),
                args={"userId": GraphQLArgument(GraphQLInt)},
                resolve=_resolve_todos,
            ),
        },
    ),
    mutation=GraphQLObjectType(
        "Mutation",
        {
            "updateTodo": GraphQLField(
                TodoType,
                args={
                    "id": GraphQLArgument(GraphQLNonNull(GraphQLID)),
                    "title": GraphQLArgument(GraphQLString),
                    "completed": GraphQLArgument(GraphQLBoolean),
                },
                resolve=_resolve_update_todo,
            ),
            "createTodo": GraphQLField(
                TodoType,
                args={
                    "userId": GraphQLArgument(GraphQLNonNull(GraphQLInt)),
                    "title": GraphQLArgument(GraphQLNonNull(GraphQLString)),
                },
                resolve=_resolve_create_todo,
            ),
        },
    ),
)


async def run_graphql(
    db: TodoDB,
    query: str,
    variables: dict[str, Any] | None = None,
    operation_name: str | None = None,
    events: EventHub | None = None,
) -> dict[str, Any]:
    """Parse, validate and execute one operation; returns the spec's response map.

    Mutations announce their changes on `events` (the app's event feed), when given.
    Request errors (syntax, validation) give ``{"errors": [...]}`` with no ``data``;
    execution errors give ``{"data": ..., "errors": [...]}``.
    """
    try:
        document = parse(query)
    except GraphQLError as error:
        return {"errors": [error.formatted]}
    validation_errors = validate(schema, document)
    if validation_errors:
        return {"errors": [e.formatted for e in validation_errors]}
    result = execute(
        schema,
        document,
        variable_values=variables,
        operation_name=operation_name,
        context_value={"db": db, "events": events},
    )
    if inspect.isawaitable(result):
        result = await result
    assert isinstance(result, ExecutionResult)
    if result.data is None and result.errors and not _started_execution(result):
        return {"errors": [e.formatted for e in result.errors]}
    return dict(result.formatted)


def _started_execution(result: ExecutionResult) -> bool:
    """False when execution never began (bad variables, unknown operation): no ``data`` then."""
    return any(e.path is not None for e in result.errors or [])


async def run_subscription(
    db: TodoDB, events: Any, query: str, variables: dict[str, Any] | None = None
) -> AsyncIterator[dict[str, Any]] | list[Any]:
    """Start a subscription: an async iterator of response maps, or the list of request errors."""
    try:
        document = parse(query)
    except GraphQLError as error:
        return [error.formatted]
    validation_errors = validate(schema, document)
    if validation_errors:
        return [e.formatted for e in validation_errors]
    result: Any = subscribe(schema, document, variable_values=variables, context_value={"db": db, "events": events})
    if inspect.isawaitable(result):
        result = await result
    if isinstance(result, ExecutionResult):
        return [e.formatted for e in result.errors or []] or [{"message": "not a subscription"}]
    return _formatted(result)


async def _formatted(results: AsyncIterator[ExecutionResult]) -> AsyncIterator[dict[str, Any]]:
    try:
        async for result in results:
            yield dict(result.formatted)
    finally:
        aclose = getattr(results, "aclose", None)
        if aclose is not None:
            await aclose()
