"""The Starlette app: a jsonplaceholder-like REST API plus ``POST /graphql``.

REST resources (``/users``, ``/todos``, ``/comments``) share one generic
implementation driven by :data:`examples.todo_api.db.RESOURCES`. Every JSON reply
is ``application/json``; errors are ``{"message": ...}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from examples.todo_api import extras
from examples.todo_api.db import RESOURCES, Record, Resource, TodoDB, fits_integer_column
from examples.todo_api.graphql_api import REJECT_TITLE, run_graphql
from examples.todo_api.live import EventHub, live_routes
from examples.todo_api.recording import RecordedRequest, RecordingMiddleware, RequestLog

__all__ = ["ApiError", "RecordedRequest", "RequestLog", "create_app"]

DEFAULT_PAGE_SIZE = 10
# Query parameters with a meaning of their own; never treated as field filters.
RESERVED_PARAMS = frozenset({"page", "limit", "orderBy", "expand"})


@dataclass(frozen=True)
class Relation:
    """A related resource reachable with ``?expand=name`` (and ``/{id}/name`` when many)."""

    kind: Literal["one", "many"]
    resource: str
    foreign_key: str  # "one": field of this record; "many": field of the related records


RELATIONS: dict[str, dict[str, Relation]] = {
    "users": {
        "todos": Relation("many", "todos", "userId"),
        "comments": Relation("many", "comments", "userId"),
    },
    "todos": {
        "user": Relation("one", "users", "userId"),
        "comments": Relation("many", "comments", "todoId"),
    },
    "comments": {
        "todo": Relation("one", "todos", "todoId"),
        "user": Relation("one", "users", "userId"),
    },
}


class ApiError(Exception):
    """An error reply: ``status`` with JSON body ``{"message": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status, headers=headers)


def _db(request: Request) -> TodoDB:
    db: TodoDB = request.app.state.db
    return db


# -- parsing and validation -----------------------------------------------------


def _parse_scalar(name: str, raw: str, py_type: type) -> Any:
    """A query-string value converted to the field's type, or a 400."""
    if py_type is bool:
        lowered = raw.lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise ApiError(400, f"{name} must be true or false")
    if py_type is int:
        try:
            number = int(raw)
        except ValueError:
            raise ApiError(400, f"{name} must be an integer") from None
        if not fits_integer_column(number):
            raise ApiError(400, f"{name} is out of range")
        return number
    return raw


