"""Server push for the example API: every create/update/delete is announced over SSE and WebSocket.

REST writes and GraphQL mutations (``updateTodo``, ``createTodo``) announce alike.

``GET /events`` is a ``text/event-stream`` (``id:`` = a sequence number,
``event:`` = ``todos.updated`` etc., ``data:`` = the record as JSON, or
``{"id": N}`` for a delete) that replays what a client missed after
``Last-Event-ID``. ``/ws`` is a WebSocket: the client first sends
``{"type": "subscribe", "lastEventId": N | null}``, receives the missed events,
then ``{"type": "subscribed", "id": N}`` (it is listening from event N on), then
``{"id", "type", "data"}`` JSON frames. ``/graphql`` also speaks WebSocket, with the
graphql-transport-ws protocol, for the ``todoChanged`` subscription.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

__all__ = ["Event", "EventHub", "live_routes"]

#: Reconnection time the SSE endpoint asks clients for (ms).
SSE_RETRY_MS = 500
#: Seconds between SSE comment lines that keep idle connections checked.
HEARTBEAT_S = 15.0


@dataclass(frozen=True)
class Event:
    """One announced change."""

    id: int
    type: str
    data: Any

    def sse(self) -> bytes:
        """The event as an SSE frame."""
        return f"id: {self.id}\nevent: {self.type}\ndata: {json.dumps(self.data)}\n\n".encode()

    def frame(self) -> str:
        """The event as a WebSocket JSON text frame."""
        return json.dumps({"id": self.id, "type": self.type, "data": self.data})


class EventHub:
    """The last `history` events (for resuming) and a queue per connected listener.

    Used from the server's event loop only (handlers publish, endpoints listen).
    """

    def __init__(self, history: int = 1000) -> None:
        self._events: deque[Event] = deque(maxlen=history)
        # Ids start at the clock in ms, so a restarted server never reuses an id a client saw.
        self._next_id = int(time.time() * 1000)
        self._listeners: set[asyncio.Queue[Event]] = set()

    def publish(self, type: str, data: Any) -> Event:
        """Announce a change to every listener."""
        event = Event(self._next_id, type, data)
        self._next_id += 1
        self._events.append(event)
        for queue in self._listeners:
            queue.put_nowait(event)
        return event

    @property
    def last_id(self) -> int:
        """The id of the latest event (announced or not yet: where a new client starts)."""
        return self._next_id - 1

    def since(self, last_id: int | None) -> list[Event]:
        """The kept events after `last_id` (none when `last_id` is None: a new client starts now)."""
        if last_id is None:
            return []
        return [e for e in self._events if e.id > last_id]

    def listen(self) -> asyncio.Queue[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._listeners.add(queue)
        return queue

    def unlisten(self, queue: asyncio.Queue[Event]) -> None:
        self._listeners.discard(queue)

    def clear(self) -> None:
        """Forget the history (ids keep counting, so resumed clients never see an id twice)."""
        self._events.clear()


def _last_id(raw: Any) -> int | None:
    try:
        return None if raw is None or raw == "" else int(raw)
    except (TypeError, ValueError):
        return None


def _hub(app: Any) -> EventHub:
    hub: EventHub = app.state.events
    return hub


async def sse_events(request: Request) -> Response:
    """``GET /events``: the change feed as Server-Sent Events, resumed after ``Last-Event-ID``."""
    hub = _hub(request.app)
    last = _last_id(request.headers.get("last-event-id") or request.query_params.get("lastEventId"))
    queue = hub.listen()
    backlog = hub.since(last)
    start = hub.last_id

    async def body() -> AsyncIterator[bytes]:
        try:
            yield f"retry: {SSE_RETRY_MS}\n\n".encode()
            seen = last or 0
            for event in backlog:
                seen = event.id
                yield event.sse()
            # `id:` without data moves the client's last event id without an event: a client
            # that reconnects before the next change resumes from here.
            yield f"id: {start}\n\n".encode()
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), HEARTBEAT_S)
                except asyncio.TimeoutError:
                    yield b": ping\n\n"
                    continue
                if event.id > seen:
                    yield event.sse()
        finally:
            hub.unlisten(queue)

    return StreamingResponse(body(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})


async def ws_events(websocket: WebSocket) -> None:
    """``/ws``: after ``{"type": "subscribe", "lastEventId": N | null}``, every change as a JSON frame."""
    await websocket.accept()
    hub = _hub(websocket.app)
    try:
        hello = await websocket.receive_json()
    except (WebSocketDisconnect, ValueError):
        return
    if not isinstance(hello, dict) or hello.get("type") != "subscribe":
        await websocket.close(code=1008, reason='first message must be {"type": "subscribe"}')
        return
    queue = hub.listen()
    start = hub.last_id
    try:
        last = _last_id(hello.get("lastEventId"))
        seen = last or 0
        for event in hub.since(last):
            seen = event.id
            await websocket.send_text(event.frame())
        await websocket.send_text(json.dumps({"type": "subscribed", "id": start}))
        closed = asyncio.ensure_future(_until_closed(websocket))
        try:
            while not closed.done():
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, closed}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    break
                event = getter.result()
                if event.id > seen:
                    await websocket.send_text(event.frame())
        finally:
            closed.cancel()
    finally:
        hub.unlisten(queue)


async def _until_closed(websocket: WebSocket) -> None:
    """Read (and ignore) client frames until the client goes away."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return


GRAPHQL_WS = "graphql-transport-ws"


async def graphql_ws(websocket: WebSocket) -> None:
    """``/graphql`` over WebSocket, protocol graphql-transport-ws: subscriptions (``todoChanged``)."""
    from examples.todo_api.graphql_api import run_subscription

    await websocket.accept(subprotocol=GRAPHQL_WS)
    running: dict[str, asyncio.Task[None]] = {}
    try:
        init = await websocket.receive_json()
        if not isinstance(init, dict) or init.get("type") != "connection_init":
            await websocket.close(code=4400, reason="connection_init expected")
            return
        await websocket.send_json({"type": "connection_ack"})
        while True:
            message = await websocket.receive_json()
            kind, op_id = message.get("type"), message.get("id")
            if kind == "ping":
                await websocket.send_json({"type": "pong"})
            elif kind == "complete" and op_id in running:
                running.pop(op_id).cancel()
            elif kind == "subscribe" and isinstance(op_id, str):
                payload = message.get("payload") or {}
                db, hub = websocket.app.state.db, _hub(websocket.app)
                results = await run_subscription(db, hub, payload.get("query", ""), payload.get("variables"))
                if isinstance(results, list):
                    await websocket.send_json({"type": "error", "id": op_id, "payload": results})
                else:
                    running[op_id] = asyncio.ensure_future(_forward(websocket, op_id, results))
    except (WebSocketDisconnect, ValueError):
        return
    finally:
        for task in running.values():
            task.cancel()


async def _forward(websocket: WebSocket, op_id: str, results: AsyncIterator[dict[str, Any]]) -> None:
    """Send each result of one subscription as ``next``, then ``complete``."""
    async for result in results:
        await websocket.send_json({"type": "next", "id": op_id, "payload": result})
    await websocket.send_json({"type": "complete", "id": op_id})


def live_routes() -> list[BaseRoute]:
    """The push endpoints: ``GET /events`` (SSE), ``/ws`` and ``/graphql`` (WebSockets)."""
    return [
        Route("/events", sse_events, methods=["GET"], name="events"),
        WebSocketRoute("/ws", ws_events),
        WebSocketRoute("/graphql", graphql_ws),
    ]
