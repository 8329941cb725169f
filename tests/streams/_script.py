"""Scripted push endpoints for fault tests: each test writes a `Script`, the server plays it.

``GET /_stream/sse?key=K`` and ``/_stream/ws?key=K`` send the script's events after
the client's last event id (``Last-Event-ID``, or the WebSocket subscribe
message), drop the first connection after ``drop_after`` events (an SSE one in
the middle of an event), and record the last id each connection asked for.
``GET /_stream/paced?key=K`` sends the bursts of tick events posted to
``/_stream/paced/burst?key=K``, each at its rate, paced by the server's clock.
``GET /_stream/redirect?to=URL`` answers with a 302 redirect to ``URL``.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from examples.todo_api.extras import redirect


@dataclass
class Script:
    """Events as (id, type, data text); `data` is sent as is, so it may be malformed."""

    events: list[tuple[int, str, str]]
    drop_after: int | None = None
    retry_ms: int | None = None
    status: int = 200
    #: Hold each connection open after its events (else the server ends it: the client reconnects).
    hold: bool = True
    #: Raw SSE text sent after the events of each connection (frames the events cannot express).
    tail: str = ""
    #: Raw SSE text sent first on each connection (a byte order mark, say); all of it is sent as UTF-8.
    head: str = ""
    #: The SSE reply's Content-Type (its charset, if any, is only a label: the bytes are UTF-8).
    content_type: str = "text/event-stream"
    #: The last event id each connection resumed from ("" when none), in order.
    resumed_from: list[str] = field(default_factory=list)
    #: The request headers of each SSE connection as sent, in order (names in lower case, repeats kept).
    sent_headers: list[list[tuple[str, str]]] = field(default_factory=list)
    dropped: bool = False
    #: The close code of the WebSocket connection dropped after `drop_after` events.
    drop_code: int = 1011
    #: Close each WebSocket connection with this code as soon as it is accepted (before reading anything).
    refuse_code: int | None = None
    #: Set once the server has closed a connection with `refuse_code` (set from the server's thread).
    refused: threading.Event = field(default_factory=threading.Event)
    #: Accept only WebSocket handshakes offering this subprotocol (and pick it); refuse others (403).
    subprotocol: str | None = None
    #: Accept every WebSocket handshake choosing this subprotocol, offered or not.
    forced_subprotocol: str | None = None


SCRIPTS: dict[str, Script] = {}


def _pending(script: Script, last: str) -> list[tuple[int, str, str]]:
    after = int(last) if last.isdigit() else 0
    return [e for e in script.events if e[0] > after]


async def _forever() -> None:
    """Hold a connection open until the client leaves (the server cancels the handler then)."""
    await asyncio.get_running_loop().create_future()


async def sse(request: Request) -> Response:
    script = SCRIPTS[request.query_params["key"]]
    last = request.headers.get("last-event-id", "")
    script.resumed_from.append(last)
    script.sent_headers.append([(name.decode(), value.decode()) for name, value in request.headers.raw])
    if script.status != 200:
        moved = {"location": "/_stream/moved"} if 300 <= script.status < 400 else None
        return Response(status_code=script.status, headers=moved)
    events = _pending(script, last)

    async def body() -> AsyncIterator[bytes]:
        if script.head:
            yield script.head.encode()
        if script.retry_ms is not None:
            yield f"retry: {script.retry_ms}\n\n".encode()
        for count, (event_id, event, data) in enumerate(events):
            if script.drop_after == count and not script.dropped:
                script.dropped = True
                yield f"id: {event_id}\nevent: {event}\ndata: {data[: len(data) // 2]}".encode()
                raise ConnectionResetError("dropped by the script")
            yield f"id: {event_id}\nevent: {event}\ndata: {data}\n\n".encode()
        if script.tail:
            yield script.tail.encode()
        if script.hold:
            await _forever()

    return StreamingResponse(body(), media_type=script.content_type)


async def ws(websocket: WebSocket) -> None:
    script = SCRIPTS[websocket.query_params["key"]]
    if script.subprotocol is not None and script.subprotocol not in websocket.scope["subprotocols"]:
        await websocket.close()  # before accepting: the handshake is answered 403
        return
    await websocket.accept(subprotocol=script.forced_subprotocol or script.subprotocol)
    if script.refuse_code is not None:
        await websocket.close(code=script.refuse_code)
        script.refused.set()
        return
    try:
        hello = await websocket.receive_json()
        last = hello.get("lastEventId")
        script.resumed_from.append("" if last is None else str(last))
        for count, (event_id, event, data) in enumerate(_pending(script, "" if last is None else str(last))):
            if script.drop_after == count and not script.dropped:
                script.dropped = True
                await websocket.close(code=script.drop_code)
                return
            try:
                frame = json.dumps({"id": event_id, "type": event, "data": json.loads(data)})
            except (ValueError, RecursionError):  # not JSON, or nested too deeply: sent as it is
                frame = data
            await websocket.send_text(frame)
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass
    except WebSocketDisconnect:
        return


#: graphql-transport-ws scripts: key -> frames sent after `subscribe` (raw text), and what the client sent.
#: "CLOSE" closes with 1011 (internal error); "DROP" (or "DROP:<code>", default 1012, service restart)
#: closes and ends the part played to one connection: connection n plays the frames after the n-th DROP.
#: A frame "PREACK:<text>" sends <text> before `connection_ack` instead (a server pinging early);
#: "NOACK" in a connection's part: that connection is never acknowledged (held open until the client leaves).
GQL_SCRIPTS: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}
#: key -> how many connections its script's server accepted.
GQL_CONNECTS: dict[str, int] = {}
#: key -> the headers of each connection's handshake, in order (names in lower case).
GQL_HANDSHAKES: dict[str, list[dict[str, str]]] = {}
#: key -> the subprotocol each connection is accepted with, in turn (the last one for the rest; None: none);
#: a key not given: graphql-transport-ws.
GQL_SUBPROTOCOLS: dict[str, list[str | None]] = {}


def _gql_part(frames: list[str], connection: int) -> list[str]:
    """The frames one connection plays: its part of the script, with the DROP that ends it."""
    parts: list[list[str]] = [[]]
    for frame in frames:
        parts[-1].append(frame)
        if frame.startswith("DROP"):
            parts.append([])
    return parts[min(connection, len(parts) - 1)]


async def gql(websocket: WebSocket) -> None:
    """A graphql-transport-ws server that acks, then plays its script's frames after `subscribe`."""
    key = websocket.query_params["key"]
    frames, received = GQL_SCRIPTS[key]
    connection = GQL_CONNECTS.get(key, 0)
    GQL_CONNECTS[key] = connection + 1
    GQL_HANDSHAKES.setdefault(key, []).append(dict(websocket.headers))
    chosen = GQL_SUBPROTOCOLS.get(key, ["graphql-transport-ws"])
    await websocket.accept(subprotocol=chosen[min(connection, len(chosen) - 1)])
    try:
        received.append(await websocket.receive_json())  # connection_init
        part = _gql_part(frames, connection)
        for frame in part:
            if frame.startswith("PREACK:"):
                await websocket.send_text(frame.removeprefix("PREACK:"))
        if "NOACK" in part:
            while (await websocket.receive())["type"] != "websocket.disconnect":
                pass
            return
        await websocket.send_json({"type": "connection_ack"})
        received.append(await websocket.receive_json())  # subscribe
        for frame in (f for f in part if not f.startswith("PREACK:")):
            if frame == "CLOSE" or frame.startswith("DROP"):
                code = 1011 if frame == "CLOSE" else int(frame.partition(":")[2] or 1012)
                await websocket.close(code=code)
                return
            await websocket.send_text(frame)
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            received.append(json.loads(message["text"]))
    except WebSocketDisconnect:
        return


