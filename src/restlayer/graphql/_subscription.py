"""`GQLSubscription`: a GraphQL subscription over WebSocket (protocol graphql-transport-ws).

`gql.subscription(text, schema)` gives one; `async with sub.events(ctrl, variables)
as events: async for data in events: ...` opens the socket, subscribes, and writes
each event into the controller's store like a query result (so every reader of
those entities sees it) before yielding the stored data. A connection that is
lost (dropped, or the server going away or restarting) is reopened after a
backoff and the operation subscribed again. Needs the `streams` extra (the
`websockets` library), imported only when a subscription starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Final, Generic, Protocol, cast, overload
from urllib.parse import urlsplit

from restlayer._handshake import check_handshake_headers
from restlayer._typing import T, T_co
from restlayer.errors import ClosedError, NetworkError, ParamError, RestLayerError, StatusError, TransportError
from restlayer.graphql._errors import GQLNetworkError
from restlayer.rest._headers import check_headers, text_headers

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

    from restlayer.core import Controller
    from restlayer.graphql._endpoint import GQLEndpoint

__all__ = ["ConnectionParams", "GQLEvents", "GQLSubscription", "ReconnectBackoff"]

log = logging.getLogger("restlayer")

PROTOCOL: Final = "graphql-transport-ws"
_OP_ID: Final = "1"
#: Close codes of a connection that was lost or that the server closed to go away or restart
#: (normal, going away, no status, abnormal, service restart, try again later, bad gateway).
_LOST_CODES: Final = frozenset({1000, 1001, 1005, 1006, 1012, 1013, 1014})
#: graphql-transport-ws codes refusing this client or operation (bad request, unauthorized,
#: forbidden, subprotocol not acceptable, subscriber already exists, too many inits, ...).
_REFUSED_CODES: Final = frozenset({4004, 4005, 4400, 4401, 4403, 4406, 4409, 4429, 4500})

#: One graphql-transport-ws message, decoded.
Frame = dict[str, object]

#: The `connection_init` payload: a mapping, or a function (plain or async) giving one for each connection.
ConnectionParams = Mapping[str, object] | Callable[[], Mapping[str, object] | Awaitable[Mapping[str, object]]] | None


class ReconnectBackoff(Protocol):
    """How long to wait before reconnect number `failures` and how to wait: a `restlayer.streams.Backoff`."""

    def delay(self, failures: int, initial: float | None = None) -> float: ...

    @property
    def sleep(self) -> Callable[[float], Awaitable[object]]: ...


#: The WebSocket scheme of each HTTP one.
_WS_SCHEMES: Final = {"http": "ws", "https": "wss"}


def ws_url_of(url: str) -> str:
    """The WebSocket address of a GraphQL HTTP url (http -> ws, https -> wss; a scheme in any case, as
    schemes ignore it); any other url as it is."""
    scheme, sep, rest = url.partition("://")
    ws_scheme = _WS_SCHEMES.get(scheme.lower()) if sep else None
    return url if ws_scheme is None else f"{ws_scheme}://{rest}"


def reopens(code: int | None) -> bool:
    """Whether a socket closed with `code` is worth reopening (lost, or the server went away);
    not after a protocol, policy or internal error, nor when the server refused the operation
    (its protocol's codes, or a refusal any `restlayer.streams` WebSocket stream ends on)."""
    from restlayer.streams._stream import refusing_status

    if code is None or code in _LOST_CODES:
        return True
    return not (1000 <= code <= 1999 or code in _REFUSED_CODES or refusing_status(code) is not None)


def _refused_status(code: int | None) -> int | None:
    """The HTTP client error a close `code` that refuses this client stands for (4401 -> 401...); None otherwise.

    What a `restlayer.streams` WebSocket stream ends on with a StatusError (1008 policy violation a 403...),
    and any 4400-4499 the protocol refuses with (4429, too many `connection_init`, a 429): the server
    answered, so a caller can tell why (re-authenticate on 401) rather than see a transport failure.
    """
    from restlayer.streams._stream import refusing_status

    status = refusing_status(code)
    if status is None and code is not None and 4400 <= code < 4500 and not reopens(code):
        return code - 4000
    return status


class GQLSubscription(Generic[T_co]):
    """A subscription operation: `endpoint` names its store slot (key, schema) like a query's.

    `open_timeout`: seconds to open the socket, and again to get the server's
    `connection_ack` (a connection not acknowledged by then counts as lost).

    `backoff` paces reconnects after a lost connection (default: a
    `restlayer.streams.Backoff()`); `retries` reconnects in a row that deliver no
    event are tried before `TransportError` is raised (None: never give up). A close
    refusing the client (4401 unauthorized, 4403 forbidden...) raises StatusError with
    that HTTP status at once, one refusing the operation otherwise (1011, 4500) TransportError.

    `headers` go with each WebSocket handshake (e.g. `Authorization`, `Cookie`);
    `connection_params` is the `connection_init` payload, where graphql-transport-ws
    servers look for credentials: a mapping, or a function (plain or async) called for
    each connection, so a reconnect sends a fresh token. `max_size`: the largest
    message accepted, in bytes (1 MiB; None: no limit); a larger one ends the
    subscription with BodyTooLargeError (a new connection would be sent it again).
    """

    def __init__(
        self,
        endpoint: GQLEndpoint[T_co],
        ws_url: str,
        open_timeout: float = 10.0,
        *,
        backoff: ReconnectBackoff | None = None,
        retries: int | None = 5,
        headers: Mapping[str, str] | None = None,
        connection_params: ConnectionParams = None,
        max_size: int | None = 2**20,
    ) -> None:
        if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int) or retries < 0):
            raise ParamError(f"subscription retries must be a count >= 0 or None, not {retries!r}")
        if isinstance(backoff, type):  # its `delay` takes no self: an AttributeError at the first reconnect
            raise ParamError(f"subscription backoff must be a restlayer.streams.Backoff, not the class: {backoff!r}")
        if backoff is not None and not (callable(getattr(backoff, "delay", None)) and callable(backoff.sleep)):
            raise ParamError(f"subscription backoff must be a restlayer.streams.Backoff, not {backoff!r}")
        if isinstance(open_timeout, bool) or not isinstance(open_timeout, (int, float)) or not open_timeout > 0:
            # 0 (or NaN) would time out every handshake and acknowledgement
            raise ParamError(f"subscription open_timeout must be a number of seconds > 0, not {open_timeout!r}")
        self.endpoint = endpoint
        self.ws_url = _checked_ws_url(ws_url)
        self.open_timeout = open_timeout
        self.backoff = backoff
        self.retries = retries
        self.headers = _checked_headers(headers)
        if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1):
            raise ParamError(f"subscription max_size must be a number of bytes >= 1 or None, not {max_size!r}")
        self.max_size = max_size
        if connection_params is not None and not callable(connection_params):
            _checked_params(connection_params)
        self.connection_params = connection_params

    async def init_payload(self) -> dict[str, object]:
        """The `connection_init` payload of a new connection: `connection_params`, called when a function.

        ParamError when it is no mapping JSON can encode (the server could not read it); RestLayerError,
        with its error as the cause, when the function raises (a token it cannot get ends the subscription).
        """
        given = self.connection_params
        params: object = await _called(given) if callable(given) else given
        return {} if params is None else _checked_params(params)

    def __repr__(self) -> str:
        return f"GQLSubscription(name={self.endpoint.name!r}, url={self.ws_url!r})"

    @overload
    def events(
        self, controller: Controller, variables: Mapping[str, object] | None = None, **kwargs: object
    ) -> GQLEvents[T_co]: ...
    @overload
    def events(
        self, controller: None = None, variables: Mapping[str, object] | None = None, **kwargs: object
    ) -> GQLEvents[object]: ...
    def events(
        self, controller: Controller | None = None, variables: Mapping[str, object] | None = None, **kwargs: object
    ) -> GQLEvents[object]:
        """The subscription's events: each `data` stored in `controller` (when given) and yielded.

        ParamError for a `controller` that is no (async) `restlayer.Controller`.
        """
        _check_controller(controller)
        args = self.endpoint.bind(*(() if variables is None else (variables,)), **kwargs)
        self.endpoint.key(*args)  # variables json cannot encode: a ParamError now, not on the open socket
        return GQLEvents(self, controller, args)