def _positive_int(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    value = _parse_scalar(name, raw, int)
    if value < 1:
        raise ApiError(400, f"{name} must be >= 1")
    return int(value)


def _filters(request: Request, res: Resource) -> dict[str, Any]:
    """Exact-match filters from query parameters naming a field; others are ignored."""
    filters: dict[str, Any] = {}
    for name, raw in request.query_params.items():
        if name in RESERVED_PARAMS:
            continue
        if name == "id":
            filters["id"] = _parse_scalar(name, raw, int)
            continue
        f = res.field(name)
        if f is not None:
            filters[name] = _parse_scalar(name, raw, f.py_type)
    return filters


def _order_by(request: Request, res: Resource) -> str:
    order = request.query_params.get("orderBy", "id")
    if order.removeprefix("-") not in res.field_names:
        allowed = ", ".join(res.field_names)
        raise ApiError(400, f"orderBy must be one of {allowed} (optionally prefixed with -)")
    return order


def _expansions(request: Request, res: Resource) -> list[str]:
    """Relation names from ``expand=a,b`` (or repeated ``expand``); unknown -> 400."""
    names = [n.strip() for value in request.query_params.getlist("expand") for n in value.split(",") if n.strip()]
    known = RELATIONS.get(res.name, {})
    for n in names:
        if n not in known:
            raise ApiError(400, f"cannot expand {n!r} on {res.name}")
    return names


def _expand(db: TodoDB, res: Resource, record: Record, names: Sequence[str]) -> Record:
    """``record`` with each named relation embedded (a dict, a list, or None)."""
    if not names:
        return record
    out = dict(record)
    for n in names:
        rel = RELATIONS[res.name][n]
        if rel.kind == "one":
            out[n] = db.get(rel.resource, record[rel.foreign_key])
        else:
            out[n] = db.find(rel.resource, {rel.foreign_key: record["id"]})
    return out


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        raise ApiError(400, "request body is not valid JSON") from None


def _validate(res: Resource, body: Any, *, partial: bool) -> dict[str, Any]:
    """Writable fields from ``body`` type-checked; on create, required/defaults applied.

    ``id`` and unknown fields are ignored (like jsonplaceholder).
    """
    if not isinstance(body, dict):
        raise ApiError(400, "request body must be a JSON object")
    values: dict[str, Any] = {}
    for f in res.fields:
        if f.name not in body:
            if partial:
                continue
            if f.required:
                raise ApiError(400, f"{f.name} is required")
            values[f.name] = f.default
            continue
        value = body[f.name]
        if f.py_type is int:
            ok = isinstance(value, int) and not isinstance(value, bool) and fits_integer_column(value)
        else:
            ok = isinstance(value, f.py_type)
        if not ok:
            raise ApiError(400, f"{f.name} must be of type {_type_name(f.py_type)}")
        if f.required and f.py_type is str and not value.strip():
            raise ApiError(400, f"{f.name} must not be empty")
        values[f.name] = value
    if res.name == "todos" and values.get("title") == REJECT_TITLE:
        raise ApiError(400, "title REJECT is rejected by the server")
    return values


def _type_name(py_type: type) -> str:
    return {str: "string", int: "integer", bool: "boolean"}.get(py_type, py_type.__name__)


# -- REST handlers ----------------------------------------------------------------


def _list_response(request: Request, res: Resource, base_filters: dict[str, Any]) -> Response:
    """The (filtered, ordered, maybe paginated) list; ``X-Total-Count`` = unpaginated size."""
    db = _db(request)
    filters = {**_filters(request, res), **base_filters}
    order = _order_by(request, res)
    expand = _expansions(request, res)
    page = _positive_int(request, "page")
    limit = _positive_int(request, "limit")
    if page is not None and limit is None:
        limit = DEFAULT_PAGE_SIZE
    offset = ((page or 1) - 1) * limit if limit is not None else 0
    rows = db.find(res.name, filters, order_by=order, limit=limit, offset=offset)
    total = db.count(res.name, filters)
    links = extras.link_header(request, page or 1, limit, total) if limit is not None else {}
    return JSONResponse(
        [_expand(db, res, r, expand) for r in rows],
        headers={"X-Total-Count": str(total), **links},
    )


def _resource_routes(res: Resource) -> list[BaseRoute]:
    """The collection, item and nested-list routes of one resource."""

    async def list_items(request: Request) -> Response:
        return _list_response(request, res, {})

    async def create_item(request: Request) -> Response:
        values = _validate(res, await _json_body(request), partial=False)
        record = _db(request).insert(res.name, values)
        _announce(request, f"{res.name}.created", record)
        return JSONResponse(record, status_code=201)

    async def get_item(request: Request) -> Response:
        db = _db(request)
        record = db.get(res.name, request.path_params["id"])
        if record is None:
            raise ApiError(404, "Not found")
        return JSONResponse(_expand(db, res, record, _expansions(request, res)))

    async def update_item(request: Request) -> Response:
        # PUT and PATCH both update only the fields sent: lenient like jsonplaceholder,
        # so a client sending a partial body to PUT does not wipe other fields.
        db = _db(request)
        pk = request.path_params["id"]
        values = _validate(res, await _json_body(request), partial=True)
        if db.get(res.name, pk) is None:
            raise ApiError(404, "Not found")
        updated = db.update(res.name, pk, values)
        if updated is None:
            raise ApiError(404, "Not found")
        _announce(request, f"{res.name}.updated", updated)
        return JSONResponse(updated)

    async def delete_item(request: Request) -> Response:
        if not _db(request).delete(res.name, request.path_params["id"]):
            raise ApiError(404, "Not found")
        _announce(request, f"{res.name}.deleted", {"id": request.path_params["id"]})
        return Response(status_code=204)

    async def collection(request: Request) -> Response:
        if request.method == "POST":
            return await create_item(request)
        return await list_items(request)

    async def item(request: Request) -> Response:
        if request.method in ("PUT", "PATCH"):
            return await update_item(request)
        if request.method == "DELETE":
            return await delete_item(request)
        return await get_item(request)

    # One route per path so a wrong method gets a 405 with the full Allow header.
    routes: list[BaseRoute] = [
        Route(f"/{res.name}", collection, methods=["GET", "POST"], name=f"{res.name}-list"),
        Route(
            f"/{res.name}/{{id:int}}",
            item,
            methods=["GET", "PUT", "PATCH", "DELETE"],
            name=f"{res.name}-item",
        ),
    ]
    for rel_name, rel in RELATIONS.get(res.name, {}).items():
        if rel.kind == "many":
            routes.append(_nested_route(res, rel_name, rel))
    return routes


def _announce(request: Request, event: str, data: Any) -> None:
    """Push a change to the SSE and WebSocket listeners (see ``examples.todo_api.live``)."""
    hub: EventHub = request.app.state.events
    hub.publish(event, data)


def _nested_route(parent: Resource, rel_name: str, rel: Relation) -> Route:
    """``GET /{parent}/{id}/{rel_name}``: the related list, with the usual list options."""
    child = RESOURCES[rel.resource]

    async def nested_list(request: Request) -> Response:
        pk = request.path_params["id"]
        if _db(request).get(parent.name, pk) is None:
            raise ApiError(404, "Not found")
        return _list_response(request, child, {rel.foreign_key: pk})

    return Route(f"/{parent.name}/{{id:int}}/{rel_name}", nested_list, methods=["GET"])


async def graphql_endpoint(request: Request) -> Response:
    """``POST /graphql`` with ``{"query", "variables"?, "operationName"?}``.

    400 only when the body is not a usable GraphQL request; any GraphQL error
    (syntax, validation, execution) is a 200 with an ``errors`` list.
    """
    try:
        payload = json.loads(await request.body())
    except ValueError:
        return JSONResponse({"errors": [{"message": "body is not valid JSON"}]}, status_code=400)
    if not isinstance(payload, dict) or not isinstance(payload.get("query"), str):
        return JSONResponse({"errors": [{"message": "missing query"}]}, status_code=400)
    variables = payload.get("variables")
    operation_name = payload.get("operationName")
    if variables is not None and not isinstance(variables, dict):
        return JSONResponse({"errors": [{"message": "variables must be an object"}]}, status_code=400)
    if operation_name is not None and not isinstance(operation_name, str):
        return JSONResponse({"errors": [{"message": "operationName must be a string"}]}, status_code=400)
    events: EventHub = request.app.state.events
    result = await run_graphql(_db(request), payload["query"], variables, operation_name, events)
    return JSONResponse(result)


# -- error handlers ---------------------------------------------------------------


async def _api_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return _error(exc.status, exc.message)


async def _http_error_handler(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (unknown route, wrong method) as JSON too."""
    assert isinstance(exc, HTTPException)
    messages = {404: "Not found", 405: "Method not allowed"}
    message = messages.get(exc.status_code, str(exc.detail))
    if exc.status_code in (204, 304):
        return Response(status_code=exc.status_code, headers=exc.headers)
    return _error(exc.status_code, message, exc.headers)


async def _server_error_handler(request: Request, exc: Exception) -> Response:
    return _error(500, "Internal server error")


def create_app(
    db: TodoDB | None = None,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    request_log: RequestLog | None = None,
) -> Starlette:
    """Build the app over ``db`` (a fresh seeded :class:`TodoDB` when None).

    ``extra_routes`` are matched before the API's own (tests mount test-only
    routes this way). ``app.state`` holds ``db`` and ``requests`` (the
    :class:`RequestLog` every request is appended to).
    """
    db = db if db is not None else TodoDB()
    log = request_log if request_log is not None else RequestLog()
    routes: list[BaseRoute] = list(extra_routes)
    for res in RESOURCES.values():
        routes.extend(_resource_routes(res))
    routes.append(Route("/graphql", graphql_endpoint, methods=["POST"], name="graphql"))
    routes.extend(extras.ROUTES)
    routes.extend(live_routes())
    app = Starlette(
        routes=routes,
        middleware=[Middleware(RecordingMiddleware, log=log)],
        exception_handlers={
            ApiError: _api_error_handler,
            HTTPException: _http_error_handler,
            Exception: _server_error_handler,
        },
    )
    app.state.db = db
    app.state.requests = log
    app.state.events = EventHub()
    return app
