"""Request recording: an ASGI middleware that keeps every request the server saw.

Tests use it to assert exactly what a client sent (method, path, query, headers,
body) without mocking the transport.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as received: header names are lower-cased, body is raw bytes."""

    method: str
    path: str
    query: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        """The body decoded as JSON (raises ``ValueError`` when it is not JSON)."""
        return json.loads(self.body)

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (undecodable bytes replaced)."""
        return self.body.decode("utf-8", errors="replace")

    @property
    def query_params(self) -> dict[str, str]:
        """The query string as a dict; a repeated key keeps its last value."""
        return dict(parse_qsl(self.query, keep_blank_values=True))

    @property
    def url(self) -> str:
        """``path`` plus ``?query`` when there is one."""
        return f"{self.path}?{self.query}" if self.query else self.path


class RequestLog(list[RecordedRequest]):
    """The recorded requests, oldest first, plus ``total``: a count never reset by clear()."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def record(self, request: RecordedRequest) -> None:
        """Append ``request`` and bump the total counter."""
        self.append(request)
        self.total += 1

    def matching(self, method: str | None = None, path: str | None = None) -> list[RecordedRequest]:
        """The recorded requests with this method (any case) and/or exact path."""
        return [
            r for r in list(self) if (method is None or r.method == method.upper()) and (path is None or r.path == path)
        ]


class RecordingMiddleware:
    """Pure ASGI middleware: buffers the request body, records it, then replays it."""

    def __init__(self, app: ASGIApp, log: RequestLog) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        buffered: list[Message] = []
        chunks: list[bytes] = []
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", []):
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self.log.record(
            RecordedRequest(
                method=scope["method"],
                path=scope["path"],
                query=scope.get("query_string", b"").decode("latin-1"),
                headers=headers,
                body=b"".join(chunks),
            )
        )

        async def replay() -> Message:
            if buffered:
                return buffered.pop(0)
            return await receive()

        await self.app(scope, replay, send)