async def _called(params: Callable[[], object]) -> object:
    """What the `connection_params` function gives (awaited when a coroutine); RestLayerError when it raises.

    Its own error would otherwise leave the subscription as is, not a RestLayerError like its other failures.
    """
    try:
        given = params()
        return await given if inspect.isawaitable(given) else given
    except Exception as exc:
        raise RestLayerError(
            f"subscription connection_params raised {type(exc).__name__}: {exc}; the subscription ended"
        ) from exc


def _checked_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """`headers` as a dict; ParamError unless names and values are text (else every handshake would fail)."""
    checked = text_headers(headers, "subscription headers")
    check_headers(checked, "subscription headers")  # what a handshake cannot carry: CR, LF, NUL, non-ASCII
    check_handshake_headers(checked, "subscription headers")  # its own (the protocol is graphql-transport-ws)
    return checked


def _checked_ws_url(url: object) -> str:
    """`url`; ParamError unless a `ws://` or `wss://` address naming a host. Else the first connect would fail
    as a transport error (status 500, taken for a server down) or a bare error, for the caller's mistake."""
    if not isinstance(url, str) or not _ws_address(url):
        raise ParamError(
            f"subscription ws_url must be a ws:// or wss:// address naming a host, not {url!r} "
            "(it follows from an http:// or https:// endpoint url; give ws_url= for any other)"
        )
    return url


