"""`WebSocketStream`: messages over a WebSocket (the `websockets` library)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedError, InvalidStatus, NegotiationError
from websockets.typing import Subprotocol

from restlayer._handshake import check_handshake_headers
from restlayer.errors import ParamError, RestLayerError
from restlayer.rest._headers import TOKEN
from restlayer.streams._stream import (
    DEFAULT_MAX_SIZE,
    Backoff,
    Covers,
    Stream,
    check_url,
    checked_callable,
    decode_json,
    frame_size,
    frame_too_big,
    refused,
    refused_close,
    seconds,
)
from restlayer.streams._writes import Handler, Message, Target

__all__ = ["WebSocketStream", "parse_json_message", "started_close_code"]


def parse_json_message(frame: str | bytes) -> Message:
    """A frame `{"type": ..., "data": ..., "id": ...}` (`event` may name the type); ValueError otherwise."""
    body = decode_json(frame)
    if not isinstance(body, dict):
        raise ValueError(f"expected a JSON object, got {type(body).__name__}")
    event = _named_type(body)
    if not isinstance(event, str):
        raise ValueError("no event type (a string under 'type' or 'event')")
    event_id = body.get("id")
    return Message(event, body.get("data"), None if event_id is None else str(event_id))


class WebSocketStream(Stream):
    """A WebSocket at `url` (`ws://` or `wss://`, else ParamError): each frame becomes a Message through `parse`.

    `on_open(last_event_id)` returns the messages to send once connected (to
    subscribe, or to resume after the last event seen); dicts and lists are sent
    as JSON text (no list, or a message JSON cannot encode, ends the stream with a
    ParamError; an `on_open` that raises ends it with a RestLayerError, its error the
    cause). Pings keep the connection checked (the library's keepalive).
    A handshake refused with a client error (401, 403, 404...), or a socket the server
    closes with a code refusing what the client sends or is (1002 protocol error, 1003 unsupported
    data, 1007 invalid payload, 1008 policy violation, 1009 a message too big for the server,
    1010 missing extension) or 4400-4499 (4000 + an HTTP client error, e.g. 4401, 4403), ends
    the stream with a StatusError; a message over `max_size`
    bytes (1 MiB; None: no limit) with a BodyTooLargeError; other failures are retried.
    `subprotocols` are offered in the handshake (`Sec-WebSocket-Protocol`), for servers
    that refuse a client naming none of theirs; a server choosing one not offered ends
    the stream with a RestLayerError.
    """

    def __init__(
        self,
        url: str,
        *,
        on: Mapping[str, Target] | Handler,
        name: str | None = None,
        backoff: Backoff | None = None,
        headers: Mapping[str, str] | None = None,
        covers: Covers = None,
        parse: Callable[[str | bytes], Message] = parse_json_message,
        on_open: Callable[[str | None], Iterable[object]] | None = None,
        open_timeout: float = 10.0,
        max_size: int | None = DEFAULT_MAX_SIZE,
        subprotocols: Sequence[str] | None = None,
    ) -> None:
        super().__init__(url, on=on, name=name, backoff=backoff, headers=headers, covers=covers)
        check_url(url, ("ws", "wss"))
        check_handshake_headers(self.headers, "headers=", protocol_option="subprotocols=")
        checked_callable("parse=", parse)
        if on_open is not None:
            checked_callable("on_open=", on_open)
        self.parse = parse
        self.on_open = on_open
        self.open_timeout = seconds("open_timeout=", open_timeout)
        self.max_size = frame_size(max_size)
        self.subprotocols = _checked_subprotocols(subprotocols)

    async def _messages(self) -> AsyncGenerator[Message | None, None]:
        socket = await self._connect()
        # The library cancels its keepalive task on close without waiting for it (and forgets
        # it): keep a reference and wait for it, so a closed stream leaves no task behind.
        keepalive = socket.keepalive_task
        try:
            hellos = self._hellos()  # before `_opened`: a stream whose `on_open` is broken never counts as connected
            await self._opened()
            try:  # a server may refuse the client (close it) as soon as it accepted it: before or while it sends
                for hello in hellos:
                    await socket.send(hello)
                async for frame in socket:
                    yield self._message(frame)
            except ConnectionClosedError as exc:
                error = self._final(exc)
                if error is None:
                    raise
                raise error from exc
        finally:
            await socket.close()
            if keepalive is not None:
                await asyncio.wait({keepalive})

    def _hellos(self) -> list[str | bytes]:
        """The frames `on_open` gives for this connection, dicts and lists as JSON text.

        ParamError (ending the stream) when it returns no iterable (a missing `return`) or something
        JSON cannot encode, RestLayerError (its error as the cause) when it raises, or the iterable
        it returns (a generator) does: every connection would fail the same way, and be retried forever.
        """
        if self.on_open is None:
            return []
        try:
            given = self.on_open(self.last_event_id)
        except Exception as exc:
            raise self._on_open_failed(exc) from exc
        if not isinstance(given, Iterable) or isinstance(given, (str, bytes, Mapping)):
            raise ParamError(
                f"stream {self.name}: on_open must return the messages to send (a list), "
                f"not {type(given).__name__} (missing `return`?)"
            )
        try:
            hellos = list(given)
        except Exception as exc:
            raise self._on_open_failed(exc) from exc
        return [_frame_of(hello, self.name) for hello in hellos]

    def _on_open_failed(self, exc: Exception) -> RestLayerError:
        """The error ending the stream whose `on_open` (or the messages it gave) raised `exc`."""
        return RestLayerError(f"stream {self.name}: on_open raised {type(exc).__name__}: {exc}; not reconnecting")

    def _final(self, exc: ConnectionClosedError) -> RestLayerError | None:
        """The error ending the stream after `exc` closed its socket (see `refused_close`, `frame_too_big`);
        None when a new connection may do better."""
        too_big = frame_too_big(self.url, started_close_code(exc), self.max_size)
        if too_big is not None:
            return too_big
        return None if exc.rcvd is None else refused_close(self.url, exc.rcvd.code, exc.rcvd.reason)

    async def _connect(self) -> ClientConnection:
        """The open socket; StatusError when the handshake is refused with a client error (see `refused`),
        RestLayerError when the server's answer cannot be agreed to (a subprotocol this stream did not
        offer): the server answers every handshake the same, so reconnecting cannot mend either."""
        try:
            return await connect(
                self.url,
                additional_headers=self.headers,
                open_timeout=self.open_timeout,
                max_size=self.max_size,
                subprotocols=[Subprotocol(name) for name in self.subprotocols] or None,
            )
        except InvalidStatus as exc:
            error = refused(self.url, exc.response.status_code)
            if error is None:
                raise
            raise error from exc
        except NegotiationError as exc:
            offered = ", ".join(self.subprotocols) or "none"
            raise RestLayerError(
                f"stream {self.url}: the server's handshake cannot be agreed to ({exc}; subprotocols offered: "
                f"{offered}): offer the one it speaks with subprotocols=; not reconnecting"
            ) from exc

    def _message(self, frame: str | bytes) -> Message | None:
        """The Message of one frame; None (logged) when it cannot be parsed, or `parse` gives no Message."""
        try:
            message = self.parse(frame)
        except Exception as exc:
            self.malformed(_event_type(frame), None, f"{type(exc).__name__}: {exc}")
            return None
        if not isinstance(message, Message):
            reason = f"parse= returned {type(message).__name__}, not a Message"
            self.malformed(_event_type(frame), None, reason)
            return None
        return message


def _named_type(body: dict[str, object]) -> object:
    """The event type a frame names: its `type`, or its `event` when `type` is absent or null.

    A `"type": null` names no type (as JSON writers spell a field left unset), so it must not hide `event`.
    """
    named = body.get("type")
    return body.get("event") if named is None else named


def started_close_code(exc: ConnectionClosed) -> int | None:
    """The code of the close this client started, when it closed first; None when it only echoed the server's.

    A client echoes the server's close code: a server's 1009 (a message of this client's too big for it)
    comes back as "sent 1009" too, and must not be taken for a message over this client's `max_size`.
    """
    if exc.sent is None or exc.rcvd_then_sent:
        return None
    return exc.sent.code


def _checked_subprotocols(subprotocols: Sequence[str] | None) -> list[str]:
    """`subprotocols=` as a list of names; ParamError unless a sequence (not one str) of tokens.

    A name a handshake cannot carry (empty, spaces, commas...) would fail every connect, retried forever.
    """
    if subprotocols is None:
        return []
    if isinstance(subprotocols, (str, bytes)) or not isinstance(subprotocols, Sequence):
        raise ParamError(f"subprotocols= must be a list of names (str), not {subprotocols!r}")
    for name in subprotocols:
        if not isinstance(name, str) or not TOKEN.fullmatch(name):
            raise ParamError(f"subprotocols= names must be HTTP tokens (no space, comma...), not {name!r}")
    return list(subprotocols)


def _frame_of(hello: object, name: str) -> str | bytes:
    """One message `on_open` gave, as a frame: text and bytes as they are, anything else as JSON text."""
    if isinstance(hello, (str, bytes)):
        return hello
    try:
        return json.dumps(hello)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ParamError(f"stream {name}: on_open gave a message JSON cannot encode: {exc}") from exc


def _event_type(frame: str | bytes) -> str:
    """Best-effort event type of a frame that did not parse, for the log line."""
    try:
        body = json.loads(frame)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply to decode
        return "?"
    event = _named_type(body) if isinstance(body, dict) else None
    return event if isinstance(event, str) else "?"
