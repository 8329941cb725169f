"""Live data over server push: keep SSE and WebSocket connections open and write their messages into the store.

Needs the `streams` extra (`pip install 'restlayer[streams]'`: httpx-sse and
websockets); the rest of restlayer never imports this package.

    table = {"todo.updated": Todo, "todo.created": TodoResource.get_list.push}
    async with StreamManager(ctrl, [SSEStream(f"{api}/events", on=table)]):
        ...  # every reader of the store sees pushed changes at once
"""

try:
    import httpx_sse  # noqa: F401
    import websockets  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f"restlayer.streams needs the 'streams' extra ({exc.name} is missing): pip install 'restlayer[streams]'"
    ) from exc

from restlayer.streams._manager import StreamManager
from restlayer.streams._sse import SSEStream
from restlayer.streams._stream import Backoff, Covers, Stream
from restlayer.streams._writes import Handler, Message, Writes
from restlayer.streams._ws import WebSocketStream, parse_json_message

__all__ = [
    "Backoff",
    "Covers",
    "Handler",
    "Message",
    "SSEStream",
    "Stream",
    "StreamManager",
    "WebSocketStream",
    "Writes",
    "parse_json_message",
]