def _ws_address(url: str) -> bool:
    """Whether `url` is a `ws://` or `wss://` address naming a host (and a port, if any, from 0 to 65535)."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # its ValueError: a port no socket has
    except ValueError:  # not a url at all (an unclosed IPv6 bracket, say), or a port that is no port
        return False
    return parts.scheme.lower() in ("ws", "wss") and bool(parts.netloc)


def _checked_params(params: object) -> dict[str, object]:
    """`params` as the `connection_init` payload; ParamError unless a mapping with str keys that JSON can encode."""
    if not isinstance(params, Mapping) or not all(isinstance(name, str) for name in params):
        raise ParamError(f"subscription connection_params must be a mapping with str keys, not {params!r}")
    payload = dict(params)
    try:
        json.dumps(payload, allow_nan=False)  # NaN or an infinity would go as `NaN`, which is no JSON
    except (TypeError, ValueError, RecursionError) as exc:
        raise ParamError(f"subscription connection_params cannot be sent as JSON: {exc}") from exc
    return payload


def _check_controller(controller: object) -> None:
    """ParamError unless `controller` is None or an (async) `restlayer.Controller`, whose store the events go to.

    A blocking `restlayer.sync.Controller` keeps its store in its own thread's loop: it cannot take them.
    """
    from restlayer.core import Controller

    if controller is not None and not isinstance(controller, Controller):
        raise ParamError(
            f"subscription events need a restlayer.Controller (async) or None, not {type(controller).__name__}"
        )


class GQLEvents(Generic[T_co]):
    """`async for data in events` (one task at a time); `aclose()` (or leaving `async with`) completes the subscription.

    A loop begun after `aclose()` raises ClosedError: a closed subscription is not an empty one (open a new `events()`).
    `connects` counts the connections opened so far (1 + the reconnects).
    """

    def __init__(
        self, subscription: GQLSubscription[T_co], controller: Controller | None, args: tuple[object, ...]
    ) -> None:
        self.subscription = subscription
        self.connects = 0
        #: Set when the controller closes, or by `aclose` to stop an iteration another task is in.
        self._wake = asyncio.Event()
        self._stopping = False
        self._inside = False  # an `anext` runs the generator now (it is not parked at a `yield`)
        self._closed = False  # `aclose` was called: no more iterating
        self._closer: asyncio.Future[None] | None = None  # the one close every `aclose` waits for
        self._ended = asyncio.Event()
        self._generator = self._run(controller, args)

    def __aiter__(self) -> AsyncIterator[T_co]:
        """These events, for a loop; ClosedError once `aclose` was called.

        A loop begun after the close would end at once, and look like a subscription that got no event
        rather than one the caller closed. A loop under way whose body calls `aclose` ends normally.
        """
        if self._closed:
            raise ClosedError(
                f"{self.subscription!r}: these events were closed (aclose, or the end of their `async with`); "
                "open a new `events()` to subscribe again"
            )
        return self

    async def __anext__(self) -> T_co:
        """The next event's data; RestLayerError while another task waits for one (one loop at a time)."""
        if self._inside:
            raise RestLayerError(
                f"{self.subscription!r}: another task iterates these events already; open one `events()` per consumer"
            )
        return await anext(self._generator)

    async def aclose(self) -> None:
        """Tell the server to stop and close the socket (or stop waiting to reconnect).

        When another task waits in `async for` meanwhile, its loop ends (normally) once that is done.
        Called again, or by several tasks at once, each waits for that one close (a generator closed
        twice at once raises a bare RuntimeError); a caller cancelled meanwhile leaves it to finish.
        """
        self._closed = True
        if self._closer is None:
            self._closer = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closer)

    async def _close(self) -> None:
        """Close the generator: at once when parked at a `yield`, else woken to end itself first."""
        if self._inside:  # a generator cannot be closed while it runs: wake it to end itself
            self._stopping = True
            self._wake.set()
            await self._ended.wait()
        await self._generator.aclose()

    async def __aenter__(self) -> GQLEvents[T_co]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _run(self, controller: Controller | None, args: tuple[object, ...]) -> AsyncGenerator[T_co, None]:
        """Connect and yield events; reconnect after a lost connection (the first connect is not retried).

        The controller closing ends it with ClosedError, whatever it waits for: the socket or the backoff.
        One generator, no inner one: a loop left early leaves only this one for the interpreter to finalize.
        """
        sub = self.subscription
        backoff = sub.backoff or _default_backoff()
        closing = self._wake
        forget = controller.on_close(closing) if controller is not None else None
        failures = 0
        self._inside = True
        try:
            while True:
                delivered = False
                try:
                    socket = await _unless_closed(closing, _open(sub))
                except TransportError as exc:
                    if self.connects == 0:
                        raise
                    lost: TransportError = exc
                else:
                    self.connects += 1
                    session = _Session(socket, sub, controller, args)
                    try:
                        while True:
                            data = await _unless_closed(closing, anext(session))
                            delivered = True
                            self._inside = False
                            yield data
                            self._inside = True
                    except StopAsyncIteration:
                        return
                    except _Lost as exc:
                        lost = exc
                    finally:
                        await session.close()
                failures = 1 if delivered else failures + 1
                if sub.retries is not None and failures > sub.retries:
                    raise TransportError(
                        f"{sub.ws_url}: gave up after {sub.retries} reconnects: {lost}", status=500
                    ) from lost
                wait = _reconnect_wait(backoff, failures)
                log.warning("GraphQL subscription %s: %s; reconnecting in %.2fs", sub.endpoint.name, lost, wait)
                await _unless_closed(closing, backoff.sleep(wait))
        except ClosedError:
            if not self._stopping:
                raise
            # stopped by `aclose` from another task: the iteration ends normally
        finally:
            if forget is not None:
                forget()
            self._inside = False
            self._ended.set()  # last: nothing awaited after it, so the generator has ended when `aclose` wakes


