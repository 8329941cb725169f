"""`GQLSubscription`: a GraphQL subscription over WebSocket (protocol graphql-transport-ws).

`gql.subscription(text, schema)` gives one; `async with sub.events(ctrl, variables)
as events: async for data in events: ...` opens the socket, subscribes, and writes
each event into the controller's store like a query result (so every reader of
those entities sees it) before yielding the stored data. Needs the `streams`
extra (the `websockets` library), imported only when a subscription starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from restlayer.errors import NetworkError, RestLayerError, TransportError
from restlayer.graphql._errors import GQLNetworkError

if TYPE_CHECKING:
    from restlayer.core import Controller
    from restlayer.graphql._endpoint import GQLEndpoint

__all__ = ["GQLEvents", "GQLSubscription"]

PROTOCOL: Final = "graphql-transport-ws"
_OP_ID: Final = "1"


def ws_url_of(url: str) -> str:
    """The WebSocket address of a GraphQL HTTP url (http -> ws, https -> wss)."""
    if url.startswith("https://"):
        return "wss://" + url[len("https://") :]
    if url.startswith("http://"):
        return "ws://" + url[len("http://") :]
    return url


class GQLSubscription:
    """A subscription operation: `endpoint` names its store slot (key, schema) like a query's."""

    def __init__(self, endpoint: GQLEndpoint, ws_url: str, open_timeout: float = 10.0) -> None:
        self.endpoint = endpoint
        self.ws_url = ws_url
        self.open_timeout = open_timeout

    def __repr__(self) -> str:
        return f"GQLSubscription(name={self.endpoint.name!r}, url={self.ws_url!r})"

    def events(self, controller: Controller | None = None, variables: Any = None, **kwargs: Any) -> GQLEvents:
        """The subscription's events: each `data` stored in `controller` (when given) and yielded."""
        args = self.endpoint.bind(*(() if variables is None else (variables,)), **kwargs)
        return GQLEvents(self, controller, args)


class GQLEvents:
    """`async for data in events`; `aclose()` (or leaving `async with`) completes the subscription."""

    def __init__(self, subscription: GQLSubscription, controller: Controller | None, args: tuple[Any, ...]) -> None:
        self._generator = _run(subscription, controller, args)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._generator

    async def aclose(self) -> None:
        """Tell the server to stop and close the socket."""
        await self._generator.aclose()

    async def __aenter__(self) -> GQLEvents:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


async def _run(sub: GQLSubscription, controller: Controller | None, args: tuple[Any, ...]) -> AsyncGenerator[Any, None]:
    """Connect, subscribe, yield each event's data; GraphQL errors raise GQLNetworkError."""
    try:
        from websockets.asyncio.client import connect
        from websockets.exceptions import WebSocketException
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise RestLayerError(
            "GraphQL subscriptions need the 'streams' extra: pip install 'restlayer[streams]'"
        ) from exc
    endpoint = sub.endpoint
    variables = args[0] if args else {}
    try:
        socket = await connect(sub.ws_url, subprotocols=[PROTOCOL], open_timeout=sub.open_timeout)  # type: ignore[list-item]
    except (OSError, asyncio.TimeoutError, WebSocketException) as exc:
        raise TransportError(f"{sub.ws_url}: cannot open the subscription socket: {exc}", status=500) from exc
    keepalive = socket.keepalive_task
    completed = False
    try:
        await socket.send(json.dumps({"type": "connection_init", "payload": {}}))
        await _expect_ack(socket, sub.ws_url)
        payload = {"query": endpoint.get_query(variables), "variables": variables}
        await socket.send(json.dumps({"id": _OP_ID, "type": "subscribe", "payload": payload}))
        async for frame in socket:
            message = _decode(frame, sub.ws_url)
            kind = message.get("type")
            if kind == "ping":
                await socket.send(json.dumps({"type": "pong"}))
            elif kind == "error" and message.get("id") == _OP_ID:
                completed = True
                errors = message.get("payload")
                raise GQLNetworkError(errors if isinstance(errors, list) else [errors])
            elif kind == "complete" and message.get("id") == _OP_ID:
                completed = True
                return
            elif kind == "next" and message.get("id") == _OP_ID:
                yield _deliver(controller, endpoint, args, message.get("payload"))
        raise TransportError(f"{sub.ws_url}: the server closed the subscription socket", status=500)
    except WebSocketException as exc:
        raise TransportError(f"{sub.ws_url}: subscription socket failed: {exc}", status=500) from exc
    finally:
        with contextlib.suppress(WebSocketException, OSError):
            if not completed:
                await socket.send(json.dumps({"id": _OP_ID, "type": "complete"}))
        await socket.close()
        if keepalive is not None:  # cancelled by the library on close, without waiting for it
            await asyncio.wait({keepalive})


async def _expect_ack(socket: Any, url: str) -> None:
    message = _decode(await socket.recv(), url)
    if message.get("type") != "connection_ack":
        raise NetworkError(f"{url}: expected connection_ack, got {message.get('type')!r}", status=500)


def _decode(frame: str | bytes, url: str) -> dict[str, Any]:
    try:
        message = json.loads(frame)
    except ValueError as exc:
        raise NetworkError(f"{url}: a subscription frame is not JSON: {exc}", status=500) from exc
    if not isinstance(message, dict):
        raise NetworkError(f"{url}: a subscription frame is not a JSON object", status=500)
    return message


def _deliver(controller: Controller | None, endpoint: GQLEndpoint, args: tuple[Any, ...], payload: Any) -> Any:
    """One `next` payload: errors raise; data is stored (when a controller is given) and returned."""
    if not isinstance(payload, dict):
        raise GQLNetworkError([{"message": "a subscription event has no payload object"}])
    errors = payload.get("errors")
    if errors:
        raise GQLNetworkError(errors if isinstance(errors, list) else [errors], data=payload.get("data"))
    data = endpoint.process(payload.get("data"), *args)
    if controller is None:
        return data
    controller.set_response(endpoint, *args, data)
    error = controller.get_error(endpoint, *args)
    if error is not None:
        raise error
    return controller.get_response(endpoint, *args).data
