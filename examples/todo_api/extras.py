"""Routes the guides call besides the REST resources: echo, a file, plain text, any status, and pages.

- ``/echo`` (any method, any sub-path): what the server received, as JSON;
- ``/file``: a 1x1 PNG with ``Content-Disposition: attachment``;
- ``/text``: ``text/plain`` ``hello``;
- ``/status/{code}``: replies with that status (``{"message": "status N"}``);
- ``/redirect?to=URL&code=N`` (any method): a redirect (default 302) to ``to``;
- ``/set-cookie``: sets a session cookie ``session=s3cret``;
- ``/list?n=N``: ``n`` (default 100) todo-like dicts, a large reply made to order;
- ``/pages/todos``: todos a page at a time, the next page number in the body
  (``{"results": [...], "page": 1, "next": 2}``);
- ``/pages/todos-by-url``: the same with the next page's URL in the body
  (``{"results": [...], "next": "http://.../pages/todos-by-url?page=2&limit=10"}``).

(``/todos?page=N&limit=M`` itself sends the next page in a ``Link`` header.)
"""

from __future__ import annotations

import base64
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = [
    "PIXEL_PNG",
    "ROUTES",
    "echo",
    "file",
    "link_header",
    "redirect",
    "set_cookie",
    "status",
    "text",
    "todo_list",
]

_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_PAGE_SIZE = 10
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


async def echo(request: Request) -> Response:
    """What the server received: method, path, query, headers (names lower-cased), body."""
    body = await request.body()
    return JSONResponse(
        {
            "method": request.method,
            "path": request.url.path,
            "query": request.url.query,
            "headers": {k.lower(): v for k, v in request.headers.items()},
            "body": body.decode("utf-8", errors="replace"),
        }
    )


async def file(request: Request) -> Response:
    """A binary download: a 1x1 PNG sent as an attachment."""
    return Response(
        PIXEL_PNG, media_type="image/png", headers={"Content-Disposition": 'attachment; filename="pixel.png"'}
    )


async def text(request: Request) -> Response:
    """``text/plain`` body ``hello``."""
    return PlainTextResponse("hello")


async def status(request: Request) -> Response:
    """Status ``code`` with ``{"message": "status N"}``, or no body where none is allowed."""
    code: int = request.path_params["code"]
    if code in (204, 205, 304) or 100 <= code < 200:
        return Response(status_code=code)
    return JSONResponse({"message": f"status {code}"}, status_code=code)


def _int_param(request: Request, name: str, default: int) -> int:
    """An integer query parameter; ``default`` when absent or malformed."""
    try:
        return int(request.query_params.get(name, default))
    except ValueError:
        return default


async def redirect(request: Request) -> Response:
    """A redirect with status ``code`` (default 302) to the URL in ``to``."""
    target = request.query_params.get("to")
    if not target:
        return JSONResponse({"message": "to is required"}, status_code=400)
    return RedirectResponse(target, status_code=_int_param(request, "code", 302))


async def set_cookie(request: Request) -> Response:
    """Sets a session cookie ``session=s3cret`` for the whole host."""
    response = JSONResponse({"ok": True})
    response.set_cookie("session", "s3cret", path="/")
    return response


async def todo_list(request: Request) -> Response:
    """``n`` (default 100, at most 100000) todo-like dicts: a reply as large as asked."""
    n = max(0, min(100_000, _int_param(request, "n", 100)))
    return JSONResponse(
        [{"id": i, "userId": i % 10 + 1, "title": f"todo {i}", "completed": i % 2 == 0} for i in range(1, n + 1)]
    )


def _page_args(request: Request) -> tuple[int, int]:
    """``page`` (from 1) and ``limit`` of a paged request; malformed values fall back to the defaults."""
    try:
        page = max(1, int(request.query_params.get("page", 1)))
        limit = max(1, min(100, int(request.query_params.get("limit", _PAGE_SIZE))))
    except ValueError:
        return 1, _PAGE_SIZE
    return page, limit


def _todo_page(request: Request) -> tuple[list[dict[str, Any]], int, int, bool]:
    """One page of todos: (rows, page, limit, whether another page follows)."""
    page, limit = _page_args(request)
    db = request.app.state.db
    rows = db.find("todos", {}, limit=limit, offset=(page - 1) * limit)
    return rows, page, limit, page * limit < db.count("todos", {})


async def todos_page_number(request: Request) -> Response:
    """A page of todos; ``next`` is the next page number, or null on the last page."""
    rows, page, _, more = _todo_page(request)
    return JSONResponse({"results": rows, "page": page, "next": page + 1 if more else None})


async def todos_next_url(request: Request) -> Response:
    """A page of todos; ``next`` is the next page's absolute URL, or null on the last page."""
    rows, page, limit, more = _todo_page(request)
    following = str(request.url.include_query_params(page=page + 1, limit=limit)) if more else None
    return JSONResponse({"results": rows, "next": following})


def link_header(request: Request, page: int, limit: int, total: int) -> dict[str, str]:
    """An RFC 8288 ``Link`` header naming the next (and previous) page, when there is one."""
    links = []
    if page * limit < total:
        links.append(f'<{request.url.include_query_params(page=page + 1, limit=limit)}>; rel="next"')
    if page > 1:
        links.append(f'<{request.url.include_query_params(page=page - 1, limit=limit)}>; rel="prev"')
    return {"Link": ", ".join(links)} if links else {}


ROUTES: list[BaseRoute] = [
    Route("/echo", echo, methods=_ALL_METHODS),
    Route("/echo/{rest:path}", echo, methods=_ALL_METHODS),
    Route("/file", file, methods=["GET"]),
    Route("/text", text, methods=["GET"]),
    Route("/status/{code:int}", status, methods=_ALL_METHODS),
    Route("/redirect", redirect, methods=_ALL_METHODS),
    Route("/set-cookie", set_cookie, methods=["GET", "POST"]),
    Route("/list", todo_list, methods=["GET"]),
    Route("/pages/todos", todos_page_number, methods=["GET"]),
    Route("/pages/todos-by-url", todos_next_url, methods=["GET"]),
]
