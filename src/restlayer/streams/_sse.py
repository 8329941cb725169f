"""`SSEStream`: Server-Sent Events over httpx (parsed by httpx-sse), resumed with `Last-Event-ID`."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Final, cast

import httpx
from httpx_sse import EventSource, ServerSentEvent

from restlayer.errors import BodyTooLargeError, ClosedError, DecodeError, ParamError, RedirectError
from restlayer.rest import get_client
from restlayer.rest._client import carry_on_redirect, configured_names, hold, release
from restlayer.streams._stream import (
    DEFAULT_MAX_SIZE,
    Backoff,
    Covers,
    ServerStopped,
    Stream,
    check_url,
    checked_callable,
    decode_json,
    frame_size,
    refused,
    seconds,
)
from restlayer.streams._writes import Handler, Message, Target

__all__ = ["SSEStream"]

#: No read timeout: an event stream is quiet for as long as nothing changes.
DEFAULT_TIMEOUT = httpx.Timeout(10.0, read=None)
#: The shortest reconnection time a server's `retry:` may set, in ms: `retry: 0` (or a few ms)
#: from a server that then drops each connection must not make the client reconnect in a tight loop.
MIN_SERVER_RETRY_MS = 100
#: How an event stream is decoded, whatever charset its Content-Type names: UTF-8 (SSE standard: the server
#: has no choice, and the label may be wrong), one leading byte order mark dropped, bytes that are no UTF-8
#: replaced (`httpx` decodes its text with errors="replace").
SSE_ENCODING: Final = "utf-8-sig"
#: Headers the stream sets itself (an event stream, never cached), in lower case: one of `headers`
#: spelled otherwise would be sent as well, a second value for the server to pick from.
_SET_BY_SSE: Final = frozenset({"accept", "cache-control"})
#: The stream's protocol headers, in lower case: no credentials, so they go along a redirect to any origin.
_PROTOCOL_HEADERS: Final = _SET_BY_SSE | {"last-event-id"}
#: Headers that describe a request body, which the stream's GET never has: given, every connect fails.
_BODY_HEADERS: Final = frozenset({"content-length", "transfer-encoding"})


class SSEStream(Stream):
    """An `text/event-stream` at `url`: each event becomes a `Message(event, data, id)`.

    The stream is read as UTF-8, whatever charset its Content-Type names (SSE standard).
    `data` is decoded by `decode` (JSON by default); the event type is the SSE
    `event:` field (`"message"` when absent). After a reconnect the last seen id
    is sent as `Last-Event-ID` (one given in `headers` is the first
    `last_event_id`); an `id:` with no value forgets it. A `retry:` field sets
    the reconnection time (at least 100 ms). A reply with status 204 stops the
    stream; one with a client error (401, 403, 404...; not 408, 425 or 429) ends
    it with a StatusError, as reconnecting would get the same; so does a redirect
    the client does not follow, with a RedirectError (one it follows to another origin goes without `headers`
    and, on the shared client, without what `configure_client` sends); so does a successful reply that is no
    `text/event-stream` (the wrong url, a login page), with a DecodeError naming its type. `client`: the
    `httpx.AsyncClient` to use (default: restlayer's shared one; `url` may be
    relative to its `base_url`; once it is closed the stream ends with ClosedError);
    `timeout`: connect 10 s (also the most to wait for the reply's head), no read timeout.
    An event is held in memory until it ends: one over `max_size` characters (1 Mi; None: no
    limit), or a line that never ends growing past it, ends the stream with a BodyTooLargeError.
    A url that is not `http://` or `https://` raises ParamError. `Accept` and `Cache-Control` are the
    stream's own (`text/event-stream`, `no-store`): given in `headers`, in any spelling, they are not sent.
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
        decode: Callable[[str], object] = decode_json,
        client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        max_size: int | None = DEFAULT_MAX_SIZE,
    ) -> None:
        super().__init__(url, on=on, name=name, backoff=backoff, headers=headers, covers=covers)
        _check_client(client)
        _check_no_body_headers(self.headers)
        check_url(url, ("http", "https"), relative=client is not None and bool(str(client.base_url)))
        checked_callable("decode=", decode)
        self.last_event_id = _take_last_event_id(self.headers)
        self.decode = decode
        self.client = client
        self.timeout = _timeout(timeout)
        self.max_size = frame_size(max_size, unit="characters")  # an event is counted as text (see `_Bounded`)

    async def _messages(self) -> AsyncGenerator[Message | None, None]:
        if self.client is not None:
            if self.client.is_closed:  # it sends nothing any more: every reconnect would fail the same way
                raise ClosedError(f"stream {self.url}: its client= is closed; give the stream an open one")
            async for message in self._read(self.client):
                yield message
            return
        client = get_client()
        hold(client)  # a controller closing the shared client lets this stream run on until it ends
        try:
            async for message in self._read(client):
                yield message
        finally:
            await release(client)

    async def _read(self, client: httpx.AsyncClient) -> AsyncGenerator[Message | None, None]:
        # The stream sets its own `Accept` and `Cache-Control`: one given in another spelling would go too
        headers: dict[str, str | bytes] = {
            name: value for name, value in self.headers.items() if name.lower() not in _SET_BY_SSE
        }
        if self.last_event_id:
            # The id seen replaces one given in `headers` (in any spelling: header names ignore case).
            headers = {name: value for name, value in headers.items() if name.lower() != "last-event-id"}
            # UTF-8 bytes, as browsers send it: a header given as text must be ASCII, so an id of other
            # characters would fail every reconnect
            headers["Last-Event-ID"] = self.last_event_id.encode()
        headers["Accept"] = "text/event-stream"
        headers["Cache-Control"] = "no-store"
        async with contextlib.AsyncExitStack() as stack:
            response = await self._answered(stack, self._connect(client, headers))
            if response.status_code == 204:
                raise ServerStopped(f"{self.url} answered 204 No Content")
            if response.is_redirect or 300 <= response.status_code < 400:
                raise _not_followed(self.url, response)
            if not response.is_success:
                error = refused(self.url, response.status_code)
                if error is not None:
                    raise error
                raise httpx.HTTPStatusError(
                    f"{self.url} answered {response.status_code}", request=response.request, response=response
                )
            _check_event_stream(self.url, response)  # a reply of another kind is no connection: it ends the stream
            response.encoding = SSE_ENCODING
            await self._opened()
            # The parser starts each connection with no last event id: seeded with the stream's (as browsers
            # do), an event's id is empty only after an `id:` with no value, a reset, even before any other id
            reply = _Bounded(response, self.max_size, self.url, seed=self.last_event_id)
            async for sse in EventSource(cast(httpx.Response, reply)).aiter_sse():
                if not sse.id:
                    self._forget_event_id()
                yield self._message(sse)

    @contextlib.asynccontextmanager
    async def _connect(
        self, client: httpx.AsyncClient, headers: dict[str, str | bytes]
    ) -> AsyncIterator[httpx.Response]:
        """The reply to the stream's GET (its body still to read), closed on exit; redirects followed as the
        client's `follow_redirects` allows, by hand so that none takes the stream's credentials to another origin."""
        build: Callable[..., httpx.Request] = client.build_request  # header values are text or UTF-8 bytes
        request = build("GET", self.url, headers=headers, timeout=self.timeout)
        response = await self._follow(client, request)
        try:
            yield response
        finally:
            await response.aclose()

    async def _follow(self, client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
        """Send `request`, then each redirect `client` follows (at most its `max_redirects`); the last reply.

        The stream's own headers, and on the shared client what `configure_client` sends (headers,
        cookies), are for its API: the rule endpoints follow drops them once a hop leaves the origin,
        where httpx would drop only Authorization. The protocol headers go along to every hop.
        """
        own_names = {name.lower() for name in self.headers}
        if self.client is None:
            own_names |= configured_names(client)
        own_names -= _PROTOCOL_HEADERS
        response = await client.send(request, stream=True, follow_redirects=False)
        left_origin = False
        try:
            for _ in range(client.max_redirects):
                next_request = response.next_request
                if not client.follow_redirects or next_request is None:
                    return response
                await response.aclose()
                left_origin = carry_on_redirect(request, next_request, own_names, left_origin)
                request = next_request
                response = await client.send(request, stream=True, follow_redirects=False)
            if client.follow_redirects and response.next_request is not None:
                # A loop (or too long a chain) is sent again at each reconnect: it ends the stream, not retried
                raise RedirectError(
                    f"stream {self.url}: more than {client.max_redirects} redirects (the last to "
                    f"{response.next_request.url}): use the final url, or a client with a higher max_redirects",
                    status=response.status_code,
                    location=str(response.next_request.url),
                    response=response,
                )
            return response
        except BaseException:
            await response.aclose()
            raise

    async def _answered(
        self, stack: contextlib.AsyncExitStack, connecting: AbstractAsyncContextManager[httpx.Response]
    ) -> httpx.Response:
        """`connecting` entered on `stack` once the reply's head arrived: within the connect timeout (if any).

        The read timeout is off for a stream that is quiet while nothing changes, so without this a
        server accepting the request but never answering would hold the stream unconnected forever.
        Entered in this task (Python 3.11+), so a reply arriving as time runs out is still closed by `stack`.
        """
        limit = self.timeout.connect
        try:
            if limit is None:  # no connect timeout asked for: no limit either
                return await stack.enter_async_context(connecting)
            if sys.version_info >= (3, 11):
                async with asyncio.timeout(limit):
                    return await stack.enter_async_context(connecting)
            return await asyncio.wait_for(stack.enter_async_context(connecting), limit)
        except asyncio.TimeoutError:
            raise httpx.ConnectTimeout(f"{self.url}: no reply within {limit}s") from None

    def _forget_event_id(self) -> None:
        """The server reset the last event id (SSE standard): the next reconnect sends no `Last-Event-ID`."""
        if self.last_event_id is not None:
            self.last_event_id = None
            self._tick()

    def _message(self, sse: ServerSentEvent) -> Message | None:
        """The Message of one event; None for a `retry:`-only frame or undecodable data (logged)."""
        if sse.retry is not None:
            self.server_retry = max(sse.retry, MIN_SERVER_RETRY_MS) / 1000
        event_id = sse.id or None
        event = sse.event or "message"
        if not sse.data:  # not dispatched (SSE spec): a `retry:` or `id:` only frame
            if event_id is not None:
                self.last_event_id = event_id
                self._tick()  # `until` waiters may wait for this id
            return None
        try:
            data = self.decode(sse.data)
        except Exception as exc:
            self.malformed(event, event_id, f"{type(exc).__name__}: {exc}")
            return None
        return Message(event, data, event_id)


class _Bounded:
    """The reply as `EventSource` reads it (its headers and text), refusing an event over `max_size` characters
    (None: no limit), after an `id: <seed>` line of its own when `seed` is given.

    The SSE parser holds an event (and a line) until its end: a server sending one without end would
    grow memory without bound. Events end at a blank line (two line ends: CR LF, LF or CR); the text
    since the last one is counted as it arrives, so a line that never ends is refused too.

    The seed line (not counted) gives the parser the stream's last event id, which it would otherwise start
    without: then an event's id is empty only when the server reset it. The id holds no line end nor NUL
    (the parser drops an id with NUL; a `Last-Event-ID` header with them is refused), so it stays one line.
    """

    def __init__(self, response: httpx.Response, max_size: int | None, url: str, seed: str | None = None) -> None:
        self.response = response
        self.headers = _media_type_lowered(response.headers)
        self.max_size = max_size
        self.url = url
        self.seed = seed
        #: Characters of the event under way (since the last blank line).
        self.pending = 0
        #: The last character of the previous chunk when a line end (a CR may be half of a CR LF).
        self.tail = ""

    async def aiter_text(self) -> AsyncIterator[str]:
        if self.seed:
            yield f"id: {self.seed}\n"
        async for text in self.response.aiter_text():
            self._count(text)
            yield text

    async def aiter_lines(self) -> AsyncIterator[str]:  # what httpx-sse 0.4.0 reads
        if self.seed:
            yield f"id: {self.seed}"
        async for line in self.response.aiter_lines():
            self.pending = 0 if not line else self.pending + len(line) + 1
            self._check(self.pending)
            yield line

    def _count(self, text: str) -> None:
        """Count `text` into the event under way; BodyTooLargeError when an event in it is over the limit."""
        if not text or self.max_size is None:
            return
        joined = (self.tail + text).replace("\r\n", "\n").replace("\r", "\n")
        events = joined.split("\n\n")  # the last one is under way
        self._check(self.pending + len(events[0]))
        for event in events[1:-1]:
            self._check(len(event))
        self.pending = len(events[-1]) if len(events) > 1 else self.pending + len(text)
        self._check(self.pending)
        self.tail = text[-1] if text[-1] in "\r\n" else ""

    def _check(self, size: int) -> None:
        if self.max_size is not None and size > self.max_size:
            raise BodyTooLargeError(
                f"{self.url}: an event exceeds max_size={self.max_size} characters; not reconnecting: "
                "raise max_size (None: no limit)",
                status=400,
            )


def _media_type_lowered(headers: httpx.Headers) -> httpx.Headers:
    """A copy of `headers` whose Content-Type is in lower case: media types ignore case, and httpx-sse
    refuses a `Text/Event-Stream` (which every reconnect would get again)."""
    lowered = httpx.Headers(headers)
    if "content-type" in lowered:
        lowered["content-type"] = lowered["content-type"].lower()
    return lowered


def _check_client(client: object) -> None:
    """ParamError unless `client` is None or an `httpx.AsyncClient`: a blocking `httpx.Client` cannot stream
    here (every connect would fail, retried forever, only in the log), anything else has no `base_url`."""
    if client is not None and not isinstance(client, httpx.AsyncClient):
        raise ParamError(f"client= must be an httpx.AsyncClient or None, not {client!r}")


def _not_followed(url: str, response: httpx.Response) -> RedirectError:
    """The error ending a stream whose reply is a redirect its client did not follow.

    Every reconnect would be sent the same redirect, so retrying would loop forever;
    restlayer's shared client follows redirects, a client of one's own must be asked to.
    """
    target = response.headers.get("location")
    location = str(response.url.join(target)) if target else ""
    return RedirectError(
        f"stream {url} answered {response.status_code} (to {location or 'no location'}), a redirect its client "
        "does not follow: use the final url, or a client with follow_redirects=True",
        status=response.status_code,
        location=location,
        response=response,
    )


def _check_no_body_headers(headers: Mapping[str, str]) -> None:
    """ParamError when `headers` describe a body: the stream asks with a bodiless GET, so HTTP could send none."""
    for name in headers:
        if name.lower() in _BODY_HEADERS:
            raise ParamError(f"headers=: {name!r} describes a request body, and an event stream's GET has none")


def _take_last_event_id(headers: dict[str, str]) -> str | None:
    """Remove a `Last-Event-ID` (any spelling) from `headers`; its value, the id to resume after at first.

    It starts as the last event id seen, so that it is what an `id:` with no value forgets (SSE standard).
    """
    taken = None
    for name in [name for name in headers if name.lower() == "last-event-id"]:
        taken = headers.pop(name) or None
    return taken


def _timeout(value: object) -> httpx.Timeout:
    """`timeout=` as an `httpx.Timeout` (seconds apply to each phase, as in httpx); ParamError otherwise."""
    if isinstance(value, httpx.Timeout):
        timeout = value
    else:
        timeout = httpx.Timeout(seconds("timeout=", value))
    for phase in ("connect", "read", "write", "pool"):
        seconds(f"timeout= ({phase})", getattr(timeout, phase))
    return timeout


def _check_event_stream(url: str, response: httpx.Response) -> None:
    """DecodeError (ending the stream) unless the reply is a `text/event-stream`, in any case (as httpx-sse
    checks when reading it, though in lower case only: `_Bounded` shows it the type lowered).

    A successful reply of another kind (a login page, a JSON resource: the wrong url, or credentials
    gone) is answered again to every reconnect, so it is not retried: the HTML standard's EventSource
    fails such a connection for good too.
    """
    content_type = response.headers.get("content-type", "").partition(";")[0]
    if "text/event-stream" not in content_type.lower():
        raise DecodeError(
            f"stream {url} answered {response.status_code} with Content-Type {content_type or 'none'!r}, "
            "not text/event-stream (the wrong url, or a login page?): not reconnecting",
            status=400,
        )
