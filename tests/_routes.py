"""Test-only routes mounted on the example API server (see ``api_server`` in conftest).

They reproduce awkward server behaviour (HTML error pages, bad JSON, odd content
types, slow replies, arbitrary statuses) so client code can be tested against a
real HTTP server instead of mocks.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator
from functools import lru_cache

from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import BaseRoute, Route

from examples.todo_api.extras import echo, file, redirect, set_cookie, status, text, todo_list

ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


HTML_404 = "<!doctype html>\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>\n"

#: A proxy's styled error page: CSS, a script and a comment around the words, text with entities.
HTML_502 = (
    "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title>\n"
    "<style type='text/css'>body { font-family: sans-serif; color: #333 }</style>\n"
    "<script>window.dataLayer = [];</script></head>\n"
    "<body><!-- upstream: app-3 --><h1>Bad Gateway</h1><p>Tom &amp; Jerry&#39;s &lt;api&gt; is down</p></body></html>\n"
)


def _int_param(request: Request, name: str, default: int) -> int:
    """An integer query parameter, ``default`` when absent or malformed."""
    try:
        return int(request.query_params.get(name, default))
    except ValueError:
        return default


async def html404(request: Request) -> Response:
    """A 404 as a proxy or framework would send it: an HTML page, not JSON."""
    return HTMLResponse(HTML_404, status_code=404)


async def html502(request: Request) -> Response:
    """A 502 as a reverse proxy sends it: a styled HTML page with a script and a comment."""
    return HTMLResponse(HTML_502, status_code=502)


async def error500(request: Request) -> Response:
    """A 500 with a JSON error body."""
    return JSONResponse({"message": "boom"}, status_code=500)


async def error503(request: Request) -> Response:
    """A 503 (service unavailable) with a JSON error body."""
    return JSONResponse({"message": "unavailable"}, status_code=503)


async def invalid_json(request: Request) -> Response:
    """Claims ``application/json`` but the body does not parse."""
    return Response(b"not json", status_code=200, media_type="application/json")


async def slow(request: Request) -> Response:
    """Waits ``ms`` milliseconds (default 100) before replying ``{"slept": ms}``."""
    ms = _int_param(request, "ms", 100)
    await asyncio.sleep(ms / 1000)
    return JSONResponse({"slept": ms})


async def no_content_type(request: Request) -> Response:
    """Body ``abc`` with no Content-Type header at all."""
    return Response(b"abc", status_code=200)


async def vnd_json(request: Request) -> Response:
    """JSON under a vendor media type with a charset parameter."""
    return Response(b'{"id":1,"x":2}', media_type="application/vnd.api+json; charset=utf-8")


async def drip(request: Request) -> Response:
    """A JSON reply sent one space every ``ms`` milliseconds (``chunks`` of them), then ``{}``."""
    chunks = _int_param(request, "chunks", 10)
    ms = _int_param(request, "ms", 100)

    async def body() -> AsyncIterator[bytes]:
        for _ in range(chunks):
            yield b" "
            await asyncio.sleep(ms / 1000)
        yield b"{}"

    return StreamingResponse(body(), media_type="application/json")


@lru_cache(maxsize=8)
def _gzipped_zeros(size: int) -> bytes:
    return gzip.compress(b"0" * size, compresslevel=9)


async def gzip_zeros(request: Request) -> Response:
    """``kib`` KiB of ``0`` characters sent gzip-compressed (a small reply that decodes large)."""
    size = max(0, _int_param(request, "kib", 1)) * 1024
    return Response(_gzipped_zeros(size), media_type="text/plain", headers={"Content-Encoding": "gzip"})


async def deep_json(request: Request) -> Response:
    """Valid JSON: ``depth`` nested lists, ``[[[...]]]``."""
    depth = max(1, _int_param(request, "depth", 100_000))
    return Response(b"[" * depth + b"]" * depth, media_type="application/json")


async def truncated(request: Request) -> Response:
    """Declares 100000 bytes, sends 4 chunks of 1000, then drops the connection."""

    async def body() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b"x" * 1000
        raise ConnectionResetError("dropped by the test route")

    return StreamingResponse(body(), media_type="application/octet-stream", headers={"Content-Length": "100000"})


async def reply(request: Request) -> Response:
    """Any method: status ``status`` (default 200) with the text of ``body`` as an ``application/json`` body,
    for replies whose exact shape the example API never sends."""
    body = request.query_params.get("body", "")
    return Response(body.encode(), status_code=_int_param(request, "status", 200), media_type="application/json")


async def bad_gzip(request: Request) -> Response:
    """Status ``status`` (default 200), claiming a gzip-encoded JSON body but sending plain bytes that do not decode."""
    return Response(
        b"this is not gzip",
        status_code=_int_param(request, "status", 200),
        media_type="application/json",
        headers={"Content-Encoding": "gzip"},
    )


async def empty_object(request: Request) -> Response:
    """Any method: ``{}``, as json-server answers a DELETE."""
    return JSONResponse({})


async def todo_map(request: Request) -> Response:
    """Two todos in a JSON *object* keyed by id, where a client may expect a list."""
    return JSONResponse(
        {
            "1": {"id": 1, "userId": 1, "title": "one", "completed": False},
            "2": {"id": 2, "userId": 1, "title": "two", "completed": True},
        }
    )


#: Failures left per ``key`` of ``/_test/flaky`` (the server's own thread only).
_FLAKY_FAILURES: dict[str, int] = {}


async def flaky(request: Request) -> Response:
    """Any method: the first ``fail`` requests (default 2) per ``key`` get status ``status``
    (default 503, with ``Retry-After: after`` when given); later ones ``{"ok": true}``."""
    key = request.query_params.get("key", "")
    left = _FLAKY_FAILURES.setdefault(key, _int_param(request, "fail", 2))
    if left > 0:
        _FLAKY_FAILURES[key] = left - 1
        after = request.query_params.get("after")
        headers = {"Retry-After": after} if after is not None else None
        code = _int_param(request, "status", 503)
        return JSONResponse({"message": f"flaky {code}"}, status_code=code, headers=headers)
    return JSONResponse({"ok": True, "method": request.method})


class _Gate:
    """Requests held by name until the test opens the gate (used on the server's own loop only)."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.arrivals = 0
        self.arrived = asyncio.Condition()


#: Gates by name (tests pick unique names).
_GATES: dict[str, _Gate] = {}


def _gate(request: Request) -> _Gate:
    return _GATES.setdefault(request.path_params["name"], _Gate())


async def gate(request: Request) -> Response:
    """Any method: counted on arrival, then held until ``POST .../open`` (at most ``ms``, default 30000;
    504 after that), then ``{"gate": name, "arrival": n}``. A test can so hold a client mid-request."""
    held = _gate(request)
    held.arrivals += 1
    arrival = held.arrivals
    async with held.arrived:
        held.arrived.notify_all()
    try:
        await asyncio.wait_for(held.opened.wait(), _int_param(request, "ms", 30_000) / 1000)
    except asyncio.TimeoutError:
        return JSONResponse({"message": "the gate was never opened"}, status_code=504)
    return JSONResponse({"gate": request.path_params["name"], "arrival": arrival})


async def gate_open(request: Request) -> Response:
    """``POST``: release every held request of the gate, and every later one at once."""
    _gate(request).opened.set()
    return JSONResponse({"opened": request.path_params["name"]})


async def gate_arrivals(request: Request) -> Response:
    """``GET``: wait until ``count`` requests reached the gate (at most ``ms``, default 10000), then
    ``{"arrivals": n}``; 408 with the same body when fewer came in time."""
    held = _gate(request)
    count = _int_param(request, "count", 1)
    try:
        async with held.arrived:
            await asyncio.wait_for(
                held.arrived.wait_for(lambda: held.arrivals >= count), _int_param(request, "ms", 10_000) / 1000
            )
    except asyncio.TimeoutError:
        return JSONResponse({"arrivals": held.arrivals}, status_code=408)
    return JSONResponse({"arrivals": held.arrivals})


ROUTES: list[BaseRoute] = [
    Route("/_test/flaky", flaky, methods=ALL_METHODS),
    Route("/_test/html404", html404, methods=["GET"]),
    Route("/_test/html502", html502, methods=["GET"]),
    Route("/_test/500", error500, methods=ALL_METHODS),
    Route("/_test/503", error503, methods=ALL_METHODS),
    Route("/_test/invalid-json", invalid_json, methods=ALL_METHODS),
    Route("/_test/file", file, methods=["GET"]),
    Route("/_test/slow", slow, methods=ALL_METHODS),
    Route("/_test/text", text, methods=["GET"]),
    Route("/_test/no-content-type", no_content_type, methods=["GET"]),
    Route("/_test/vnd-json", vnd_json, methods=["GET"]),
    Route("/_test/echo", echo, methods=ALL_METHODS),
    Route("/_test/echo/{rest:path}", echo, methods=ALL_METHODS),
    Route("/_test/status/{code:int}", status, methods=ALL_METHODS),
    Route("/_test/list", todo_list, methods=["GET"]),
    Route("/_test/set-cookie", set_cookie, methods=["GET"]),
    Route("/_test/redirect", redirect, methods=ALL_METHODS),
    Route("/_test/drip", drip, methods=["GET"]),
    Route("/_test/gzip", gzip_zeros, methods=["GET"]),
    Route("/_test/deep-json", deep_json, methods=["GET", "POST"]),
    Route("/_test/truncated", truncated, methods=["GET"]),
    Route("/_test/empty-object/{rest:path}", empty_object, methods=ALL_METHODS),
    Route("/_test/todo-map", todo_map, methods=["GET"]),
    Route("/_test/reply", reply, methods=ALL_METHODS),
    Route("/_test/bad-gzip", bad_gzip, methods=ALL_METHODS),
    Route("/_test/gate/{name}/open", gate_open, methods=["POST"]),
    Route("/_test/gate/{name}/arrivals", gate_arrivals, methods=["GET"]),
    Route("/_test/gate/{name}", gate, methods=ALL_METHODS),
]