@dataclass
class Burst:
    """A burst the paced feed plays: `count` tick events at `rate` per second, ids from `first_id`."""

    first_id: int
    count: int
    rate: float
    entities: int
    #: Send `id:` lines only (no data: the client dispatches no event, only its last event id moves).
    ids_only: bool = False


def tick_pk(event_id: int, entities: int) -> int:
    """The entity a tick event updates: a fixed scramble of 1..entities (so no entity's turn is regular)."""
    return random.Random(event_id).randrange(entities) + 1


def tick_frame(event_id: int, entities: int) -> bytes:
    """One SSE tick event: `{"id": pk, "seq": event_id}` with `id: event_id`."""
    data = json.dumps({"id": tick_pk(event_id, entities), "seq": event_id})
    return f"id: {event_id}\nevent: tick\ndata: {data}\n\n".encode()


#: Seconds between the paced feed's writes (each carries the events due by then).
PACE_TICK = 0.005


@dataclass
class Paced:
    """The bursts queued for one paced feed (created in the server's loop by whichever handler runs first)."""

    queue: asyncio.Queue[Burst] = field(default_factory=asyncio.Queue)
    #: Set by ``POST /_stream/paced/release``: the held ``/_stream/paced/stale`` replies are sent, then it clears.
    release: asyncio.Event = field(default_factory=asyncio.Event)
    #: Seconds each burst took to send, as measured by the server.
    durations: list[float] = field(default_factory=list)