class _Lost(TransportError):
    """The subscription's connection was lost in a way a new connection may mend."""


def _default_backoff() -> ReconnectBackoff:
    try:
        from restlayer.streams import Backoff
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise RestLayerError(
            "GraphQL subscriptions need the 'streams' extra: pip install 'restlayer[streams]'"
        ) from exc
    return Backoff()


def _reconnect_wait(backoff: ReconnectBackoff, failures: int) -> float:
    """Seconds to wait before reconnect number `failures`: the backoff's delay, never less than the floor
    streams keep (`Backoff(initial=0)` or `cap=0` gives 0: a server dropping each connection at once
    would be hit in a tight loop). The streams extra is installed: a connection was opened already."""
    from restlayer.streams._stream import MIN_RECONNECT_WAIT

    return max(MIN_RECONNECT_WAIT, backoff.delay(failures))


async def _unless_closed(closing: asyncio.Event, step: Awaitable[T]) -> T:
    """`step`'s result; ClosedError (`step` cancelled) when `closing` is set first (its controller closed)."""
    if closing.is_set():
        if asyncio.iscoroutine(step):
            step.close()  # never started: nothing to cancel, no "never awaited" warning
        raise ClosedError("The controller was closed: the GraphQL subscription ended")
    task = asyncio.ensure_future(step)
    closed = asyncio.ensure_future(closing.wait())
    try:
        await asyncio.wait({task, closed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in (task, closed):
            if not waiting.done():
                waiting.cancel()
        await asyncio.wait({task, closed})  # both ended: nothing left running (nor a socket it opened unowned)
    if task.cancelled():  # only here: a cancellation of the caller propagated from the waits above
        raise ClosedError("The controller was closed: the GraphQL subscription ended")
    return task.result()  # what ended before the close stands (a socket opened is closed by its session)


async def _open(sub: GQLSubscription[object]) -> ClientConnection:
    """The subscription's socket, opened; TransportError when it cannot be, StatusError (not retried)
    when the handshake is refused with a client error (401, 403, 404...), RestLayerError (not retried)
    when the server speaks another protocol than graphql-transport-ws (see `_speaking`)."""
    try:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus, NegotiationError, WebSocketException

        from restlayer.streams._stream import refused
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise RestLayerError(
            "GraphQL subscriptions need the 'streams' extra: pip install 'restlayer[streams]'"
        ) from exc
    try:
        socket = await connect(
            sub.ws_url,
            subprotocols=[PROTOCOL],  # type: ignore[list-item]
            additional_headers=sub.headers,
            open_timeout=sub.open_timeout,
            max_size=sub.max_size,
        )
    except NegotiationError as exc:  # it chose a subprotocol not offered: before WebSocketException, not retried
        raise _other_protocol(sub.ws_url, str(exc)) from exc
    except InvalidStatus as exc:
        error = refused(sub.ws_url, exc.response.status_code)  # a client error: every reconnect would get it
        if error is not None:
            raise error from exc
        raise TransportError(f"{sub.ws_url}: cannot open the subscription socket: {exc}", status=500) from exc
    except (OSError, asyncio.TimeoutError, WebSocketException) as exc:
        raise TransportError(f"{sub.ws_url}: cannot open the subscription socket: {exc}", status=500) from exc
    return await _speaking(socket, sub.ws_url)


async def _speaking(socket: ClientConnection, url: str) -> ClientConnection:
    """`socket` when its server agreed to graphql-transport-ws; else it is closed and RestLayerError raised.

    A server choosing no subprotocol speaks another protocol (or none) than the one offered: its frames
    would be misread, or it would never acknowledge. Every reconnect would be answered the same,
    so the subscription ends rather than retry.
    """
    if socket.subprotocol == PROTOCOL:
        return socket
    await socket.close()
    raise _other_protocol(url, "it chose no subprotocol")


def _other_protocol(url: str, why: str) -> RestLayerError:
    """The error ending a subscription whose server does not speak graphql-transport-ws (`why` says how)."""
    return RestLayerError(
        f"{url}: the server does not speak {PROTOCOL} ({why}): the subscription ended, not reconnecting; "
        "point ws_url at a graphql-transport-ws endpoint"
    )


class _Session(Generic[T_co]):
    """One connection: init, subscribe, then each event's data; GraphQL errors raise GQLNetworkError, a lost
    connection `_Lost`. `close()` completes the operation (unless the server did) and closes the socket.

    A plain async iterator, not a generator: a loop left early leaves only `_run` for the interpreter to
    finalize, which closes this (two generators finalized at once would clash, and leave the socket open).
    """

    def __init__(
        self,
        socket: ClientConnection,
        sub: GQLSubscription[T_co],
        controller: Controller | None,
        args: tuple[object, ...],
    ) -> None:
        self.socket = socket
        self.sub = sub
        self.controller = controller
        self.args = args
        self.keepalive = socket.keepalive_task  # cancelled by the library on close, without waiting for it
        self.subscribed = False
        self.completed = False

    def __aiter__(self) -> _Session[T_co]:
        return self

    async def __anext__(self) -> T_co:
        from websockets.exceptions import ConnectionClosed, WebSocketException

        url = self.sub.ws_url
        try:
            if not self.subscribed:
                await self._subscribe()
            while True:
                data = await self._frame(_decode(await self.socket.recv(), url))
                if data is not None:
                    return data
        except ConnectionClosed as exc:
            from restlayer.streams._stream import frame_too_big
            from restlayer.streams._ws import started_close_code

            too_big = frame_too_big(url, started_close_code(exc), self.sub.max_size)
            if too_big is not None:
                raise too_big from exc
            code = None if exc.rcvd is None else exc.rcvd.code
            if reopens(code):
                raise _Lost(f"{url}: subscription socket lost: {exc}", status=500) from exc
            status = _refused_status(code)
            if status is not None:  # the server answered, refusing this client: as a handshake refused so
                raise StatusError(f"{url}: subscription socket failed: {exc}; refused", status=status) from exc
            raise TransportError(f"{url}: subscription socket failed: {exc}", status=500) from exc
        except WebSocketException as exc:
            raise TransportError(f"{url}: subscription socket failed: {exc}", status=500) from exc

    async def _subscribe(self) -> None:
        """Init the connection, wait for its acknowledgement, then subscribe the operation.

        Marked subscribed only then: an operation never subscribed is not completed on close either.
        """
        payload = await self.sub.init_payload()
        await self.socket.send(json.dumps({"type": "connection_init", "payload": payload}))
        await _acknowledged(self.socket, self.sub.ws_url, self.sub.open_timeout)
        self.subscribed = True
        variables = self.args[0] if self.args else {}
        operation = {"query": self.sub.endpoint.query_text(variables), "variables": variables}
        await self.socket.send(json.dumps({"id": _OP_ID, "type": "subscribe", "payload": operation}))

    async def _frame(self, message: Frame) -> T_co | None:
        """The data of one frame (None: a frame with nothing to yield); the server's end of it raises."""
        kind = message.get("type")
        if kind == "ping":
            await self.socket.send(json.dumps({"type": "pong"}))
        elif kind == "error" and message.get("id") == _OP_ID:
            self.completed = True
            errors = message.get("payload")
            raise GQLNetworkError(errors if isinstance(errors, list) else [errors])
        elif kind == "complete" and message.get("id") == _OP_ID:
            self.completed = True
            raise StopAsyncIteration
        elif kind == "next" and message.get("id") == _OP_ID:
            return _deliver(self.controller, self.sub.endpoint, self.args, message.get("payload"))
        return None

    async def close(self) -> None:
        """Complete the operation (unless the server did) and close the socket."""
        from websockets.exceptions import WebSocketException

        with contextlib.suppress(WebSocketException, OSError):
            if self.subscribed and not self.completed:
                await self.socket.send(json.dumps({"id": _OP_ID, "type": "complete"}))
        await self.socket.close()
        if self.keepalive is not None:
            await asyncio.wait({self.keepalive})


async def _acknowledged(socket: ClientConnection, url: str, timeout: float) -> None:
    """Wait at most `timeout` seconds for `connection_ack`; `_Lost` after that.

    A server that accepts the socket but never acknowledges (overloaded, restarting, or
    of another protocol) would hold the subscription forever; a new connection may do better.
    """
    try:
        await asyncio.wait_for(_expect_ack(socket, url), timeout)
    except asyncio.TimeoutError:
        raise _Lost(f"{url}: no connection_ack within {timeout}s", status=500) from None


async def _expect_ack(socket: ClientConnection, url: str) -> None:
    """Wait for `connection_ack`; a ping before it is answered and a pong skipped (allowed at any time)."""
    while True:
        message = _decode(await socket.recv(), url)
        kind = message.get("type")
        if kind == "connection_ack":
            return
        if kind == "ping":
            await socket.send(json.dumps({"type": "pong"}))
        elif kind != "pong":
            raise NetworkError(f"{url}: expected connection_ack, got {kind!r}", status=500)


def _decode(frame: str | bytes, url: str) -> Frame:
    try:
        message: object = json.loads(frame)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply to decode
        raise NetworkError(f"{url}: a subscription frame is not JSON: {exc}", status=500) from exc
    if not isinstance(message, dict):
        raise NetworkError(f"{url}: a subscription frame is not a JSON object", status=500)
    return message


def _deliver(
    controller: Controller | None, endpoint: GQLEndpoint[T_co], args: tuple[object, ...], payload: object
) -> T_co | None:
    """One `next` payload: errors raise; data is stored (when a controller is given) and returned.

    None when the store holds nothing for it (a later write deleted what it names).
    """
    if not isinstance(payload, dict):
        raise GQLNetworkError([{"message": "a subscription event has no payload object"}])
    errors = payload.get("errors")
    if errors:
        raise GQLNetworkError(errors if isinstance(errors, list) else [errors], data=payload.get("data"))
    if payload.get("data") is None:
        raise GQLNetworkError([{"message": "a subscription event has no data"}])
    data = endpoint.process(payload.get("data"), *args)
    if controller is not None and controller.closed:  # closed while the event was on its way: not stored
        raise ClosedError("The controller was closed: the GraphQL subscription ended")
    if controller is None:
        return cast("T_co", data)  # no store: the processed reply stands for the result
    controller.set_response(endpoint, *args, data)
    error = controller.get_error(endpoint, *args)
    if error is not None:
        raise error
    return controller.get_response(endpoint, *args).data