PACED: dict[str, Paced] = {}


async def paced_sse(request: Request) -> Response:
    """``GET /_stream/paced?key=K``: an SSE feed that sends each burst posted for K at its rate."""
    paced = PACED.setdefault(request.query_params["key"], Paced())

    async def body() -> AsyncIterator[bytes]:
        yield b": open\n\n"
        while True:
            burst = await paced.queue.get()
            async for chunk in _play(burst, paced):
                yield chunk

    return StreamingResponse(body(), media_type="text/event-stream")


async def _play(burst: Burst, paced: Paced) -> AsyncIterator[bytes]:
    """The burst's events, each sent once due (`n / rate` s after the start), late ones at once."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    sent = 0
    while sent < burst.count:
        due = min(burst.count, int((loop.time() - start) * burst.rate) + 1)
        if due > sent:
            ids = range(burst.first_id + sent, burst.first_id + due)
            if burst.ids_only:
                yield b"".join(f"id: {i}\n\n".encode() for i in ids)
            else:
                yield b"".join(tick_frame(i, burst.entities) for i in ids)
            sent = due
        await asyncio.sleep(PACE_TICK)
    paced.durations.append(loop.time() - start)


async def paced_burst(request: Request) -> Response:
    """``POST /_stream/paced/burst?key=K`` with a Burst as JSON: queue it on K's feed."""
    paced = PACED.setdefault(request.query_params["key"], Paced())
    paced.queue.put_nowait(Burst(**await request.json()))
    return Response(status_code=202)


async def paced_stale(request: Request) -> Response:
    """``GET /_stream/paced/stale?key=K&id=N``: `{"id": N, "seq": 0}` (older than any tick), held until released."""
    paced = PACED.setdefault(request.query_params["key"], Paced())
    await paced.release.wait()
    return JSONResponse({"id": int(request.query_params["id"]), "seq": 0})


async def paced_release(request: Request) -> Response:
    """``POST /_stream/paced/release?key=K``: send the held stale replies."""
    paced = PACED.setdefault(request.query_params["key"], Paced())
    paced.release.set()
    paced.release = asyncio.Event()
    return Response(status_code=204)


async def stalled(request: Request) -> Response:
    """``GET /_stream/stalled``: accepts the request and never answers (until the client leaves)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    return Response(status_code=204)


ROUTES: list[BaseRoute] = [
    Route("/_stream/sse", sse, methods=["GET"]),
    Route("/_stream/redirect", redirect, methods=["GET"]),
    Route("/_stream/stalled", stalled, methods=["GET"]),
    WebSocketRoute("/_stream/ws", ws),
    WebSocketRoute("/_stream/gql", gql),
    Route("/_stream/paced", paced_sse, methods=["GET"]),
    Route("/_stream/paced/burst", paced_burst, methods=["POST"]),
    Route("/_stream/paced/stale", paced_stale, methods=["GET"]),
    Route("/_stream/paced/release", paced_release, methods=["POST"]),
]
